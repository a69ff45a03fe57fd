"""The host and a session's lifetime: sessions by id, destroy hooks, idempotent destroy, queued destroys,
idle cost, ``open_session``'s block (R-HOST, R-KILL-3..5)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
import trio.testing
from runtime_support import server_processes

from wave_actors import Host, ServerState, Session, SessionOptions, UnknownTool, WaveActorsError, open_session
from wave_actors.testing import count_tasks, fault_server_entry, is_alive, process_census


def five_servers(**behaviour: object) -> dict[str, dict[str, object]]:
    return {f"s{i}": fault_server_entry(grandchild=True, **behaviour) for i in range(5)}  # type: ignore[arg-type]


async def test_destroy_returns_after_every_process_is_gone(tmp_path: Path, options: SessionOptions) -> None:
    # R-KILL-4
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, five_servers())
        await session.prepare_turn()
        assert len(server_processes()) == 5
        descendants = process_census()
        assert len(descendants) == 10  # five servers, five grandchildren
        await host.destroy_session(session.id)
        assert [p for p in descendants if is_alive(p)] == []
        assert host.sessions() == []
        with pytest.raises(KeyError):
            host.get_session(session.id)


async def test_destroy_is_idempotent(tmp_path: Path, options: SessionOptions) -> None:
    # R-KILL-4: a second destroy, concurrent or later, is a no-op with no half state.
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, five_servers())
        await session.prepare_turn()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host.destroy_session, session.id)
            nursery.start_soon(host.destroy_session, session.id)
        await host.destroy_session(session.id)
        assert server_processes() == [] and host.sessions() == []
        assert session.closed


async def test_failing_and_overrunning_hooks_do_not_prevent_reclamation(
    tmp_path: Path, options: SessionOptions, caplog: pytest.LogCaptureFixture
) -> None:
    # R-KILL-3
    saved: list[str] = []

    async def save_transcript(session: Session) -> None:
        saved.append(session.id)

    async def broken(session: Session) -> None:
        raise RuntimeError("disk full")

    async def stuck(session: Session) -> None:
        await trio.sleep_forever()

    caplog.set_level(logging.WARNING, logger="wave_actors._host")
    async with Host.open(
        home=tmp_path / "home", options=options, before_destroy=[broken, stuck, save_transcript], hook_timeout=0.2
    ) as host:
        session = await host.create_session(tmp_path, five_servers())
        await session.prepare_turn()
        with trio.fail_after(5):
            await host.destroy_session(session.id)
        assert server_processes() == []
        assert saved == [session.id]
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "failed" in messages and "overran" in messages


async def test_destroy_during_reconfigure_is_queued_not_lost(tmp_path: Path, options: SessionOptions) -> None:
    # R-KILL-5: a removed server with a call in flight keeps reconfigure busy; destroy waits in the queue.
    entry = {**fault_server_entry(), "tool_timeout_ms": 10_000}
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"old": entry})
        await session.prepare_turn()
        call_done = trio.Event()

        async def slow_call() -> None:
            result = await session.call_tool("mcp__old__sleep", {"seconds": 1.0})
            assert not result.is_error  # accepted calls finish (R-STORE-5)
            call_done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(session.reconfigure, {"new": fault_server_entry()})
            await trio.testing.wait_all_tasks_blocked()
            assert session.reconfiguring
            nursery.start_soon(host.destroy_session, session.id)
            await trio.testing.wait_all_tasks_blocked()
            assert [pending.session_id for pending in host.pending_destroys()] == [session.id]
            assert not session.closed
        assert call_done.is_set()
        assert host.pending_destroys() == []
        assert session.closed and host.sessions() == []
        assert server_processes() == []


async def test_watch_delivers_growing_versions_and_the_latest_state(tmp_path: Path, options: SessionOptions) -> None:
    # R-HOST-2
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"f": fault_server_entry()})
        versions: list[int] = []
        async with trio.open_nursery() as nursery:

            async def watcher() -> None:
                async for snapshot in session.watch():
                    versions.append(snapshot.version)
                    if snapshot.server("f").state is ServerState.CONNECTED:
                        return

            nursery.start_soon(watcher)
            await session.prepare_turn()
        assert versions == sorted(set(versions)) and len(versions) >= 2


async def test_misbehaving_server_does_not_affect_other_sessions(tmp_path: Path, options: SessionOptions) -> None:
    # R-HOST-4
    async with Host.open(home=tmp_path / "home", options=options) as host:
        sick = await host.create_session(tmp_path, {"f": fault_server_entry(garbage_stdout=True, exit_on_start=9)})
        healthy = await host.create_session(tmp_path, {"f": fault_server_entry()})
        await sick.prepare_turn()
        await healthy.prepare_turn()
        with pytest.raises(UnknownTool, match="'f' is error"):
            await sick.call_tool("mcp__f__echo", {"text": "x"})
        assert healthy.server("f").state is ServerState.CONNECTED
        assert not (await healthy.call_tool("mcp__f__echo", {"text": "x"})).is_error


@pytest.mark.timeout(120)
async def test_a_thousand_idle_sessions_spawn_no_process_and_no_task_per_server(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-HOST-3, R-DIAL-1
    entries = {f"s{i}": fault_server_entry() for i in range(5)}
    async with Host.open(home=tmp_path / "home", options=options) as host:
        before = count_tasks()
        for _ in range(1000):
            await host.create_session(tmp_path, entries)
        added = count_tasks() - before
        assert added <= 1000, f"{added} tasks for 1000 idle sessions of 5 servers"
        assert process_census() == []
        for session in host.sessions()[:3]:
            await session.prepare_turn()  # not that they cannot work
        assert len(server_processes()) == 15


async def test_session_aclose_is_destroy(tmp_path: Path, options: SessionOptions) -> None:
    saved: list[str] = []

    async def hook(session: Session) -> None:
        saved.append(session.id)

    async with Host.open(home=tmp_path / "home", options=options, before_destroy=[hook]) as host:
        session = await host.create_session(tmp_path, five_servers())
        await session.prepare_turn()
        await session.aclose()
        await session.aclose()
        assert saved == [session.id] and host.sessions() == [] and server_processes() == []


async def test_aclose_inside_open_session_ends_the_block_instead_of_deadlocking(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-KILL-4: a session closed from inside its own block ends the block, every process reclaimed.
    reached_after_aclose = False
    with trio.fail_after(10):
        async with open_session(
            workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=options
        ) as session:
            await session.prepare_turn()
            await session.aclose()
            await trio.sleep(0)  # the block is cancelled at its next checkpoint
            reached_after_aclose = True
    assert not reached_after_aclose
    assert server_processes() == []


async def test_two_concurrent_creates_with_one_id_give_one_session(tmp_path: Path, options: SessionOptions) -> None:
    # R-HOST-1: session ids are unique, even when two creates race.
    outcomes: list[str] = []

    async def create(host: Host) -> None:
        try:
            await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="chat")
            outcomes.append("created")
        except WaveActorsError as error:
            outcomes.append(f"refused: {error}")

    with trio.fail_after(10):
        async with Host.open(home=tmp_path / "home", options=options) as host:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(create, host)
                nursery.start_soon(create, host)
            assert sorted(outcomes)[0] == "created" and "exists already" in sorted(outcomes)[1]
            assert [session.id for session in host.sessions()] == ["chat"]


async def test_statuses_of_a_destroyed_session_say_disconnected(tmp_path: Path, options: SessionOptions) -> None:
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"f": fault_server_entry()})
        await session.prepare_turn()
        await host.destroy_session(session.id)
        status = session.server("f")
        assert status.state is ServerState.DISCONNECTED and status.tools == ()
        snapshots = [snapshot async for snapshot in session.watch()]
        assert [s.server("f").state for s in snapshots] == [ServerState.DISCONNECTED]


@pytest.mark.timeout(120)
async def test_many_sessions_destroyed_at_once_leave_no_process(tmp_path: Path, options: SessionOptions) -> None:
    # R-KILL-1, R-KILL-4 under load: reclaims share process-table scans, so 40 families at once
    # finish well within the graces and nothing found is left unsignalled.
    entry = fault_server_entry(grandchild=True, setsid_grandchild=True)
    async with Host.open(home=tmp_path / "home", options=options) as host:
        sessions = [await host.create_session(tmp_path, {"f": entry}) for _ in range(40)]
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(session.prepare_turn)
        assert len(server_processes()) == 40
        family = process_census()
        started = trio.current_time()
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(host.destroy_session, session.id)
        elapsed = trio.current_time() - started
        assert [p.pid for p in family if is_alive(p)] == []
        assert elapsed < options.transport.graces.total
