"""Strategies: which siblings a restart takes along, in which order, and why (R-SUP).

Every test runs on trio's MockClock with autojump. The children below take
0.25 s to start and 1 s to clean up when cancelled, so the order in which a
strategy stops and starts them shows in the event times.
"""

from __future__ import annotations

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
    crashes_once_after,
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
    ChildSpec,
    ChildState,
    EventKind,
    Restart,
    RestartIntensity,
    SiblingRestart,
    Strategy,
    Supervisor,
)

STARTED, EXITED, RESTARTING, STOPPED, GAVE_UP = (
    EventKind.STARTED,
    EventKind.EXITED,
    EventKind.RESTARTING,
    EventKind.STOPPED,
    EventKind.GAVE_UP,
)
HALF_SECOND = Backoff(initial=0.5, multiplier=1.0, jitter=0.0)


def member(crashes_after: float | None = None) -> Run:
    """Starts in 0.25 s; cleans up for 1 s when cancelled; incarnation 1 crashes after ``crashes_after``."""

    async def run(context: ChildContext) -> None:
        try:
            await trio.sleep(0.25)
            context.started()
            if crashes_after is not None and context.incarnation == 1:
                await trio.sleep(crashes_after)
                raise Boom(f"{context.name} incarnation {context.incarnation}")
            await trio.sleep_forever()
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await trio.sleep(1)
            raise

    return run


async def three_members(strategy: Strategy, seen: list[ChildEvent], leave_at: float) -> Supervisor:
    """a, b, c in start order (up at 0.25, 0.5, 0.75); b crashes at 1.5; the block is left at ``leave_at``."""
    async with Supervisor.open(
        strategy=strategy, intensity=GENEROUS, backoff=HALF_SECOND, on_event=seen.append
    ) as supervisor:
        await supervisor.start_child(ChildSpec("a", member()))
        await supervisor.start_child(ChildSpec("b", member(crashes_after=1.0)))
        await supervisor.start_child(ChildSpec("c", member()))
        await trio.sleep(leave_at - trio.current_time())
    return supervisor


async def steady_and_crasher(seen: list[ChildEvent], backoff: float, leave_at: float) -> None:
    """Under one_for_all: a serves, b (up at 0.25) crashes at 1; restarts wait ``backoff``; left at ``leave_at``."""
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL,
        intensity=GENEROUS,
        backoff=Backoff(initial=backoff, jitter=0.0),
        on_event=seen.append,
    ) as supervisor:
        await supervisor.start_child(ChildSpec("a", serve_forever))
        await supervisor.start_child(ChildSpec("b", member(crashes_after=0.75)))
        await trio.sleep(leave_at - trio.current_time())


async def test_one_for_one_restarts_only_the_child_that_exited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    await three_members(Strategy.ONE_FOR_ONE, seen, leave_at=5.0)
    assert timeline(seen)[3:7] == [
        (EXITED, "b", 1, 1.5),
        (RESTARTING, "b", 1, 1.5),
        (STARTED, "b", 2, 2.25),
        (STOPPED, "c", 1, 6.0),
    ]


async def test_one_for_all_stops_the_others_in_reverse_order_then_restarts_all_in_start_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    supervisor = await three_members(Strategy.ONE_FOR_ALL, seen, leave_at=5.0)
    assert timeline(seen) == [
        (STARTED, "a", 1, 0.25),
        (STARTED, "b", 1, 0.5),
        (STARTED, "c", 1, 0.75),
        (EXITED, "b", 1, 1.5),
        (RESTARTING, "b", 1, 1.5),  # its backoff: 0.5 s
        (STOPPED, "c", 1, 2.5),  # reverse start order, one at a time
        (RESTARTING, "c", 1, 2.5),
        (STOPPED, "a", 1, 3.5),
        (RESTARTING, "a", 1, 3.5),
        (STARTED, "a", 2, 3.75),  # start order, each once the one before is up
        (STARTED, "b", 2, 4.0),
        (STARTED, "c", 2, 4.25),
        (STOPPED, "c", 2, 6.0),  # the shutdown
        (STOPPED, "b", 2, 7.0),
        (STOPPED, "a", 2, 8.0),
    ]
    assert [event.delay for event in seen if event.kind is RESTARTING] == [0.5, 0.0, 0.0]
    assert [status.incarnation for status in supervisor.children()] == [2, 2, 2]


