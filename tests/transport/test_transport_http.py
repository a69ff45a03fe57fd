"""Streamable HTTP and SSE transports against the SDK's reference server on 127.0.0.1.

No HTTP→SSE fallback (R-CFG-2): an http entry pointed at an SSE endpoint fails.
"""

from __future__ import annotations

import pytest
import trio

from wave_actors import DialError, ServerConfig, ServerUnavailable, Source
from wave_actors._transport import TransportOptions, open_connection
from wave_actors.testing import serve_reference_server


def remote(kind: str, url: str) -> ServerConfig:
    return ServerConfig(name=f"ref-{kind}", source=Source.CONSTRUCTOR, origin="constructor", type=kind, url=url)


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_remote_transport_lists_and_calls(kind: str) -> None:
    served = "sse" if kind == "sse" else "streamable-http"
    async with serve_reference_server(served) as url:
        with trio.fail_after(20):
            async with open_connection(remote(kind, url)) as connection:
                assert connection.pid is None
                names = {tool.name for tool in (await connection.list_tools()).tools}
                assert "echo" in names
                result = await connection.call_tool("echo", {"text": kind}, timeout=10)
                assert kind in result.content[0].text  # type: ignore[union-attr]


async def test_http_entry_never_falls_back_to_sse() -> None:
    async with serve_reference_server("sse") as url:
        with pytest.raises(DialError, match="ref-http"), trio.fail_after(20):
            async with open_connection(remote("http", url)):
                pass


async def test_nothing_listening_is_a_dial_error() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DialError, match="ref-http"), trio.fail_after(20):
        async with open_connection(remote("http", f"http://127.0.0.1:{port}/mcp")):
            pass


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_killed_server_is_detected_as_lost(kind: str) -> None:
    # R-RACE-4: an HTTP/SSE drop sends no EOF; the heartbeat notices it.
    served = "sse" if kind == "sse" else "streamable-http"
    options = TransportOptions(ping_interval=0.2, ping_timeout=1.0)
    server_scope = trio.CancelScope()

    async def run_server(task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        with server_scope:
            async with serve_reference_server(served) as url:
                task_status.started(url)
                await trio.sleep_forever()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(run_server)
            # Either the heartbeat reports the loss, or the SDK's transport
            # fails out of the block: both surface as ServerUnavailable.
            with pytest.raises(ServerUnavailable, match=f"ref-{kind}"):
                async with open_connection(remote(kind, url), options=options) as connection:
                    await connection.call_tool("echo", {"text": "up"}, timeout=10)
                    server_scope.cancel()
                    assert await connection.wait_lost()
                    await connection.call_tool("echo", {"text": "down"}, timeout=5)
