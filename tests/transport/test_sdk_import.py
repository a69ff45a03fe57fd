"""The SDK import: started by Host.open in a thread of its own, and only what a dial needs.

Each test runs a script in a fresh interpreter: this one imported the whole
SDK at start-up (tests/conftest.py), which would hide every difference.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import trio

from wave_actors.testing import serve_reference_server

# The HTTP client stack: what a host with only stdio servers must never import.
_PRELUDE = """
import sys, tempfile, threading
from pathlib import Path

import trio

from wave_actors import Host, ServerState, open_session
from wave_actors._config import TransportType
from wave_actors._transport import sdk_import
from wave_actors.testing import fault_server_entry

HTTP_CLIENT = ("httpx", "httpx2", "httpcore", "httpcore2", "starlette", "sse_starlette", "uvicorn")
HTTP_MODULES = ("mcp.client.streamable_http", "mcp.client.sse", "mcp.shared._httpx_utils")


def http_client_modules():
    return sorted(m for m in sys.modules if m.split(".")[0] in HTTP_CLIENT or m in HTTP_MODULES)


async def preload_done():
    assert await trio.to_thread.run_sync(sdk_import.preloaded.wait, 30), "the preload never finished"


assert "mcp" not in sys.modules and "mcp_types" not in sys.modules, "the SDK was imported before the test"
home = Path(tempfile.mkdtemp())
"""

# A finder that holds the import of mcp_types (the bulk of the SDK) until released.
_HOLD_THE_IMPORT = """
reached, release = threading.Event(), threading.Event()
searches = []


class Hold:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp_types":
            searches.append(threading.current_thread().name)
            reached.set()
            assert release.wait(30), "never released"
        return None


sys.meta_path.insert(0, Hold())
"""


def _run(script: str, *, hold: bool = False, timeout: float = 60.0) -> str:
    source = _PRELUDE + (_HOLD_THE_IMPORT if hold else "") + textwrap.dedent(script)
    completed = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_host_open_imports_what_a_dial_needs_before_any_dial() -> None:
    _run("""
        async def main():
            async with Host.open(home=home, watchdog=False) as host:
                await preload_done()
                assert not host.sessions()
                missing = [m for m in sdk_import.DIAL_MODULES[TransportType.STDIO] if m not in sys.modules]
                assert not missing, missing
                assert http_client_modules() == [], http_client_modules()
                assert "mcp.server" not in sys.modules

        trio.run(main)
    """)


def test_open_session_imports_what_a_dial_needs_before_any_dial() -> None:
    _run("""
        async def main():
            async with open_session(workdir=home, home=home) as session:
                await preload_done()
                assert session.servers() == []
                assert "mcp.client.session" in sys.modules

        trio.run(main)
    """)


def test_a_stdio_only_host_never_imports_the_http_client() -> None:
    _run("""
        async def main():
            async with Host.open(home=home, watchdog=False) as host:
                session = await host.create_session(home, {"a": fault_server_entry()})
                await session.prepare_turn()
                assert session.server("a").state is ServerState.CONNECTED, session.server("a").error
                result = await session.call_tool("mcp__a__echo", {"text": "hi"})
                assert not result.is_error, result

        trio.run(main)
        assert http_client_modules() == [], http_client_modules()
        assert "mcp.server" not in sys.modules

        # The package the dial left half-imported completes on first use, for the host's own code.
        import mcp
        from mcp.client import Client
        from mcp.client.session import ClientSession

        assert mcp.ClientSession is ClientSession and mcp.Client is Client
        assert "mcp.client.streamable_http" in sys.modules  # the whole SDK, as `import mcp` always gives
    """)


def test_a_dial_during_the_preload_waits_for_the_rest_of_it() -> None:
    _run(
        """
        async def main():
            async with Host.open(home=home, watchdog=False) as host:
                assert await trio.to_thread.run_sync(reached.wait, 30)  # the preload is importing
                session = await host.create_session(home, {"a": fault_server_entry()})
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(session.prepare_turn)
                    await session.wait_for(lambda snapshot: snapshot.server("a").state is ServerState.CONNECTING)
                    release.set()
                assert session.server("a").state is ServerState.CONNECTED, session.server("a").error
            assert searches == ["wave-actors SDK import"], searches  # imported once, by the preload

        trio.run(main)
        """,
        hold=True,
    )


def test_a_host_closed_during_the_preload_does_not_wait_for_it() -> None:
    _run(
        """
        async def main():
            async with Host.open(home=home, watchdog=False):
                assert await trio.to_thread.run_sync(reached.wait, 30)
            assert not sdk_import.preloaded.is_set()  # closed while the import was held
            release.set()
            await preload_done()
            async with Host.open(home=home, watchdog=False) as host:  # the next host dials as usual
                session = await host.create_session(home, {"a": fault_server_entry()})
                await session.prepare_turn()
                assert session.server("a").state is ServerState.CONNECTED, session.server("a").error

        trio.run(main)
        """,
        hold=True,
    )


def test_a_process_may_exit_while_the_preload_is_still_importing() -> None:
    # The thread is a daemon: the interpreter exits without waiting for the import it holds.
    _run(
        """
        async def main():
            async with Host.open(home=home, watchdog=False):
                assert await trio.to_thread.run_sync(reached.wait, 30)

        trio.run(main)
        """,
        hold=True,
    )


async def test_http_and_sse_entries_dial_after_a_stdio_dial_imported_part_of_the_sdk() -> None:
    async with serve_reference_server("streamable-http") as http_url, serve_reference_server("sse") as sse_url:
        script = f"""
            async def main():
                async with Host.open(home=home, watchdog=False) as host:
                    entries = {{
                        "local": fault_server_entry(),
                        "web": {{"type": "http", "url": {http_url!r}}},
                        "events": {{"type": "sse", "url": {sse_url!r}}},
                    }}
                    session = await host.create_session(home, {{"local": entries["local"]}})
                    await session.prepare_turn()
                    assert http_client_modules() == [], http_client_modules()
                    remote = await host.create_session(home, entries)
                    await remote.prepare_turn()
                    for name in entries:
                        assert remote.server(name).state is ServerState.CONNECTED, remote.server(name).error
                    for name in ("web", "events"):
                        result = await remote.call_tool(f"mcp__{{name}}__echo", {{"text": name}})
                        assert not result.is_error, result

            trio.run(main)
        """
        source = _PRELUDE + textwrap.dedent(script)
        completed = await trio.run_process([sys.executable, "-c", source], capture_stderr=True, check=False)
        assert completed.returncode == 0, completed.stderr.decode(errors="replace")