async def test_a_strategy_stop_and_restart_carry_their_reason(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    statuses: list[tuple[ChildState, BaseException | None]] = []
    supervisor_box: list[Supervisor] = []

    def record(event: ChildEvent) -> None:
        seen.append(event)
        if event.name == "c" and supervisor_box:
            status = supervisor_box[0].status("c")
            statuses.append((status.state, status.error))

    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=HALF_SECOND, on_event=record
    ) as supervisor:
        supervisor_box.append(supervisor)
        await supervisor.start_child(ChildSpec("b", member(crashes_after=1.0)))
        await supervisor.start_child(ChildSpec("c", member()))
        await trio.sleep(5)
    crash = next(event for event in seen if event.kind is EXITED)
    stopped, restarting = [event for event in seen if event.name == "c" and event.kind in (STOPPED, RESTARTING)][:2]
    assert isinstance(stopped.error, SiblingRestart)
    assert restarting.error is stopped.error
    assert (stopped.error.sibling, stopped.error.incarnation) == ("b", 1)
    assert stopped.error.__cause__ is crash.error
    assert "'b'" in str(stopped.error) and "one_for_all" in str(stopped.error)
    # Meanwhile the status says the same.
    assert statuses[1:3] == [
        (ChildState.STOPPING, None),
        (ChildState.RESTARTING, stopped.error),
    ]


async def test_rest_for_one_restarts_the_child_and_those_started_after_it_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    await three_members(Strategy.REST_FOR_ONE, seen, leave_at=5.0)
    assert timeline(seen)[3:10] == [
        (EXITED, "b", 1, 1.5),
        (RESTARTING, "b", 1, 1.5),
        (STOPPED, "c", 1, 2.5),
        (RESTARTING, "c", 1, 2.5),
        (STARTED, "b", 2, 2.75),
        (STARTED, "c", 2, 3.0),
        (STOPPED, "c", 2, 6.0),
    ]
    assert ("a", 2) not in {(event.name, event.incarnation) for event in seen}


async def test_a_strategy_restart_waits_out_the_backoff_of_the_child_that_exited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    await steady_and_crasher(seen, backoff=4.0, leave_at=10.25)
    assert timeline(seen)[2:8] == [
        (EXITED, "b", 1, 1.0),
        (RESTARTING, "b", 1, 1.0),
        (STOPPED, "a", 1, 1.0),
        (RESTARTING, "a", 1, 1.0),
        (STARTED, "a", 2, 5.0),
        (STARTED, "b", 2, 5.25),
    ]
    assert [event.delay for event in seen if event.kind is RESTARTING] == [4.0, 4.0]


async def test_a_strategy_takes_along_neither_ended_children_nor_restarts_temporary_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def finishes(context: ChildContext) -> None:
        context.started()

    seen: list[ChildEvent] = []
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append
    ) as supervisor:
        await supervisor.start_child(ChildSpec("done", finishes, restart=Restart.TRANSIENT))
        await supervisor.start_child(ChildSpec("temporary", serve_forever, restart=Restart.TEMPORARY))
        await supervisor.start_child(ChildSpec("transient", serve_forever, restart=Restart.TRANSIENT))
        await supervisor.start_child(ChildSpec("crasher", member(crashes_after=1.0)))
        await trio.sleep(3)
        states = {status.name: (status.state, status.incarnation) for status in supervisor.children()}
        temporary = supervisor.status("temporary")
    assert states == {
        "done": (ChildState.EXITED, 1),
        "temporary": (ChildState.STOPPED, 1),
        "transient": (ChildState.RUNNING, 2),
        "crasher": (ChildState.RUNNING, 2),
    }
    assert isinstance(temporary.error, SiblingRestart)
    temporary_events = [(event.kind, event.time) for event in seen if event.name == "temporary"]
    assert temporary_events == [(STARTED, 0.0), (STOPPED, 1.25)]


