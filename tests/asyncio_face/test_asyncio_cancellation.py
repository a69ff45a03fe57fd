"""Cancellation across the two loops (R-AIO-2), under the standard loop and uvloop.

An asyncio task cancelled while it awaits an operation is a trio cancellation
of that operation, and the task sees :class:`asyncio.CancelledError` only once
the trio side is done with it: a call is cancelled on its server, a destroy
has reclaimed every process, a dial the session owns goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from asyncio_support import connected_session, idle_session, no_server_left, until
from presets import FAST_SESSION
from process_support import calls_received, requests_cancelled, server_processes

from wave_actors import ServerState
from wave_actors.asyncio import Host
from wave_actors.testing import fault_server_entry

Run = Callable[[Coroutine[Any, Any, Any]], Any]


async def _cancelled(task: asyncio.Task[Any]) -> float:
    """Cancel ``task``; the seconds until it ended, which it must do with CancelledError."""
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.monotonic() - started


def test_a_task_cancelled_mid_call_cancels_the_call_on_its_server(tmp_path: Path, run: Run) -> None:
    # R-AIO-2, R-TOOL-4
    calls, cancels = tmp_path / "calls.jsonl", tmp_path / "cancels.jsonl"

    async def scenario() -> None:
        async with connected_session(
            tmp_path, {"f": fault_server_entry(call_log=calls, cancel_log=cancels)}
        ) as session:
            call = asyncio.create_task(session.call_tool("mcp__f__sleep", {"seconds": 30}))
            await until(lambda: len(calls_received(calls)) == 1, limit=5, what="the server received the call")
            assert await _cancelled(call) < 2.0
            [received] = calls_received(calls)
            await until(lambda: requests_cancelled(cancels) == [received["id"]], limit=5, what="the cancel arrived")
            # The connection is fine, and the cancelled call was not replayed.
            assert session.server("f").state is ServerState.CONNECTED
            await session.call_tool("mcp__f__echo", {"text": "after"})
            assert [call["tool"] for call in calls_received(calls)] == ["sleep", "echo"]

    run(scenario())


def test_asyncio_timeout_around_a_call_cancels_it_on_the_server_too(tmp_path: Path, run: Run) -> None:
    # R-AIO-2
    calls, cancels = tmp_path / "calls.jsonl", tmp_path / "cancels.jsonl"

    async def scenario() -> None:
        async with connected_session(
            tmp_path, {"f": fault_server_entry(call_log=calls, cancel_log=cancels)}
        ) as session:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await session.call_tool("mcp__f__sleep", {"seconds": 30})
            [received] = calls_received(calls)
            await until(lambda: requests_cancelled(cancels) == [received["id"]], limit=5, what="the cancel arrived")

    run(scenario())


def test_a_cancelled_turn_stops_waiting_at_once_while_the_dial_goes_on(tmp_path: Path, run: Run) -> None:
    # R-AIO-2, R-DIAL-2: the dial belongs to the session, as under trio.
    async def scenario() -> None:
        async with idle_session(tmp_path, {"slow": fault_server_entry(init_delay=1.0)}) as session:
            turn = asyncio.create_task(session.prepare_turn())
            await until(lambda: len(server_processes()) == 1, limit=5, what="the dial started")
            assert await _cancelled(turn) < 0.5
            snapshot = await asyncio.wait_for(
                session.wait_for(lambda snapshot: snapshot.server("slow").state is ServerState.CONNECTED), 10
            )
            assert snapshot.server("slow").generation == 1  # the same dial, not a second one

    run(scenario())


def test_a_cancelled_destroy_reclaims_everything_before_the_task_sees_cancelled_error(tmp_path: Path, run: Run) -> None:
    # R-AIO-2, R-KILL-2, R-KILL-4
    async def scenario() -> None:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            entry = fault_server_entry(exit_on_eof=False, ignore_sigterm=True, grandchild=True, setsid_grandchild=True)
            session = await host.create_session(tmp_path, {"stubborn": entry})
            await session.prepare_turn()
            assert len(server_processes()) == 1
            destroy = asyncio.create_task(host.destroy_session(session.id))
            await until(lambda: session.closed, limit=5, what="the destroy began")  # inside its graces now
            assert await _cancelled(destroy) > 0.5  # the EOF grace at least: the reclamation was waited for
            assert session.closed and no_server_left()
            assert host.sessions() == []

    run(scenario())


def test_a_dial_cancelled_by_a_destroy_leaves_no_process(tmp_path: Path, run: Run) -> None:
    # R-RACE-2
    async def scenario() -> None:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            session = await host.create_session(tmp_path, {"slow": fault_server_entry(init_delay=30, grandchild=True)})
            turn = asyncio.create_task(session.prepare_turn())
            await until(lambda: len(server_processes()) == 1, limit=5, what="the dial started")
            started = time.monotonic()
            await host.destroy_session(session.id)
            assert time.monotonic() - started < 5
            assert no_server_left()
            await asyncio.wait_for(turn, 5)  # the turn ends with its session, without an error

    run(scenario())


def test_a_task_cancelled_while_the_host_opens_leaves_no_thread_and_no_process(tmp_path: Path, run: Run) -> None:
    # R-AIO-2
    async def scenario() -> None:
        async def open_and_wait() -> None:
            async with Host.open(home=tmp_path / "home", options=FAST_SESSION):
                await asyncio.sleep(60)

        opening = asyncio.create_task(open_and_wait())
        await asyncio.sleep(0)
        await _cancelled(opening)
        await until(lambda: not _runtime_threads(), limit=5, what="the host's thread ended")

    run(scenario())


def test_a_host_left_with_an_exception_reclaims_a_call_in_flight(tmp_path: Path, run: Run) -> None:
    # R-KILL-4: the call ends with its session; the exception is the block's.
    async def scenario() -> None:
        call: asyncio.Task[Any] | None = None
        with pytest.raises(LookupError):
            async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
                session = await host.create_session(tmp_path, {"f": fault_server_entry()})
                await session.prepare_turn()
                call = asyncio.create_task(session.call_tool("mcp__f__sleep", {"seconds": 30}))
                await asyncio.sleep(0.1)
                raise LookupError("the host's own failure")
        assert no_server_left()
        assert call is not None
        with pytest.raises(Exception, match=r"closed|unavailable|Unavailable"):
            await asyncio.wait_for(call, 5)

    run(scenario())


def _runtime_threads() -> list[str]:
    import threading

    return [thread.name for thread in threading.enumerate() if thread.name.startswith("wave-actors ")]
