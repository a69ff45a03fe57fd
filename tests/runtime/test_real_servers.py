"""What hosts see of real servers through the public API: remote sessions ended on every close but a loss,
big results, named refusals, identity, progress, reconnect and refresh, and the errors of calls to servers
that are down (R-KILL-8, R-TOOL-1, R-TOOL-6, R-TOOL-10, R-DIAL-5, R-RACE-6, R-RACE-7)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from presets import FAST_SESSION
from runtime_support import failing_after_marker_entry
from session_support import connected_session, idle_session

from wave_actors import (
    DialError,
    Host,
    LoginRequired,
    ServerDisabled,
    ServerState,
    ServerUnavailable,
    Session,
    UnknownTool,
    open_session,
)
from wave_actors.testing import fault_server_entry, is_alive, serve_reference_server

# Importing mcp.server and uvicorn takes over a second; leave room on a busy machine.
pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024
Update = tuple[float, float | None, str | None]


async def server_sessions(url: str) -> dict[str, list[str]]:
    """The streamable HTTP reference server's own record: sessions opened, and ended by a client's DELETE."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(url.rsplit("/", 1)[0] + "/wave-actors/sessions")
        sessions: dict[str, list[str]] = response.json()
        return sessions


def text_of(result: Any) -> str:
    text: str = result.content[0].text
    return text


def tool_named(session: Session, server: str, tool: str) -> str:
    [name] = [info.name for info in session.server(server).tools if info.tool == tool]
    return name


# R-KILL-8: every close that is not a loss ends the server-side session.


async def test_every_close_but_a_loss_ends_the_server_session(tmp_path: Path) -> None:
    async with serve_reference_server() as url:
        entry = {"type": "http", "url": url}
        with trio.fail_after(60):
            async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
                session = await host.create_session(tmp_path, {"ref": entry})
                await session.connect("ref")
                assert len((await server_sessions(url))["opened"]) == 1

                await session.disconnect("ref")  # a manual disconnect
                assert (await server_sessions(url))["ended_by_client"] == (await server_sessions(url))["opened"]

                await session.connect("ref")
                await session.reconnect("ref")  # a reconnect closes the old generation
                sessions = await server_sessions(url)
                assert (len(sessions["opened"]), len(sessions["ended_by_client"])) == (3, 2)

                # A reconfigure that changes the entry (a header: another fingerprint) reloads it in place.
                await session.reconfigure({"ref": {**entry, "headers": {"X-Team": "tools"}}})
                await session.connect("ref")
                sessions = await server_sessions(url)
                assert (len(sessions["opened"]), len(sessions["ended_by_client"])) == (4, 3)

                await host.destroy_session(session.id)  # a destroy
                sessions = await server_sessions(url)
                assert sessions["ended_by_client"] == sessions["opened"]

                last = await host.create_session(tmp_path, {"ref": entry})
                await last.connect("ref")
            # Leaving the host with the session open.
            sessions = await server_sessions(url)
            assert len(sessions["opened"]) == 5 and sorted(sessions["ended_by_client"]) == sorted(sessions["opened"])


# R-TOOL-6: results as large as over stdio arrive over http and sse.


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_result_of_several_mib_arrives_through_the_session(tmp_path: Path, kind: str) -> None:
    async with serve_reference_server("sse" if kind == "sse" else "streamable-http") as url:
        with trio.fail_after(60):
            async with connected_session(tmp_path, {"ref": {"type": kind, "url": url}}) as session:
                result = await session.call_tool(tool_named(session, "ref", "big"), {"size": 8 * MIB})
                assert len(text_of(result)) == 8 * MIB


# Refusals name the HTTP status, and for credentials the file the entry comes from.