async def test_a_sibling_stuck_past_its_deadline_is_abandoned_and_left_out_of_the_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append
    ) as supervisor:
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(10.0), shutdown_timeout=2.0))
        await supervisor.start_child(ChildSpec("crasher", member(crashes_after=0.75)))  # crashes at 1
        await trio.sleep(4)
        assert supervisor.status("stuck").state is ChildState.ABANDONED
        assert supervisor.status("crasher").state is ChildState.RUNNING
    assert timeline(seen)[2:8] == [
        (EXITED, "crasher", 1, 1.0),
        (RESTARTING, "crasher", 1, 1.0),
        (STOPPED, "stuck", 1, 3.0),  # abandoned at its deadline
        (STARTED, "crasher", 2, 3.25),  # the restart goes on without it
        (STOPPED, "crasher", 2, 5.25),  # the shutdown
        (EXITED, "stuck", 1, 11.0),  # the abandoned task finally ended
    ]
    assert isinstance(seen[4].error, ChildAbandoned)
    assert supervisor.status("stuck").state is ChildState.STOPPED


async def test_a_restart_that_fails_during_a_strategy_restart_starts_another_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def fails_to_reconnect_once(context: ChildContext) -> None:
        if context.incarnation == 2:
            raise Boom("cannot reconnect")
        context.started()
        if context.incarnation == 1:
            await trio.sleep(1)
            raise Boom("lost")
        await trio.sleep_forever()

    seen: list[ChildEvent] = []
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append
    ) as supervisor:
        await supervisor.start_child(ChildSpec("a", serve_forever))
        await supervisor.start_child(ChildSpec("b", fails_to_reconnect_once))
        await supervisor.start_child(ChildSpec("c", serve_forever))
        await trio.sleep(2)
    assert [(kind, name, incarnation) for kind, name, incarnation, _ in timeline(seen)[3:-3]] == [
        (EXITED, "b", 1),
        (RESTARTING, "b", 1),
        (STOPPED, "c", 1),
        (RESTARTING, "c", 1),
        (STOPPED, "a", 1),
        (RESTARTING, "a", 1),
        (STARTED, "a", 2),
        (EXITED, "b", 2),  # the restart of b fails before reporting started: a crash
        (RESTARTING, "b", 2),
        (STOPPED, "a", 2),  # so a, already back, goes down again; c never started
        (RESTARTING, "a", 2),
        (STARTED, "a", 3),
        (STARTED, "b", 3),
        (STARTED, "c", 2),
    ]


async def test_an_overlapping_restart_takes_over_the_pending_one_and_honours_both_delays(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    async with Supervisor.open(strategy=Strategy.REST_FOR_ONE, intensity=GENEROUS, on_event=seen.append) as supervisor:
        quick = Backoff(initial=1.0, jitter=0.0)
        slow = Backoff(initial=3.0, jitter=0.0)
        await supervisor.start_child(ChildSpec("a", crashes_once_after(2.0), backoff=quick))
        await supervisor.start_child(ChildSpec("b", serve_forever))
        await supervisor.start_child(ChildSpec("c", crashes_once_after(1.0), backoff=slow))
        await trio.sleep(10)
    assert [
        (kind, name, incarnation, time, event.delay)
        for (kind, name, incarnation, time), event in zip(timeline(seen)[3:11], seen[3:11], strict=True)
    ] == [
        (EXITED, "c", 1, 1.0, None),
        (RESTARTING, "c", 1, 1.0, 3.0),  # c alone: nothing was started after it
        (EXITED, "a", 1, 2.0, None),
        (RESTARTING, "a", 1, 2.0, 2.0),  # a's own 1 s, but c's pending 3 s still holds
        (STOPPED, "b", 1, 2.0, None),
        (RESTARTING, "b", 1, 2.0, 2.0),
        (STARTED, "a", 2, 4.0, None),  # then all three in start order
        (STARTED, "b", 2, 4.0, None),
    ]
    assert timeline(seen)[11] == (STARTED, "c", 2, 4.0)


async def test_a_child_stopped_while_waiting_for_a_strategy_restart_stays_stopped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=Backoff(initial=5.0, jitter=0.0)
    ) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("a", serve_forever))
        await supervisor.start_child(ChildSpec("b", member(crashes_after=0.75)))
        await wait_for(events, RESTARTING)
        await wait_for(events, RESTARTING)  # a's, once it is down
        assert supervisor.status("a").state is ChildState.RESTARTING
        assert (await supervisor.stop_child("a")).state is ChildState.STOPPED
        await trio.sleep(10)
        assert supervisor.status("a").incarnation == 1
        assert supervisor.status("b").state is ChildState.RUNNING


