"""Lazy dial, explicit connect and disconnect, through a real host and real servers (R-DIAL-1..8)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from runtime_support import server_processes
from session_support import connected_session, idle_session

from wave_actors import DialError, Host, LoadMode, ServerDisabled, ServerState, SessionOptions, UnknownServer
from wave_actors.testing import fault_server_entry, process_census, reference_server_entry


async def test_creating_a_session_spawns_nothing(tmp_path: Path, options: SessionOptions) -> None:
    # R-DIAL-1
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"a": fault_server_entry(), "b": fault_server_entry()})
        assert [s.state for s in session.servers()] == [ServerState.DISCONNECTED] * 2
        assert process_census() == []


async def test_prepare_turn_dials_concurrently(tmp_path: Path) -> None:
    # R-DIAL-2: three servers that take 1 s each to answer initialize finish together.
    servers = {f"slow{i}": fault_server_entry(init_delay=1.0) for i in range(3)}
    async with idle_session(tmp_path, servers) as session:
        started = trio.current_time()
        await session.prepare_turn()
        elapsed = trio.current_time() - started
        assert [s.state for s in session.servers()] == [ServerState.CONNECTED] * 3
        assert elapsed < 2.0, f"three 1 s dials took {elapsed:.2f} s: not concurrent"


async def test_prepare_turn_with_nothing_due_does_not_checkpoint(tmp_path: Path) -> None:
    # R-DIAL-7: inside an already-cancelled scope, any checkpoint would raise Cancelled.
    async with idle_session(tmp_path, {}) as session:
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.prepare_turn()
        assert not scope.cancelled_caught
    async with connected_session(tmp_path, {"a": fault_server_entry()}) as session:
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.prepare_turn()  # everything connected: nothing due
        assert not scope.cancelled_caught


async def test_connected_servers_are_reused_not_redialed(tmp_path: Path) -> None:
    # R-DIAL-3
    async with connected_session(tmp_path, {"a": fault_server_entry()}) as session:
        first = session.server("a")
        pid = server_processes()[0].pid
        await session.prepare_turn()
        await session.connect("a")
        assert session.server("a").generation == first.generation
        assert [p.pid for p in server_processes()] == [pid]


async def test_failed_lazy_dial_is_not_retried_by_later_turns(tmp_path: Path) -> None:
    # R-DIAL-4
    servers = {"bad": fault_server_entry(exit_on_start=3), "good": fault_server_entry()}
    async with idle_session(tmp_path, servers) as session:
        await session.prepare_turn()
        bad = session.server("bad")
        assert bad.state is ServerState.ERROR
        assert bad.error is not None and "code 3" in bad.error
        assert session.server("good").state is ServerState.CONNECTED
        await session.prepare_turn()
        await session.prepare_turn()
        assert session.server("bad").generation == bad.generation
        assert session.server("bad").state is ServerState.ERROR


async def test_explicit_connect_retries_a_failed_server(tmp_path: Path) -> None:
    # R-DIAL-5
    async with connected_session(tmp_path, {"bad": fault_server_entry(exit_on_start=3)}) as session:
        generation = session.server("bad").generation
        with pytest.raises(DialError, match="code 3"):
            await session.connect("bad")
        assert session.server("bad").generation > generation


async def test_explicit_connect_dials_before_any_turn(tmp_path: Path) -> None:
    # R-DIAL-5
    async with idle_session(tmp_path, {"a": fault_server_entry()}) as session:
        status = await session.connect("a")
        assert status.state is ServerState.CONNECTED
        assert {tool.tool for tool in status.tools} >= {"echo", "sleep"}


async def test_manual_disconnect_survives_later_turns(tmp_path: Path) -> None:
    # R-DIAL-6, R-DIAL-8
    async with connected_session(tmp_path, {"a": fault_server_entry()}) as session:
        status = await session.disconnect("a")
        assert status.state is ServerState.DISCONNECTED and status.manually_disconnected
        assert server_processes() == []  # disconnect returns after reclamation
        for _ in range(3):
            await session.prepare_turn()
        assert session.server("a").state is ServerState.DISCONNECTED
        assert session.tool_declarations(LoadMode.FULL) == ()
        assert (await session.connect("a")).state is ServerState.CONNECTED


async def test_disabled_server_is_listed_never_dialed_and_connect_is_refused(tmp_path: Path) -> None:
    # R-CFG-6
    entry = {**fault_server_entry(), "enabled": False}
    async with idle_session(tmp_path, {"off": entry}) as session:
        assert session.server("off").state is ServerState.DISABLED
        await session.prepare_turn()
        assert session.server("off").state is ServerState.DISABLED
        with pytest.raises(ServerDisabled, match="'off'"):
            await session.connect("off")
        assert server_processes() == []


async def test_unknown_server_names_the_configured_ones(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"a": fault_server_entry()}) as session:
        with pytest.raises(UnknownServer, match=r"'nope'.*configured: a"):
            await session.connect("nope")


async def test_sdk_reference_server_through_a_session(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"ref": reference_server_entry("stdio")}) as session:
        with trio.fail_after(30):
            await session.prepare_turn()
        status = session.server("ref")
        assert status.state is ServerState.CONNECTED, status.error
        result = await session.call_tool("mcp__ref__echo", {"text": "hello"})
        assert "hello" in result.content[0].text  # type: ignore[union-attr]


async def test_stdio_server_runs_in_the_session_workdir(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"a": fault_server_entry()}):
        (process,) = server_processes()
        assert Path(process.cwd()).resolve() == tmp_path.resolve()