@contextmanager
def refusing_server(status: int) -> Generator[str, None, None]:
    class Refuse(http.server.BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _refuse

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_401_names_the_status_the_credentials_and_the_entrys_file(tmp_path: Path, kind: str) -> None:
    # An entry that sends its own Authorization header manages its credentials: a 401 refuses them (R-AUTH-4).
    with refusing_server(401) as url:
        project = tmp_path / ".mcp.json"
        entry = {"type": kind, "url": url, "headers": {"Authorization": "Bearer of-the-entry"}}
        project.write_text(json.dumps({"mcpServers": {"remote": entry}}))
        async with idle_session(tmp_path, {}) as session:
            with pytest.raises(DialError) as raised, trio.fail_after(20):
                await session.connect("remote")
            status = session.server("remote")
    message = str(raised.value)
    assert "the server answered HTTP 401 Unauthorized" in message
    assert f"refused the credentials or headers sent; check the entry's headers in {project}" in message
    assert status.state is ServerState.ERROR and status.error == message


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_401_to_an_entry_without_credentials_of_its_own_asks_for_a_login(tmp_path: Path, kind: str) -> None:
    # R-AUTH-2: a bare 401 is the server asking for OAuth; the server waits for a login, not dialed again.
    with refusing_server(401) as url:
        async with idle_session(tmp_path, {"remote": {"type": kind, "url": url}}) as session:
            with pytest.raises(LoginRequired, match="needs a login") as raised, trio.fail_after(20):
                await session.connect("remote")
            status = session.server("remote")
    assert raised.value.server == "remote"
    assert status.state is ServerState.NEEDS_LOGIN


# Identity: servers are told who the client is.


async def test_servers_are_told_wave_actors_and_its_version_unless_the_host_names_itself(tmp_path: Path) -> None:
    async with serve_reference_server() as url:
        entry = {"ref": {"type": "http", "url": url}}
        with trio.fail_after(60):
            async with connected_session(tmp_path, entry) as session:
                assert (
                    text_of(await session.call_tool(tool_named(session, "ref", "client_info"))) == "wave-actors 0.1.0"
                )
            async with open_session(
                workdir=tmp_path,
                home=tmp_path / "home",
                mcp_servers=entry,
                options=FAST_SESSION,
                client_info=("my-host", "3.1"),
            ) as session:
                await session.prepare_turn()
                assert text_of(await session.call_tool(tool_named(session, "ref", "client_info"))) == "my-host 3.1"
            async with Host.open(home=tmp_path / "home", options=FAST_SESSION, client_info=("desk", "0.9")) as host:
                session = await host.create_session(tmp_path, entry)
                await session.prepare_turn()
                assert text_of(await session.call_tool(tool_named(session, "ref", "client_info"))) == "desk 0.9"


async def test_a_client_info_that_is_not_a_name_and_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="client_info"):
        async with Host.open(home=tmp_path / "home", client_info=("desk",)):  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
            pass


# R-TOOL-10: progress reaches the call that asked, directly or through mcp_call.


async def test_progress_reaches_the_caller_directly_and_through_mcp_call(tmp_path: Path) -> None:
    direct: list[Update] = []
    gateway: list[Update] = []

    def into(updates: list[Update]) -> Any:
        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        return on_progress

    async with connected_session(tmp_path, {"f": fault_server_entry(progress_tool=True)}) as session:
        result = await session.call_tool("mcp__f__progress", {"steps": 3}, on_progress=into(direct))
        assert text_of(result) == "3 steps"
        request = {"server": "f", "tool": "progress", "arguments": {"steps": 2}}
        assert text_of(await session.call_tool("mcp_call", request, on_progress=into(gateway))) == "2 steps"
        # A caller that does not ask gets its result as before.
        assert text_of(await session.call_tool("mcp__f__progress", {"steps": 2})) == "2 steps"
        with pytest.raises(TypeError, match="on_progress"):
            await session.call_tool("mcp__f__progress", {"steps": 1}, on_progress="not callable")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert direct == [(1.0, 3.0, "step 1 of 3"), (2.0, 3.0, "step 2 of 3"), (3.0, 3.0, "step 3 of 3")]
    assert gateway == [(1.0, 2.0, "step 1 of 2"), (2.0, 2.0, "step 2 of 2")]


# R-TOOL-6: a tool the session knew whose server is down is unavailable; a name never known is unknown.