async def test_shutdown_during_a_strategy_restart_starts_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    await steady_and_crasher(seen, backoff=5.0, leave_at=2.0)
    assert timeline(seen)[2:] == [
        (EXITED, "b", 1, 1.0),
        (RESTARTING, "b", 1, 1.0),
        (STOPPED, "a", 1, 1.0),
        (RESTARTING, "a", 1, 1.0),
        (STOPPED, "b", 1, 2.0),  # both pending restarts dropped, in reverse start order
        (STOPPED, "a", 1, 2.0),
    ]


async def test_a_child_in_its_first_start_is_not_taken_along(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow_first_start(context: ChildContext) -> None:
        await trio.sleep(3)
        context.started()
        await trio.sleep_forever()

    async with Supervisor.open(strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("crasher", member(crashes_after=0.75)))
        status = await supervisor.start_child(ChildSpec("newcomer", slow_first_start))  # crasher exits at 1
        assert (status.state, status.incarnation) == (ChildState.RUNNING, 1)
        assert trio.current_time() == 3.25
        assert supervisor.status("crasher").incarnation == 2


async def test_a_child_that_gives_up_under_one_for_all_leaves_its_siblings_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL,
        intensity=RestartIntensity(max_restarts=1, period=100.0),
        backoff=NO_DELAY,
        on_event=seen.append,
    ) as supervisor:
        await supervisor.start_child(ChildSpec("steady", serve_forever))

        async def crashes_every_second(context: ChildContext) -> None:
            context.started()
            await trio.sleep(1)
            raise Boom("again")

        await supervisor.start_child(ChildSpec("crasher", crashes_every_second))
        await trio.sleep(5)
        # Restarted along with the crasher's first restart; its giving up takes nothing along.
        assert (supervisor.status("steady").state, supervisor.status("steady").incarnation) == (
            ChildState.RUNNING,
            2,
        )
        assert supervisor.status("crasher").state is ChildState.GAVE_UP
    assert [(event.kind, event.name) for event in seen if event.kind is GAVE_UP] == [(GAVE_UP, "crasher")]


# -- races -----------------------------------------------------------------------------------


async def _stop_racing_a_strategy(strategy: Strategy, crash_at: float, stop_at: float, delay: float) -> None:
    seen: list[ChildEvent] = []
    backoff = Backoff(initial=delay, multiplier=1.0, jitter=0.0)
    async with Supervisor.open(strategy=strategy, intensity=GENEROUS, backoff=backoff, on_event=seen.append) as sup:
        await sup.start_child(ChildSpec("a", crashes_after(crash_at + 0.5)))
        await sup.start_child(ChildSpec("b", crashes_after(crash_at)))
        await sup.start_child(ChildSpec("c", serve_forever))
        await trio.sleep(stop_at)
        stopped = await sup.stop_child("b")
        stopped_at = trio.current_time()
        assert stopped.state is ChildState.STOPPED
        await trio.sleep(crash_at + delay + 10)
        assert sup.status("b") == stopped
        # every other child is running, or waiting for its next incarnation: none is lost
        for status in sup.children():
            if status.name != "b":
                assert status.state in (ChildState.RUNNING, ChildState.RESTARTING, ChildState.STARTING)
    after_stop = [event for event in seen if event.name == "b" and event.time > stopped_at]
    assert after_stop == []
    # never two incarnations of one name at once
    for name in "abc":
        running: set[int] = set()
        for event in seen:
            if event.name != name:
                continue
            if event.kind is STARTED:
                assert not running, (name, running, event)
                running.add(event.incarnation)
            elif event.kind in (EXITED, STOPPED):
                running.discard(event.incarnation)


