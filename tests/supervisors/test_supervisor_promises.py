"""Promises the supervisor's docstrings make that once did not hold (R-SUP).

Each test is named after the promise it keeps, uses the public API only, and
runs on trio's MockClock, so the times below are virtual and exact.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from supervisor_support import (
    GENEROUS,
    Boom,
    crashes_after,
    drained,
    ignores_cancellation_for,
    serve_forever,
    timeline,
    wait_for,
)

from supervisors import (
    Backoff,
    ChildAbandoned,
    ChildContext,
    ChildEvent,
    ChildNotStarted,
    ChildSpec,
    ChildState,
    ChildStatus,
    EventKind,
    Restart,
    Supervisor,
    SupervisorError,
)

STARTED, EXITED, RESTARTING, STOPPED = (
    EventKind.STARTED,
    EventKind.EXITED,
    EventKind.RESTARTING,
    EventKind.STOPPED,
)

# -- once shutdown begins, nothing starts ----------------------------------------------------


async def test_once_shutdown_begins_a_restart_waiting_out_its_backoff_never_starts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # flappy crashes at 1 and would restart at 3; the block is left at 1.5, and
    # stopping slow (started after flappy, so stopped first) takes until 6.5.
    seen: list[ChildEvent] = []
    backoff = Backoff(initial=2.0, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff, on_event=seen.append) as supervisor:
        await supervisor.start_child(ChildSpec("flappy", crashes_after(1.0)))
        await supervisor.start_child(ChildSpec("slow", ignores_cancellation_for(5.0), shutdown_timeout=10.0))
        await trio.sleep(1.5)
    assert timeline(seen) == [
        (STARTED, "flappy", 1, 0.0),
        (STARTED, "slow", 1, 0.0),
        (EXITED, "flappy", 1, 1.0),
        (RESTARTING, "flappy", 1, 1.0),
        (STOPPED, "slow", 1, 6.5),
        (STOPPED, "flappy", 1, 6.5),  # the pending restart was dropped, never run
    ]
    assert supervisor.status("flappy") == ChildStatus("flappy", ChildState.STOPPED, 1, None)


async def test_once_shutdown_begins_start_child_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shutting_down = trio.Event()
    refused: list[SupervisorError] = []

    async def notices_its_stop(context: ChildContext) -> None:
        context.started()
        try:
            await trio.sleep_forever()
        finally:
            shutting_down.set()
            with trio.CancelScope(shield=True):
                await trio.sleep(1)

    async def starts_late(supervisor: Supervisor) -> None:
        await shutting_down.wait()
        with pytest.raises(SupervisorError, match="closed") as raised:
            await supervisor.start_child(ChildSpec("late", serve_forever))
        refused.append(raised.value)

    async with trio.open_nursery() as nursery, Supervisor.open() as supervisor:
        await supervisor.start_child(ChildSpec("slow", notices_its_stop))
        nursery.start_soon(starts_late, supervisor)
    assert len(refused) == 1
    assert [status.name for status in supervisor.children()] == ["slow"]


async def _start_in_the_tick_the_block_is_left(order: list[str]) -> None:
    async def late_start(supervisor: Supervisor) -> None:
        await trio.sleep(1)
        try:
            await supervisor.start_child(ChildSpec("late", serve_forever))
        except (SupervisorError, ChildNotStarted):
            order.append("refused")

    def record(event: ChildEvent) -> None:
        order.append(event.kind.value)

    async with trio.open_nursery() as nursery, Supervisor.open(on_event=record) as supervisor:
        nursery.start_soon(late_start, supervisor)
        await trio.sleep(1)
        order.append("shutdown")  # the shutdown begins right after this line
    status = supervisor.status("late") if supervisor.children() else None
    assert status is None or status.state is ChildState.STOPPED


def test_a_start_child_racing_the_shutdown_never_leaves_a_child_started_after_it_began() -> None:
    # The start is requested in the very tick the block is left: trio's
    # scheduler decides which of the two runs first, differently across runs.
    for _ in range(100):
        order: list[str] = []
        trio.run(_start_in_the_tick_the_block_is_left, order, clock=trio.testing.MockClock(autojump_threshold=0))
        assert "started" not in order[order.index("shutdown") :], order


# -- a started() from an ended incarnation is ignored --------------------------------------


async def test_a_late_started_from_a_first_start_that_returned_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    kept: list[ChildContext] = []
    seen: list[ChildEvent] = []

    async def returns_without_reporting(context: ChildContext) -> None:
        kept.append(context)

    async with Supervisor.open(on_event=seen.append) as supervisor:
        with pytest.raises(ChildNotStarted):
            await supervisor.start_child(ChildSpec("child", returns_without_reporting))
        kept[0].started()  # raises nothing
        assert supervisor.status("child").state is ChildState.EXITED
    assert [event.kind for event in seen] == [EXITED]


async def test_a_late_started_from_an_incarnation_that_crashed_during_backoff_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    kept: list[ChildContext] = []

    async def reconnect_fails(context: ChildContext) -> None:
        kept.append(context)
        if context.incarnation == 1:
            context.started()
            await trio.sleep(1)
            raise Boom("connection lost")
        raise Boom("cannot reconnect")  # before started(): the restart failed

    backoff = Backoff(initial=5.0, multiplier=1.0, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", reconnect_fails))
        await wait_for(events, RESTARTING)
        restarting = await wait_for(events, RESTARTING)
        assert restarting.incarnation == 2
        kept[1].started()  # the failed restart, now over, speaks up: ignored
        kept[0].started()  # and so is the first incarnation, long over
        status = supervisor.status("child")
        assert (status.state, status.incarnation) == (ChildState.RESTARTING, 2)
        assert str(status.error) == "cannot reconnect"
        await supervisor.stop_child("child")
    assert [(event.kind, event.incarnation) for event in await drained(events)] == [(STOPPED, 2)]


# -- start_child returns the status from when the child reported started --------------------


@pytest.mark.parametrize("delay", [0.0, 1.0])
async def test_start_child_returns_the_status_the_child_had_when_it_reported_started(
    autojump_clock: trio.testing.MockClock, delay: float
) -> None:
    async def reports_then_crashes(context: ChildContext) -> None:
        context.started()
        raise Boom(f"incarnation {context.incarnation}")

    backoff = Backoff(initial=delay, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
        status = await supervisor.start_child(ChildSpec("child", reports_then_crashes, restart=Restart.TRANSIENT))
        assert status == ChildStatus("child", ChildState.RUNNING, 1, None)
        assert supervisor.status("child").state is not ChildState.RUNNING  # it has crashed since


# -- the deadline of a stop is the supervisor's, not the waiter's -----------------------------


async def test_a_stopped_child_is_abandoned_at_its_deadline_even_when_nobody_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(10.0), shutdown_timeout=2.0))
        await wait_for(events, STARTED)
        with trio.move_on_after(0.5):
            await supervisor.stop_child("stuck")  # the stopper gives up waiting at 0.5
        assert supervisor.status("stuck").state is ChildState.STOPPING
        abandoned = await wait_for(events, STOPPED)
        assert abandoned.time == 2.0
        assert isinstance(abandoned.error, ChildAbandoned)
        assert supervisor.status("stuck").state is ChildState.ABANDONED
        exited = await wait_for(events, EXITED)
        assert exited.time == 10.0
        assert supervisor.status("stuck").state is ChildState.STOPPED


async def test_a_stop_during_backoff_ends_the_child_even_when_the_stopper_is_cancelled_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backoff = Backoff(initial=10.0, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
        progress = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await wait_for(progress, RESTARTING)
        with trio.CancelScope() as scope:
            scope.cancel()
            await supervisor.stop_child("child")
        await wait_for(progress, STOPPED)
        assert trio.current_time() == 1.0
        assert supervisor.status("child").state is ChildState.STOPPED
