"""What sessions do with the tool snapshot cache: write on connect and refresh, show for servers not connected
(R-CACHE-1..4), never declare or call a cached tool (R-TOOL-3), never wait for the disk."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import trio
from presets import FAST_SESSION
from session_support import connected_session, idle_session

from wave_actors import Host, LoadMode, ServerState, UnknownTool, load_config, open_session
from wave_actors._cache import cache_directory, file as cache_file
from wave_actors._cache.file import entry_path
from wave_actors.testing import fault_server_entry, watch_stalls


def cached_entries(home: Path) -> list[dict[str, object]]:
    """Every snapshot in the cache of ``home``, whatever its workdir."""
    return [json.loads(path.read_text()) for path in sorted(cache_directory(home).rglob("*.json"))]


async def test_a_new_session_shows_the_tools_of_the_last_connect_marked_cached(tmp_path: Path) -> None:
    # R-CACHE-1, R-CACHE-2: written after the connect, shown while the server stays disconnected.
    servers = {"echo": fault_server_entry(tools=2, read_only=["echo"])}
    async with connected_session(tmp_path, servers) as first:
        live = first.server("echo")
        assert live.state is ServerState.CONNECTED and not live.tools_cached
    async with idle_session(tmp_path, servers) as second:
        cached = second.server("echo")
        assert cached.state is ServerState.DISCONNECTED and cached.generation == 0
        assert cached.tools_cached
        assert [tool.name for tool in cached.tools] == [tool.name for tool in live.tools]
        assert [tool.read_only for tool in cached.tools] == [tool.read_only for tool in live.tools]
        assert cached.last_connected == live.last_connected
        # R-TOOL-3: for display only, never declared, never callable: the server has listed nothing in this session.
        assert second.tool_declarations(LoadMode.FULL) == ()
        with pytest.raises(KeyError):
            second.snapshot().tool("mcp__echo__echo")
        with pytest.raises(UnknownTool, match="only the tool snapshot cache lists 'echo' for server 'echo'"):
            await second.call_tool("mcp__echo__echo", {"text": "hi"})
        await second.prepare_turn()
        connected = second.server("echo")
        assert connected.state is ServerState.CONNECTED and not connected.tools_cached
        assert connected.last_connected is not None and connected.last_connected > live.last_connected  # type: ignore[operator]


async def test_a_changed_configuration_shows_no_cached_tools(tmp_path: Path) -> None:
    # R-CACHE-2: the fingerprint (command, args, env, url, headers, workdir) no longer matches.
    async with connected_session(tmp_path, {"echo": fault_server_entry(tools=1)}):
        pass
    changed = {"echo": {**fault_server_entry(tools=1), "env": {"MODE": "other"}}}
    async with idle_session(tmp_path, changed) as session:
        status = session.server("echo")
        assert status.tools == () and not status.tools_cached and status.last_connected is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with open_session(
        workdir=elsewhere,
        home=tmp_path / "home",
        mcp_servers={"echo": fault_server_entry(tools=1)},
        options=FAST_SESSION,
    ) as session:
        assert not session.server("echo").tools_cached


async def test_a_tool_refresh_is_written_too(tmp_path: Path) -> None:
    # R-CACHE-1: notifications/tools/list_changed -> a new list -> a new snapshot.
    servers = {"echo": fault_server_entry()}
    async with connected_session(tmp_path, servers) as session:
        await session.call_tool("mcp__echo__notify_list_changed", {"add_tool": "extra"})
        with trio.fail_after(10):
            await session.wait_for(lambda s: any(tool.tool == "extra" for tool in s.server("echo").tools))
    async with idle_session(tmp_path, servers) as session:
        assert "extra" in [tool.tool for tool in session.server("echo").tools]


async def test_once_dialed_a_server_shows_its_connection_not_the_cache(tmp_path: Path) -> None:
    # R-CACHE-2 is for servers not yet dialed: a manual disconnect clears the tools, the cache does not refill them.
    async with connected_session(tmp_path, {"echo": fault_server_entry()}):
        pass
    async with connected_session(tmp_path, {"echo": fault_server_entry()}) as session:
        status = await session.disconnect("echo")
        assert status.state is ServerState.DISCONNECTED and status.tools == () and not status.tools_cached


async def test_writes_prune_only_this_workdirs_servers_that_are_gone(tmp_path: Path) -> None:
    # R-CACHE-4: a host serving two projects never deletes the other project's snapshots.
    home = tmp_path / "home"
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    async with Host.open(home=home, options=FAST_SESSION) as host:
        first = await host.create_session(alpha, {"a": fault_server_entry(), "b": fault_server_entry()})
        other = await host.create_session(beta, {"a": fault_server_entry()})
        await first.prepare_turn()
        await other.prepare_turn()
        await host.destroy_session(first.id)
        await host.destroy_session(other.id)
        assert len(cached_entries(home)) == 3
        again = await host.create_session(alpha, {"a": fault_server_entry()})
        await again.prepare_turn()
    entries = cached_entries(home)
    assert sorted((entry["server"], Path(str(entry["workdir"])).name) for entry in entries) == [
        ("a", "alpha"),
        ("a", "beta"),
    ]


async def test_the_last_snapshot_is_written_when_the_session_closes_right_after_a_connect(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"echo": fault_server_entry()}) as session:
        await session.connect("echo")
    assert [entry["server"] for entry in cached_entries(tmp_path / "home")] == ["echo"]


async def test_the_tools_a_listing_skipped_are_written_with_the_snapshot(tmp_path: Path) -> None:
    # R-CACHE-1 with R-TOOL-9: a status display without a connection can still say what was skipped, and why.
    async with idle_session(tmp_path, {"f": fault_server_entry(invalid_schema=["broken"])}) as session:
        status = await session.connect("f")
    [entry] = cached_entries(tmp_path / "home")
    assert entry["warnings"] == list(status.warnings) and "'broken'" in status.warnings[0]


@pytest.mark.parametrize("content", [b"", b"\x00garbage", b'{"format": 2, "servers": {"x": 1}}'])
async def test_a_corrupt_cache_never_stops_a_session_and_is_repaired(tmp_path: Path, content: bytes) -> None:
    # R-CACHE-3
    servers = {"echo": fault_server_entry()}
    loaded = load_config(tmp_path, home=tmp_path / "home", constructor=servers)
    path = entry_path(cache_directory(tmp_path / "home"), loaded.workdir, "echo", loaded.servers["echo"].fingerprint)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    async with connected_session(tmp_path, servers) as session:
        assert session.server("echo").state is ServerState.CONNECTED
    assert [entry["server"] for entry in cached_entries(tmp_path / "home")] == ["echo"]


async def test_a_disk_that_hangs_never_holds_up_a_caller_or_a_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writes run in a worker thread; a closing session gives its last write a bounded time.
    released = threading.Event()

    def hanging(*_: object, **__: object) -> None:
        released.wait(30)  # a disk that does not answer
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(cache_file, "replace_atomically", hanging)
    try:
        started = time.monotonic()
        async with idle_session(tmp_path, {"echo": fault_server_entry()}) as session:
            await session.connect("echo")
            connected = time.monotonic()
            lag = await _loop_lag(0.2)
        closed = time.monotonic()
        assert connected - started < 5 and lag < 0.1
        assert closed - connected < 2.0 + 3.0  # the write limit, and the reclamation of the server
        assert cached_entries(tmp_path / "home") == []
    finally:
        released.set()


async def _loop_lag(duration: float) -> float:
    """The longest the event loop was held during ``duration`` seconds."""
    async with watch_stalls() as stalls:
        await trio.sleep(duration)
    return stalls.longest


async def test_statuses_say_how_a_server_is_reached_without_a_secret(tmp_path: Path) -> None:
    # What a settings page shows, from the session's own statuses (R-CFG-12): no file is read again.
    servers = {
        "local": {"command": "python3", "args": ["-m", "files server"], "env": {"TOKEN": "s3cr3t-env"}},
        "remote": {"url": "https://user:pw@mcp.example/mcp?key=s3cr3t-query", "headers": {"X-Key": "s3cr3t-header"}},
    }
    async with idle_session(tmp_path, servers) as session:
        local, remote = session.server("local"), session.server("remote")
        assert local.connection is not None and remote.connection is not None
        assert local.connection.display == "python3 -m 'files server' (env: TOKEN)"
        assert remote.connection.display == "https://user:***@mcp.example/mcp?key=*** (headers: X-Key)"
        assert remote.connection.header_names == ("X-Key",) and local.connection.env_names == ("TOKEN",)
        assert "s3cr3t" not in repr(session.snapshot())
        loaded = load_config(tmp_path, home=tmp_path / "home", constructor=servers)
        assert local.fingerprint == loaded.servers["local"].fingerprint != remote.fingerprint