_MOMENTS = st.sampled_from([0.0, 0.5, 1.0, 1.5])


@settings(max_examples=150, deadline=None)
@given(
    strategy=st.sampled_from(list(Strategy)),
    crash_at=st.sampled_from([0.5, 1.0, 1.5]),
    stop_at=_MOMENTS,
    delay=_MOMENTS,
)
def test_no_incarnation_starts_after_stop_child_returns_whatever_the_strategy(
    strategy: Strategy, crash_at: float, stop_at: float, delay: float
) -> None:
    trio.run(
        _stop_racing_a_strategy,
        strategy,
        crash_at,
        stop_at,
        delay,
        clock=trio.testing.MockClock(autojump_threshold=0),
    )


@pytest.mark.parametrize("strategy", list(Strategy))
async def test_strategy_is_chosen_per_supervisor(autojump_clock: trio.testing.MockClock, strategy: Strategy) -> None:
    async with (
        Supervisor.open(strategy=strategy, intensity=GENEROUS, backoff=NO_DELAY) as first,
        Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as second,
    ):
        for supervisor in (first, second):
            await supervisor.start_child(ChildSpec("steady", serve_forever))
            await supervisor.start_child(ChildSpec("crasher", member(crashes_after=0.75)))
        await trio.sleep(2)
        expected = 2 if strategy is Strategy.ONE_FOR_ALL else 1  # rest_for_one: steady came first
        assert first.status("steady").incarnation == expected
        assert second.status("steady").incarnation == 1  # the default is one_for_one


async def test_a_permanent_child_that_returns_takes_its_siblings_along_with_no_error_as_cause(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def returns_once(context: ChildContext) -> None:
        context.started()
        if context.incarnation == 1:
            await trio.sleep(1)
            return
        await trio.sleep_forever()

    seen: list[ChildEvent] = []
    async with Supervisor.open(
        strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append
    ) as supervisor:
        await supervisor.start_child(ChildSpec("sibling", serve_forever))
        await supervisor.start_child(ChildSpec("permanent", returns_once))
        await trio.sleep(2)
        assert supervisor.status("sibling").incarnation == 2
    reason = next(event.error for event in seen if event.name == "sibling" and event.kind is STOPPED)
    assert isinstance(reason, SiblingRestart)
    assert reason.__cause__ is None


async def test_a_child_waiting_for_its_restart_is_told_when_an_overlapping_one_postpones_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # rest_for_one: c restarts alone at 2; at 1.5, a (started first) crashes with
    # a 3 s backoff, which takes b and c along and postpones c to 4.5.
    seen: list[ChildEvent] = []
    async with Supervisor.open(strategy=Strategy.REST_FOR_ONE, intensity=GENEROUS, on_event=seen.append) as supervisor:
        await supervisor.start_child(ChildSpec("a", crashes_once_after(1.5), backoff=Backoff(initial=3.0, jitter=0.0)))
        await supervisor.start_child(ChildSpec("b", serve_forever))
        await supervisor.start_child(ChildSpec("c", crashes_once_after(1.0), backoff=Backoff(initial=1.0, jitter=0.0)))
        await trio.sleep(10)
    restarting = [(event.name, event.time, event.delay) for event in seen if event.kind is RESTARTING]
    assert restarting == [
        ("c", 1.0, 1.0),
        ("a", 1.5, 3.0),
        ("c", 1.5, 3.0),  # postponed, and told so
        ("b", 1.5, 3.0),
    ]
    assert [(event.name, event.time) for event in seen if event.kind is STARTED][3:] == [
        ("a", 4.5),
        ("b", 4.5),
        ("c", 4.5),
    ]
