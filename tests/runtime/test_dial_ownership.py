"""Dials belong to the session, not to the task that asked for them (R-DIAL-2, R-DIAL-5, R-DIAL-6, R-RACE-2).

A caller of ``connect()`` or ``prepare_turn()`` that is cancelled stops
waiting at once; the dial it started carries on, because other callers and
the next turn may be waiting for the same server, and a half-finished
handshake thrown away would only be paid again. Three things end a dial
nobody waits for: ``disconnect(name)``, closing the session, and the dial
timeout. Each is tested here, from a caller that was cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import trio
from presets import FAST_SESSION
from process_support import server_processes
from session_support import idle_session

from wave_actors import ServerState, SessionSnapshot
from wave_actors.testing import fault_server_entry

SLOW_START = fault_server_entry(init_delay=1.0)
NEVER_STARTS = fault_server_entry(init_delay=60.0)


def state_of(name: str, *states: ServerState) -> Callable[[SessionSnapshot], bool]:
    def holds(snapshot: SessionSnapshot) -> bool:
        return snapshot.server(name).state in states

    return holds


async def test_a_cancelled_connect_returns_at_once_and_the_dial_still_connects(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"f": SLOW_START}) as session:
        started = trio.current_time()
        with trio.move_on_after(0.2) as waiting:
            await session.connect("f")
        assert waiting.cancelled_caught and trio.current_time() - started < 0.5
        assert session.server("f").state is ServerState.CONNECTING
        with trio.fail_after(10):
            await session.wait_for(state_of("f", ServerState.CONNECTED))
        assert len(server_processes()) == 1


async def test_a_cancelled_turn_leaves_its_dials_to_the_session_and_the_next_turn_reuses_them(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"a": SLOW_START, "b": SLOW_START}) as session:
        with trio.move_on_after(0.2):
            await session.prepare_turn()
        assert {status.state for status in session.servers()} == {ServerState.CONNECTING}
        with trio.fail_after(10):
            await session.prepare_turn()  # nothing is due: the dials in flight are the session's
            await session.wait_for(lambda s: all(status.state is ServerState.CONNECTED for status in s.servers))
        assert {status.generation for status in session.servers()} == {1}  # dialed once each, never again


async def test_disconnect_ends_a_dial_nobody_waits_for(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"f": NEVER_STARTS}) as session:
        with trio.move_on_after(0.2):
            await session.connect("f")
        assert len(server_processes()) == 1
        with trio.fail_after(10):
            status = await session.disconnect("f")
        assert status.state is ServerState.DISCONNECTED
        assert server_processes() == []


async def test_closing_the_session_ends_a_dial_nobody_waits_for(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with idle_session(tmp_path, {"f": NEVER_STARTS}) as session:
            with trio.move_on_after(0.2):
                await session.connect("f")
            assert len(server_processes()) == 1
    assert server_processes() == []


async def test_the_dial_timeout_ends_a_dial_nobody_waits_for(tmp_path: Path) -> None:
    options = attrs.evolve(FAST_SESSION, dial_timeout=0.5)
    async with idle_session(tmp_path, {"f": NEVER_STARTS}, options=options) as session:
        with trio.move_on_after(0.1):
            await session.connect("f")
        with trio.fail_after(10):
            snapshot = await session.wait_for(state_of("f", ServerState.ERROR))
        assert "dial timeout" in (snapshot.server("f").error or "")
        assert server_processes() == []
