"""Restart semantics: policies, first starts, backoff, intensity, give-up, escalation (R-SUP).

Every test runs on trio's MockClock with autojump, so "seconds" below are
virtual and exact.
"""

from __future__ import annotations

import itertools
from random import Random

import pytest
import trio
import trio.testing
from supervisor_support import (
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
    ChildContext,
    ChildEvent,
    ChildNotStarted,
    ChildSpec,
    ChildState,
    EventKind,
    EventSubscription,
    Restart,
    RestartIntensity,
    RestartIntensityExceeded,
    Strategy,
    Supervisor,
    SupervisorError,
    UnknownChild,
)

GENEROUS = RestartIntensity(max_restarts=100, period=1.0)


def kinds(events: list[ChildEvent], name: str | None = None) -> list[EventKind]:
    return [event.kind for event in events if name is None or event.name == name]


def returns_after(seconds: float) -> Run:
    async def run(context: ChildContext) -> None:
        context.started()
        await trio.sleep(seconds)

    return run


@pytest.mark.parametrize(
    ("restart", "ending", "expected_incarnations"),
    [
        (Restart.PERMANENT, "error", 4),
        (Restart.PERMANENT, "return", 4),
        (Restart.TRANSIENT, "error", 4),
        (Restart.TRANSIENT, "return", 1),
        (Restart.TEMPORARY, "error", 1),
        (Restart.TEMPORARY, "return", 1),
    ],
)
async def test_restart_policy_decides_which_exits_are_restarted(
    autojump_clock: trio.testing.MockClock,
    restart: Restart,
    ending: str,
    expected_incarnations: int,
) -> None:
    run = crashes_after(1.0) if ending == "error" else returns_after(1.0)
    intensity = RestartIntensity(max_restarts=3, period=100.0)
    async with Supervisor.open(intensity=intensity, backoff=NO_DELAY) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", run, restart=restart))
        await trio.sleep(50)
        status = supervisor.status("child")
    recorded = await drained(events)
    assert status.incarnation == expected_incarnations
    assert kinds(recorded).count(EventKind.STARTED) == expected_incarnations
    assert kinds(recorded).count(EventKind.RESTARTING) == expected_incarnations - 1
    if expected_incarnations == 1:
        assert status.state is ChildState.EXITED
        assert kinds(recorded) == [EventKind.STARTED, EventKind.EXITED]
    else:
        # Three restarts are the whole budget: the fourth exit gives the child up.
        assert status.state is ChildState.GAVE_UP
        assert kinds(recorded)[-2:] == [EventKind.EXITED, EventKind.GAVE_UP]


async def test_failed_first_start_raises_the_childs_error_and_is_not_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempts = 0

    async def refuses(context: ChildContext) -> None:
        nonlocal attempts
        attempts += 1
        await trio.sleep(1)
        raise Boom("dial failed")

    async with Supervisor.open(backoff=NO_DELAY) as supervisor:
        events = supervisor.subscribe()
        with pytest.raises(Boom, match="dial failed"):
            await supervisor.start_child(ChildSpec("child", refuses, restart=Restart.PERMANENT))
        await trio.sleep(10)
        status = supervisor.status("child")
    assert attempts == 1
    assert status.state is ChildState.EXITED
    assert isinstance(status.error, Boom)
    recorded = await drained(events)
    assert kinds(recorded) == [EventKind.EXITED]
    assert recorded[0].error is status.error


async def test_returning_before_started_makes_start_child_raise_child_not_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def forgets_to_report(context: ChildContext) -> None:
        await trio.sleep(1)

    async with Supervisor.open() as supervisor:
        with pytest.raises(ChildNotStarted, match="returned before reporting started"):
            await supervisor.start_child(ChildSpec("child", forgets_to_report))
        assert supervisor.status("child").state is ChildState.EXITED


async def test_start_child_returns_only_after_the_child_reported_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow_to_start(context: ChildContext) -> None:
        await trio.sleep(3)
        context.started()
        await trio.sleep_forever()

    async with Supervisor.open() as supervisor:
        status = await supervisor.start_child(ChildSpec("child", slow_to_start))
        assert trio.current_time() == 3
        assert (status.state, status.incarnation) == (ChildState.RUNNING, 1)


