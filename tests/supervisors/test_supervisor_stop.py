"""Stopping: during backoff, during start, racing a crash; shutdown order and deadlines (R-SUP).

All on trio's MockClock with autojump: times asserted below are virtual and exact.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st
from supervisor_support import (
    GENEROUS,
    NO_DELAY,
    Boom,
    Run,
    crashes_after,
    drained,
    ignores_cancellation_for,
    serve_forever,
    wait_for,
)

from supervisors import (
    Backoff,
    ChildAbandoned,
    ChildContext,
    ChildNotStarted,
    ChildSpec,
    ChildState,
    EventKind,
    Restart,
    Supervisor,
    SupervisorError,
)


async def test_stop_during_backoff_cancels_the_pending_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backoff = Backoff(initial=10.0, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        progress = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        assert (await wait_for(progress, EventKind.RESTARTING)).delay == 10.0
        status = await supervisor.stop_child("child")
        assert trio.current_time() == 1  # no waiting for the 10 s delay
        await trio.sleep(100)
        assert supervisor.status("child") == status
    assert (status.state, status.incarnation) == (ChildState.STOPPED, 1)
    assert [event.kind for event in await drained(events)] == [
        EventKind.STARTED,
        EventKind.EXITED,
        EventKind.RESTARTING,
        EventKind.STOPPED,
    ]


async def test_stop_during_start_makes_start_child_raise_child_not_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow_dial(context: ChildContext) -> None:
        await trio.sleep(10)
        context.started()
        await trio.sleep_forever()

    outcome: list[BaseException] = []

    async def starter(supervisor: Supervisor) -> None:
        try:
            await supervisor.start_child(ChildSpec("child", slow_dial))
        except ChildNotStarted as error:
            outcome.append(error)

    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(starter, supervisor)
            await trio.sleep(1)
            assert supervisor.status("child").state is ChildState.STARTING
            status = await supervisor.stop_child("child")
        assert trio.current_time() == 1
    assert status.state is ChildState.STOPPED
    assert len(outcome) == 1
    assert "stopped before it reported started" in str(outcome[0])
    assert [event.kind for event in await drained(events)] == [EventKind.STOPPED]


async def test_a_child_reporting_started_while_being_stopped_is_still_not_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def reports_in_cleanup(context: ChildContext) -> None:
        try:
            await trio.sleep(10)
        finally:
            context.started()  # too late: the stop already decided

    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        async with trio.open_nursery() as nursery:

            async def starter() -> None:
                with pytest.raises(ChildNotStarted):
                    await supervisor.start_child(ChildSpec("child", reports_in_cleanup))

            nursery.start_soon(starter)
            await trio.sleep(1)
            assert (await supervisor.stop_child("child")).state is ChildState.STOPPED
    assert [event.kind for event in await drained(events)] == [EventKind.STOPPED]


async def test_cancelling_the_caller_of_start_child_cancels_the_starting_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow_dial(context: ChildContext) -> None:
        await trio.sleep(10)
        context.started()
        await trio.sleep_forever()

    async with Supervisor.open() as supervisor:
        with trio.move_on_after(1):
            await supervisor.start_child(ChildSpec("child", slow_dial))
        assert trio.current_time() == 1
        assert supervisor.status("child").state is ChildState.STOPPED


async def test_once_up_a_child_is_not_cancelled_by_the_caller_of_start_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        with trio.CancelScope() as scope:
            await supervisor.start_child(ChildSpec("child", serve_forever))
            scope.cancel()
            await trio.sleep(1)
        await trio.sleep(1)
        assert supervisor.status("child").state is ChildState.RUNNING


def _raced_scenario(
    lifetime: float, stop_at: float, delay: float, before_started: bool
) -> Callable[[], Awaitable[None]]:
    async def run(context: ChildContext) -> None:
        if before_started and context.incarnation > 1:
            await trio.sleep(lifetime)
            raise Boom("failed while restarting")
        context.started()
        await trio.sleep(lifetime)
        raise Boom("crashed")

    async def scenario() -> None:
        backoff = Backoff(initial=delay, jitter=0.0, multiplier=1.0)
        async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
            events = supervisor.subscribe(max_buffer=100_000)
            await supervisor.start_child(ChildSpec("child", run))
            await trio.sleep(stop_at)
            status = await supervisor.stop_child("child")
            stopped_at = trio.current_time()
            assert status.state is ChildState.STOPPED
            await trio.sleep(lifetime + delay + 10)
            assert supervisor.status("child") == status
        recorded = await drained(events)
        assert [event.kind for event in recorded].count(EventKind.STOPPED) == 1
        assert recorded[-1].kind is EventKind.STOPPED
        assert recorded[-1].incarnation == status.incarnation
        assert all(event.time <= stopped_at for event in recorded)
        assert max(event.incarnation for event in recorded) == status.incarnation
        # The child only ever exits on its own by raising: a stop is never reported as an exit.
        assert all(event.error is not None for event in recorded if event.kind is EventKind.EXITED)

    return scenario


_MOMENTS = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])


@settings(max_examples=300, deadline=None)
@given(lifetime=_MOMENTS, stop_at=_MOMENTS, delay=_MOMENTS, before_started=st.booleans())
def test_no_incarnation_starts_after_stop_child_returns_however_stop_and_crash_interleave(
    lifetime: float, stop_at: float, delay: float, before_started: bool
) -> None:
    # A sync test: each example gets its own trio.run and MockClock. Equal
    # moments make the crash, the restart and the stop land on the same tick,
    # where trio's scheduler picks an order at random.
    if lifetime == 0.0 and delay == 0.0:
        delay = 0.5  # a zero-time crash loop would never let virtual time advance
    trio.run(
        _raced_scenario(lifetime, stop_at, delay, before_started),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )


async def test_a_stop_racing_a_concurrent_crash_from_another_task_is_final(
    autojump_clock: trio.testing.MockClock,
) -> None:
    for lifetime in (0.5, 1.0, 1.5):
        backoff = Backoff(initial=0.5, jitter=0.0)
        async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
            await supervisor.start_child(ChildSpec("child", crashes_after(lifetime)))
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(supervisor.stop_child, "child")
                    await trio.sleep(0.5)
            incarnation = supervisor.status("child").incarnation
            await trio.sleep(10)
            assert supervisor.status("child").incarnation == incarnation
            assert supervisor.status("child").state is ChildState.STOPPED


async def test_leaving_the_block_stops_children_in_reverse_start_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stopped: list[str] = []

    def remembers_stop(name: str) -> Run:
        async def run(context: ChildContext) -> None:
            context.started()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await trio.sleep(1)  # a bounded cleanup: the next stop waits for it
                stopped.append(name)

        return run

    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        for name in ("a", "b", "c"):
            await supervisor.start_child(ChildSpec(name, remembers_stop(name)))
        await supervisor.stop_child("b")
        await supervisor.start_child(ChildSpec("b", remembers_stop("b")))  # now the latest
    assert stopped == ["b", "b", "c", "a"]
    recorded = await drained(events)
    stops = [(event.name, event.time) for event in recorded if event.kind is EventKind.STOPPED]
    assert stops == [("b", 1.0), ("b", 2.0), ("c", 3.0), ("a", 4.0)]


async def test_cancelling_the_block_still_stops_children_one_by_one_in_reverse_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    order: list[str] = []

    def slow_to_stop(name: str) -> Run:
        async def run(context: ChildContext) -> None:
            context.started()
            try:
                await trio.sleep_forever()
            finally:
                order.append(f"{name} cancelled at {trio.current_time():g}")
                with trio.CancelScope(shield=True):
                    await trio.sleep(1)

        return run

    with trio.move_on_after(5):
        async with Supervisor.open() as supervisor:
            await supervisor.start_child(ChildSpec("a", slow_to_stop("a")))
            await supervisor.start_child(ChildSpec("b", slow_to_stop("b")))
            await trio.sleep_forever()
    assert order == ["b cancelled at 5", "a cancelled at 6"]
    assert trio.current_time() == 7


async def test_a_child_stuck_in_a_shield_is_abandoned_at_its_deadline_and_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("early", serve_forever, shutdown_timeout=1.0))
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(100.0), shutdown_timeout=2.0))
        status = await supervisor.stop_child("stuck")
        assert trio.current_time() == 2
        assert status.state is ChildState.ABANDONED
        assert isinstance(status.error, ChildAbandoned)
        with pytest.raises(SupervisorError, match="still abandoned"):
            await supervisor.start_child(ChildSpec("stuck", serve_forever))
    # trio cannot leave a nursery while a task runs: the block ends when the shield does.
    assert trio.current_time() == 100
    assert supervisor.status("stuck").state is ChildState.STOPPED
    recorded = [(event.kind, event.name, event.time) for event in await drained(events)]
    assert recorded == [
        (EventKind.STARTED, "early", 0.0),
        (EventKind.STARTED, "stuck", 0.0),
        (EventKind.STOPPED, "stuck", 2.0),
        (EventKind.STOPPED, "early", 2.0),  # stopped on time, not behind the stuck child
        (EventKind.EXITED, "stuck", 100.0),  # the abandoned task finally ended
    ]


async def test_shutdown_abandons_a_stuck_child_and_stops_the_others_within_their_deadlines(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("first", ignores_cancellation_for(0.5)))
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(50.0), shutdown_timeout=3.0))
        await supervisor.start_child(ChildSpec("last", serve_forever))
    recorded = [(event.kind, event.name, event.time) for event in await drained(events)]
    assert recorded[3:] == [
        (EventKind.STOPPED, "last", 0.0),
        (EventKind.STOPPED, "stuck", 3.0),
        (EventKind.STOPPED, "first", 3.5),
        (EventKind.EXITED, "stuck", 50.0),
    ]
    assert trio.current_time() == 50


async def test_concurrent_stops_of_a_stuck_child_report_the_abandonment_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(10.0), shutdown_timeout=2.0))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.stop_child, "stuck")
            await trio.sleep(1)
            nursery.start_soon(supervisor.stop_child, "stuck")
        assert trio.current_time() == 2  # the second stop shares the first one's deadline
    recorded = await drained(events)
    abandoned = [event for event in recorded if isinstance(event.error, ChildAbandoned)]
    assert len(abandoned) == 1


async def test_stopping_a_child_that_already_ended_changes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def done(context: ChildContext) -> None:
        context.started()

    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", done, restart=Restart.TRANSIENT))
        await trio.sleep(1)
        status = await supervisor.stop_child("child")
        assert status.state is ChildState.EXITED
    assert [event.kind for event in await drained(events)] == [EventKind.STARTED, EventKind.EXITED]


async def test_a_crash_during_shutdown_is_not_restarted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def crashes_when_told(context: ChildContext) -> None:
        context.started()
        await trio.sleep(1.5)  # while "slow" is being stopped
        raise Boom("late crash")

    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("crasher", crashes_when_told))
        await supervisor.start_child(ChildSpec("slow", ignores_cancellation_for(2.0)))
        await trio.sleep(1)
    assert supervisor.status("crasher").state is ChildState.EXITED
    assert supervisor.status("crasher").incarnation == 1


async def test_supervisor_opened_in_a_cancelled_scope_closes_instead_of_hanging() -> None:
    # A cancel landing while the supervisor starts must still run its shutdown.
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            scope.cancel()
            async with Supervisor.open():
                await trio.sleep_forever()
    assert scope.cancelled_caught


async def test_an_infinite_shutdown_timeout_waits_for_the_child_however_long(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("patient", ignores_cancellation_for(1e6), shutdown_timeout=math.inf))
        status = await supervisor.stop_child("patient")
        assert (status.state, status.error) == (ChildState.STOPPED, None)
        assert trio.current_time() == 1e6
    assert [event.kind for event in await drained(events)] == [EventKind.STARTED, EventKind.STOPPED]