async def test_a_known_tool_of_a_server_that_is_down_is_unavailable(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        assert text_of(await session.call_tool("mcp__f__echo", {"text": "up"})) == "up"
        await session.disconnect("f")
        with pytest.raises(ServerUnavailable, match="'f' was disconnected; connect it explicitly"):
            await session.call_tool("mcp__f__echo", {"text": "down"})
        with pytest.raises(UnknownTool, match="mcp__f__nothing"):
            await session.call_tool("mcp__f__nothing", {})
        with pytest.raises(UnknownTool):
            await session.call_tool("mcp__elsewhere__echo", {})


async def test_a_cached_tool_of_a_server_not_dialed_yet_is_unknown_and_says_how_to_dial_it(tmp_path: Path) -> None:
    # R-CACHE-2: the cache shows the tool with the name it will have live, but cached tools are never callable.
    servers = {"f": fault_server_entry()}
    async with connected_session(tmp_path, servers):
        pass
    async with idle_session(tmp_path, servers) as session:
        status = session.server("f")
        assert status.tools_cached and "mcp__f__echo" in [tool.name for tool in status.tools]
        with pytest.raises(UnknownTool, match=r"only the tool snapshot cache lists 'echo'.*prepare_turn"):
            await session.call_tool("mcp__f__echo", {"text": "not yet"})
        await session.prepare_turn()
        assert text_of(await session.call_tool("mcp__f__echo", {"text": "now"})) == "now"


# Reconnect: a new generation now, never two transports, not a manual disconnect.


async def server_pid(session: Session) -> int:
    return int(json.loads(text_of(await session.call_tool("mcp__f__pid", {})))["pid"])


async def test_reconnect_rebuilds_the_connection_as_a_new_generation(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        before = session.server("f")
        first = await server_pid(session)
        status = await session.reconnect("f")
        assert status.state is ServerState.CONNECTED and status.generation > before.generation
        assert not status.manually_disconnected
        assert not is_alive(first)  # the old server was reclaimed before the new one started
        second = await server_pid(session)
        assert second != first and is_alive(second)
        # Not a manual disconnect: a crash of the new connection is reconnected as usual (R-RACE-4).
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 3})
        with trio.fail_after(20):
            await session.wait_for(
                lambda s: s.server("f").state is ServerState.CONNECTED and s.server("f").generation > status.generation
            )


async def test_reconnect_dials_a_disconnected_server_and_refuses_a_disabled_one(tmp_path: Path) -> None:
    servers = {"f": fault_server_entry(), "off": {**fault_server_entry(), "enabled": False}}
    async with connected_session(tmp_path, servers) as session:
        await session.disconnect("f")
        status = await session.reconnect("f")
        assert status.state is ServerState.CONNECTED and not status.manually_disconnected
        with pytest.raises(ServerDisabled, match="'off' is disabled"):
            await session.reconnect("off")


async def test_a_reconnect_that_fails_leaves_the_server_in_error_with_nothing_listed(tmp_path: Path) -> None:
    # R-DIAL-4: the new dial's failure is final, as a connect's would be.
    marker = tmp_path / "closed"
    async with connected_session(tmp_path, {"f": failing_after_marker_entry(tmp_path, marker)}) as session:
        assert session.server("f").tools
        marker.touch()  # from now on the server exits at once
        with pytest.raises(DialError, match="gate closed"):
            await session.reconnect("f")
        status = session.server("f")
        assert status.state is ServerState.ERROR and status.tools == ()


# Refresh: the tools listed again on the same connection.


async def test_refresh_tools_lists_again_on_the_same_connection(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry(silent_list_changes=True)}) as session:
        before = session.server("f")
        pid = await server_pid(session)
        await session.call_tool("mcp__f__notify_list_changed", {"add_tool": "fresh"})
        assert "fresh" not in [tool.tool for tool in session.server("f").tools]  # the server said nothing
        status = await session.refresh_tools("f")
        assert "fresh" in [tool.tool for tool in status.tools]
        assert status.generation == before.generation and await server_pid(session) == pid
        assert text_of(await session.call_tool("mcp__f__fresh", {"text": "hi"})) == "fresh: hi"
        await session.disconnect("f")
        with pytest.raises(ServerUnavailable, match="was disconnected"):
            await session.refresh_tools("f")
