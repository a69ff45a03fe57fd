"""Generations settle every race: crash and reconnect, manual disconnect, storms, dial vs destroy (R-RACE)."""

from __future__ import annotations

import random
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from runtime_support import failing_after_marker_entry, server_processes
from session_support import assert_stays, connected_session, idle_session

from supervisors import Backoff
from wave_actors import Host, ServerState, ServerUnavailable, Session, SessionOptions
from wave_actors.testing import fault_server_entry, wait_for_state


async def test_crash_reconnects_and_calls_work_again(tmp_path: Path) -> None:
    # R-RACE-4, R-RACE-5
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        before = session.server("f")
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 4})
        reconnecting = await wait_for_state(session, "f", ServerState.RECONNECTING)
        assert "code 4" in (reconnecting.error or "")
        assert reconnecting.tools == before.tools  # kept while reconnecting
        after = await wait_for_state(session, "f", ServerState.CONNECTED)
        assert after.generation > before.generation
        result = await session.call_tool("mcp__f__echo", {"text": "back"})
        assert not result.is_error
        assert len(server_processes()) == 1


async def test_calls_fail_fast_while_reconnecting(tmp_path: Path, options: SessionOptions) -> None:
    # R-RACE-4: a clear "reconnecting" error, not a wait.
    slow = attrs.evolve(options, reconnect_backoff=Backoff(initial=30.0, maximum=30.0, jitter=0.0))
    async with connected_session(tmp_path, {"f": fault_server_entry()}, options=slow) as session:
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 4})
        await wait_for_state(session, "f", ServerState.RECONNECTING)
        with trio.fail_after(0.5), pytest.raises(ServerUnavailable, match="reconnecting"):
            await session.call_tool("mcp__f__echo", {"text": "x"})


async def test_crash_loop_ends_in_error_with_the_last_reason(tmp_path: Path) -> None:
    # R-RACE-4: after the retry budget, ERROR with the last reason.
    marker = tmp_path / "closed"
    entry = failing_after_marker_entry(tmp_path, marker)
    async with connected_session(tmp_path, {"f": entry}) as session:
        assert session.server("f").state is ServerState.CONNECTED
        marker.touch()
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 4})
        status = await wait_for_state(session, "f", ServerState.ERROR)
        assert status.error is not None and "gave up" in status.error and "code 1" in status.error
        # Later turns leave it alone; an explicit connect tries again.
        generation = status.generation
        await session.prepare_turn()
        assert session.server("f").generation == generation
        marker.unlink()
        assert (await session.connect("f")).state is ServerState.CONNECTED


async def test_manual_disconnect_is_not_undone_by_the_close_it_causes(tmp_path: Path, options: SessionOptions) -> None:
    # R-RACE-3: the old process dies (here it crashes at the same moment); no reconnect follows.
    async with idle_session(tmp_path, {"f": fault_server_entry()}) as session:
        for _ in range(5):
            await session.connect("f")

            async def crash() -> None:
                with pytest.raises(ServerUnavailable):
                    await session.call_tool("mcp__f__crash", {"code": 4})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(crash)
                nursery.start_soon(session.disconnect, "f")
            # Give any (wrong) reconnect every chance to happen, and fail at the first sign of one.
            await assert_stays(
                session,
                "f",
                lambda status: status.state is ServerState.DISCONNECTED and status.manually_disconnected,
                duration=options.reconnect_backoff.maximum * 2,
            )
            assert server_processes() == []


async def test_connect_disconnect_storm_leaves_the_last_command_and_one_transport(tmp_path: Path) -> None:
    # R-RACE-6: many tasks, random interleavings; the last command wins, never two transports.
    rng = random.Random(99)
    async with idle_session(tmp_path, {"f": fault_server_entry()}) as session:
        for _round in range(4):
            issued: list[str] = []
            most_alive = 0
            storm_over = trio.Event()

            async def command(kind: str, delay: float, issued: list[str]) -> None:
                await trio.sleep(delay)  # the command's random moment in the storm, not a wait for anything
                issued.append(kind)  # posted synchronously by the call below, in this order
                if kind == "connect":
                    try:
                        await session.connect("f")
                    except ServerUnavailable as error:  # a later disconnect overtook this connect
                        assert "overtook" in str(error)
                else:
                    await session.disconnect("f")

            async def sample(storm_over: trio.Event) -> None:
                nonlocal most_alive
                while not storm_over.is_set():
                    most_alive = max(most_alive, len(server_processes()))
                    await trio.sleep(0.005)  # a sampling period: the most processes alive at any moment

            async with trio.open_nursery() as watcher:
                watcher.start_soon(sample, storm_over)
                async with trio.open_nursery() as nursery:
                    for _ in range(30):
                        kind = rng.choice(["connect", "disconnect"])
                        nursery.start_soon(command, kind, rng.uniform(0, 0.3), issued)
                storm_over.set()
            expected = ServerState.CONNECTED if issued[-1] == "connect" else ServerState.DISCONNECTED
            assert session.server("f").state is expected
            assert len(server_processes()) == (1 if expected is ServerState.CONNECTED else 0)
            assert most_alive <= 1


async def test_list_changed_refreshes_the_tool_list(tmp_path: Path) -> None:
    # R-RACE-7
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        await session.call_tool("mcp__f__notify_list_changed", {"add_tool": "fresh"})
        with trio.fail_after(5):
            async for snapshot in session.watch():
                if "fresh" in {tool.tool for tool in snapshot.server("f").tools}:
                    break
        result = await session.call_tool("mcp__f__fresh", {"text": "new"})
        assert not result.is_error


@pytest.mark.timeout(120)
async def test_dial_versus_destroy_at_random_moments_leaves_no_process(tmp_path: Path, options: SessionOptions) -> None:
    # R-RACE-2: 200 sessions destroyed at random points of their first dial; grandchildren included.
    rng = random.Random(2026)
    async with Host.open(home=tmp_path / "home", options=options) as host:
        for _batch in range(20):
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    entry = fault_server_entry(
                        init_delay=rng.choice([0.0, 0.05, 0.2]),
                        grandchild=rng.random() < 0.5,
                        setsid_grandchild=rng.random() < 0.3,
                    )
                    session = await host.create_session(tmp_path, {"f": entry, "g": fault_server_entry()})
                    nursery.start_soon(_turn_then_destroy, host, session, rng.uniform(0.0, 0.25))
        assert host.sessions() == []
        assert server_processes() == []
    # The autouse fixture also checks for re-parented (setsid) grandchildren.


async def _turn_then_destroy(host: Host, session: Session, delay: float) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.prepare_turn)
        await trio.sleep(delay)  # the destroy's random moment in the dial, not a wait for anything
        await host.destroy_session(session.id)