async def test_a_restart_that_fails_before_started_is_a_crash_and_is_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def fails_on_incarnations_two_and_three(context: ChildContext) -> None:
        if context.incarnation in (2, 3):
            raise Boom("cannot reconnect yet")
        context.started()
        await trio.sleep(1)
        raise Boom("connection lost")

    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", fails_on_incarnations_two_and_three))
        await trio.sleep(1.5)
    recorded = await drained(events)
    assert [(event.kind, event.incarnation) for event in recorded] == [
        (EventKind.STARTED, 1),
        (EventKind.EXITED, 1),
        (EventKind.RESTARTING, 1),
        (EventKind.EXITED, 2),
        (EventKind.RESTARTING, 2),
        (EventKind.EXITED, 3),
        (EventKind.RESTARTING, 3),
        (EventKind.STARTED, 4),
        (EventKind.STOPPED, 4),
    ]


async def test_restart_delays_are_the_seeded_backoff_sequence(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backoff = Backoff(initial=1.0, multiplier=2.0, maximum=10.0, jitter=0.5, reset_after=1000)
    async with Supervisor.open(
        intensity=RestartIntensity(max_restarts=10, period=1000.0),
        backoff=backoff,
        random=Random(42),
    ) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(0.0)))
        await trio.sleep(100)
    recorded = await drained(events)
    restarting = [event for event in recorded if event.kind is EventKind.RESTARTING]
    expected = [
        0.6802866007710582,
        1.974989244777333,
        3.4499413632617615,
        7.1071570474047085,
        6.317643929179938,
        6.616502562885444,
    ]
    assert [event.delay for event in restarting[:6]] == expected
    started_times = [event.time for event in recorded if event.kind is EventKind.STARTED]
    gaps = [later - earlier for earlier, later in itertools.pairwise(started_times)]
    assert gaps[:6] == pytest.approx(expected)


