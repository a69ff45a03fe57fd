"""``wait_for_state`` returns the first status in a wanted state, and says what it saw when it gives up (R-HOST-2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from session_support import connected_session, idle_session

from wave_actors import ServerState
from wave_actors.testing import StateNotReached, fault_server_entry, wait_for_state


async def test_returns_the_status_once_the_server_is_in_a_wanted_state(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"f": fault_server_entry(init_delay=0.3)}) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prepare_turn)
            connecting = await wait_for_state(session, "f", ServerState.CONNECTING)
            assert connecting.state is ServerState.CONNECTING
            connected = await wait_for_state(session, "f", ServerState.ERROR, ServerState.CONNECTED)
        assert connected.state is ServerState.CONNECTED


async def test_returns_at_once_when_the_server_is_already_there(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        with trio.fail_after(1):
            assert (await wait_for_state(session, "f", ServerState.CONNECTED)) == session.server("f")


async def test_a_timeout_names_the_server_the_states_and_the_last_state_seen(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"f": fault_server_entry(exit_on_start=3)}) as session:
        await session.prepare_turn()
        with pytest.raises(StateNotReached) as raised:
            await wait_for_state(session, "f", ServerState.CONNECTED, ServerState.RECONNECTING, timeout=0.2)
    message = str(raised.value)
    assert "'f'" in message and "connected or reconnecting" in message and "within 0.2 s" in message
    assert "last seen: error" in message and "code 3" in message
    assert raised.value.last is not None and raised.value.last.state is ServerState.ERROR


async def test_a_server_the_session_does_not_list_is_reported_as_such(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {}) as session:
        with pytest.raises(StateNotReached, match=r"'ghost'.*not in the session"):
            await wait_for_state(session, "ghost", ServerState.CONNECTED, timeout=0.1)


async def test_a_session_that_closes_first_ends_the_wait(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {"f": fault_server_entry()}) as session:
        await session.aclose()
        with trio.fail_after(5), pytest.raises(StateNotReached, match="before its session closed"):
            await wait_for_state(session, "f", ServerState.CONNECTED)


async def test_at_least_one_state_is_needed(tmp_path: Path) -> None:
    async with idle_session(tmp_path, {}) as session:
        with pytest.raises(ValueError, match="at least one state"):
            await wait_for_state(session, "f")