async def test_backoff_starts_over_after_the_child_stayed_up_for_reset_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lifetimes = iter([0.0, 0.0, 0.0, 20.0, 0.0])

    async def unstable(context: ChildContext) -> None:
        context.started()
        await trio.sleep(next(lifetimes, 1000.0))
        raise Boom("lost")

    backoff = Backoff(initial=1.0, multiplier=2.0, maximum=60.0, jitter=0.0, reset_after=10.0)
    intensity = RestartIntensity(max_restarts=10, period=1000.0)
    async with Supervisor.open(intensity=intensity, backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", unstable))
        await trio.sleep(100)
    delays = [event.delay for event in await drained(events) if event.kind is EventKind.RESTARTING]
    # 1, 2, 4 while crash-looping; after 20 s up it starts over at 1, then grows again.
    assert delays == [1.0, 2.0, 4.0, 1.0, 2.0]


async def test_child_is_given_up_with_its_last_error_when_restarts_exceed_the_intensity(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intensity = RestartIntensity(max_restarts=2, period=10.0)
    async with Supervisor.open(intensity=intensity, backoff=NO_DELAY) as supervisor:
        events = supervisor.subscribe()
        progress = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await wait_for(progress, EventKind.GAVE_UP)
        await trio.sleep(100)
        status = supervisor.status("child")
        assert supervisor.status("child").incarnation == 3  # stays stopped
    recorded = await drained(events)
    assert status.state is ChildState.GAVE_UP
    assert str(status.error) == "incarnation 3"
    gave_up = [event for event in recorded if event.kind is EventKind.GAVE_UP]
    assert len(gave_up) == 1
    assert (gave_up[0].incarnation, gave_up[0].error) == (3, status.error)
    assert EventKind.STOPPED not in kinds(recorded)  # nothing left to stop at exit


@pytest.mark.parametrize(
    ("lifetime", "survives"),
    [
        (4.0, False),  # restarts at 4 and 8 fill the budget, the crash at 12 exceeds it
        (5.0, True),  # each restart leaves the window as the next one is decided
    ],
)
async def test_intensity_window_slides_with_time(
    autojump_clock: trio.testing.MockClock, lifetime: float, survives: bool
) -> None:
    intensity = RestartIntensity(max_restarts=2, period=10.0)
    async with Supervisor.open(intensity=intensity, backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("child", crashes_after(lifetime)))
        await trio.sleep(202.5)
        status = supervisor.status("child")
    if survives:
        assert (status.state, status.incarnation) == (ChildState.RUNNING, 41)
    else:
        assert (status.state, status.incarnation) == (ChildState.GAVE_UP, 3)


async def test_a_child_intensity_overrides_the_supervisor_default(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        strict = RestartIntensity(max_restarts=1, period=100.0)
        await supervisor.start_child(ChildSpec("strict", crashes_after(1.0), intensity=strict))
        await supervisor.start_child(ChildSpec("lenient", crashes_after(1.0)))
        await trio.sleep(5.5)
        assert supervisor.status("strict").state is ChildState.GAVE_UP
        assert supervisor.status("strict").incarnation == 2
        assert supervisor.status("lenient").incarnation == 6


async def test_a_child_backoff_overrides_the_supervisor_default(
    autojump_clock: trio.testing.MockClock,
) -> None:
    slow = Backoff(initial=7.0, jitter=0.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0), backoff=slow))
        await trio.sleep(2)
    restarting = [event for event in await drained(events) if event.kind is EventKind.RESTARTING]
    assert [event.delay for event in restarting] == [7.0]


async def test_escalation_stops_every_child_in_reverse_order_and_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intensity = RestartIntensity(max_restarts=1, period=100.0)
    body_cancelled = False
    events: EventSubscription | None = None
    with pytest.raises(RestartIntensityExceeded) as raised:
        async with Supervisor.open(intensity=intensity, backoff=NO_DELAY, escalate=True) as supervisor:
            events = supervisor.subscribe()
            await supervisor.start_child(ChildSpec("first", serve_forever))
            await supervisor.start_child(ChildSpec("crasher", crashes_after(1.0)))
            await supervisor.start_child(ChildSpec("last", serve_forever))
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                body_cancelled = True
                raise
    assert body_cancelled
    assert isinstance(raised.value.__cause__, Boom)
    assert trio.current_time() == 2
    assert events is not None
    recorded = await drained(events)
    assert [(event.kind, event.name) for event in recorded[-3:]] == [
        (EventKind.GAVE_UP, "crasher"),
        (EventKind.STOPPED, "last"),
        (EventKind.STOPPED, "first"),
    ]


async def test_incarnations_continue_counting_when_a_stopped_name_is_started_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[int] = []

    async def records(context: ChildContext) -> None:
        seen.append(context.incarnation)
        context.started()
        await trio.sleep(1)
        raise Boom("lost")

    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("child", records))
        await trio.sleep(2.5)  # crashes at 1 and 2: incarnation 3 is running
        assert (await supervisor.stop_child("child")).incarnation == 3
        status = await supervisor.start_child(ChildSpec("child", records))
        assert status.incarnation == 4
        restarted = await supervisor.restart_child("child")
        assert restarted.incarnation == 5
    assert seen == [1, 2, 3, 4, 5]


async def test_start_child_after_give_up_starts_with_a_fresh_budget(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intensity = RestartIntensity(max_restarts=1, period=100.0)
    async with Supervisor.open(intensity=intensity, backoff=NO_DELAY) as supervisor:
        progress = supervisor.subscribe()
        spec = ChildSpec("child", crashes_after(1.0))
        await supervisor.start_child(spec)
        await wait_for(progress, EventKind.GAVE_UP)
        assert supervisor.status("child").incarnation == 2
        await supervisor.start_child(spec)
        await wait_for(progress, EventKind.GAVE_UP)
        assert supervisor.status("child").incarnation == 4


async def test_start_child_refuses_a_name_that_is_still_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        await supervisor.start_child(ChildSpec("child", serve_forever))
        with pytest.raises(SupervisorError, match=r"'child'.*still running"):
            await supervisor.start_child(ChildSpec("child", serve_forever))


async def test_status_follows_running_restarting_and_gave_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intensity = RestartIntensity(max_restarts=1, period=100.0)
    backoff = Backoff(initial=5.0, jitter=0.0)
    async with Supervisor.open(intensity=intensity, backoff=backoff) as supervisor:
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        assert supervisor.status("child").state is ChildState.RUNNING
        await trio.sleep(3)
        restarting = supervisor.status("child")
        assert (restarting.state, restarting.incarnation) == (ChildState.RESTARTING, 1)
        assert isinstance(restarting.error, Boom)
        await trio.sleep(3.5)
        assert supervisor.status("child").state is ChildState.RUNNING
        assert supervisor.status("child").error is None
        await trio.sleep(1)
        assert supervisor.status("child").state is ChildState.GAVE_UP
        assert [status.name for status in supervisor.children()] == ["child"]


async def test_unknown_child_names_raise_unknown_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        with pytest.raises(UnknownChild, match="'ghost'"):
            supervisor.status("ghost")
        with pytest.raises(UnknownChild):
            await supervisor.stop_child("ghost")
        with pytest.raises(LookupError):
            await supervisor.restart_child("ghost")


async def test_starting_on_a_closed_supervisor_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        pass
    with pytest.raises(SupervisorError, match="closed"):
        await supervisor.start_child(ChildSpec("child", serve_forever))


async def test_an_exception_from_the_block_is_reraised_unwrapped_after_children_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: EventSubscription | None = None
    with pytest.raises(KeyError):
        async with Supervisor.open() as supervisor:
            events = supervisor.subscribe()
            await supervisor.start_child(ChildSpec("child", serve_forever))
            raise KeyError("body failed")
    assert events is not None
    assert kinds(await drained(events)) == [EventKind.STARTED, EventKind.STOPPED]


async def test_reporting_started_twice_is_a_programming_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def reports_twice(context: ChildContext) -> None:
        context.started()
        context.started()

    async with Supervisor.open(backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("child", reports_twice, restart=Restart.TRANSIENT))
        await trio.sleep(0.1)
        status = supervisor.status("child")
    assert status.state is ChildState.GAVE_UP
    assert isinstance(status.error, RuntimeError)


async def test_restarts_count_against_the_intensity_when_decided_not_when_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Crashes at 1.1 and 5.2, 3 s of backoff between: the first restart was
    # decided at 1.1 (it ran at 4.1), so at 5.2 it is out of a 4 s window.
    intensity = RestartIntensity(max_restarts=1, period=4.0)
    backoff = Backoff(initial=3.0, multiplier=1.0, jitter=0.0)
    async with Supervisor.open(intensity=intensity, backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.1)))
        await trio.sleep(9)
    restarts = [event.time for event in await drained(events) if event.kind is EventKind.RESTARTING]
    assert restarts == pytest.approx([1.1, 5.2])


async def test_a_new_start_of_a_name_starts_its_backoff_afresh(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backoff = Backoff(initial=1.0, multiplier=2.0, jitter=0.0, reset_after=1000.0)
    async with Supervisor.open(intensity=GENEROUS, backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        spec = ChildSpec("child", crashes_after(0.5))
        await supervisor.start_child(spec)
        await trio.sleep(4.25)  # restarts after 1, then 2 s of delay...
        await supervisor.stop_child("child")
        await supervisor.start_child(spec)
        await trio.sleep(1)
    delays = [event.delay for event in await drained(events) if event.kind is EventKind.RESTARTING]
    assert delays == [1.0, 2.0, 1.0]  # ...and 1 s again after the new start


async def test_restart_child_restarts_only_that_child_whatever_the_strategy(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open(strategy=Strategy.ONE_FOR_ALL) as supervisor:
        await supervisor.start_child(ChildSpec("a", serve_forever))
        await supervisor.start_child(ChildSpec("b", serve_forever))
        status = await supervisor.restart_child("a")
        assert (status.state, status.incarnation) == (ChildState.RUNNING, 2)
        assert supervisor.status("b").incarnation == 1
        assert [status.name for status in supervisor.children()] == ["b", "a"]  # a is now the latest start


async def test_restart_child_raises_a_failed_start_without_retrying_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def fails_after_the_first(context: ChildContext) -> None:
        if context.incarnation > 1:
            raise Boom("refused")
        context.started()
        await trio.sleep_forever()

    async with Supervisor.open(backoff=NO_DELAY) as supervisor:
        await supervisor.start_child(ChildSpec("child", fails_after_the_first))
        with pytest.raises(Boom, match="refused"):
            await supervisor.restart_child("child")
        await trio.sleep(5)
        assert (supervisor.status("child").state, supervisor.status("child").incarnation) == (ChildState.EXITED, 2)


async def test_restart_child_refuses_a_child_its_stop_abandoned(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        await supervisor.start_child(ChildSpec("child", ignores_cancellation_for(10.0), shutdown_timeout=1.0))
        with pytest.raises(SupervisorError, match="still abandoned"):
            await supervisor.restart_child("child")
        assert trio.current_time() == 1
