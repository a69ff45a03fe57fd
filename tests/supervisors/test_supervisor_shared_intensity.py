"""The supervisor-wide restart intensity, OTP's MaxR/MaxT over all children (R-SUP).

On trio's MockClock with autojump: times are virtual and exact.
"""

from __future__ import annotations

import trio
import trio.testing
from supervisor_support import (
    GENEROUS,
    NO_DELAY,
    Boom,
    block_ended_by,
    crashes_after,
    ignores_cancellation_for,
    serve_forever,
)

from supervisors import (
    ChildContext,
    ChildEvent,
    ChildSpec,
    ChildState,
    EventKind,
    RestartIntensity,
    RestartIntensityExceeded,
    Strategy,
    Supervisor,
)


async def test_restarts_of_all_children_together_spend_the_supervisor_intensity_then_it_stops_and_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # a crashes at 1, 2, 3...; b at 1.25, 2.5... Restarts at 1, 1.25 and 2 fill a
    # budget of 3 per 10 s; b's crash at 2.5 would be the fourth. Each child
    # alone is far inside its own (generous) intensity.
    seen: list[ChildEvent] = []
    ending = await block_ended_by(
        RestartIntensityExceeded,
        Supervisor.open(
            intensity=GENEROUS,
            supervisor_intensity=RestartIntensity(max_restarts=3, period=10.0),
            backoff=NO_DELAY,
            on_event=seen.append,
        ),
        [
            ChildSpec("first", ignores_cancellation_for(1.0)),
            ChildSpec("a", crashes_after(1.0)),
            ChildSpec("b", crashes_after(1.25)),
            ChildSpec("last", ignores_cancellation_for(1.0)),
        ],
    )
    supervisor = ending.supervisor
    assert ending.body_cancelled
    assert isinstance(ending.error.__cause__, Boom)
    assert str(ending.error.__cause__) == "incarnation 2"
    message = str(ending.error)
    assert "3 restarts in 10 s" in message and "'b'" in message
    assert [(event.kind, event.name, event.time) for event in seen if event.kind is not EventKind.STARTED][-4:] == [
        (EventKind.GAVE_UP, "b", 2.5),
        (EventKind.EXITED, "a", 3.0),  # a crash while the shutdown runs: not restarted
        (EventKind.STOPPED, "last", 3.5),  # every other child stopped, in reverse start order
        (EventKind.STOPPED, "first", 4.5),
    ]
    assert [event.kind for event in seen].count(EventKind.RESTARTING) == 3
    assert supervisor.status("b").state is ChildState.GAVE_UP
    assert {status.name: status.state for status in supervisor.children()} == {
        "first": ChildState.STOPPED,
        "a": ChildState.EXITED,
        "b": ChildState.GAVE_UP,
        "last": ChildState.STOPPED,
    }


async def test_the_supervisor_intensity_window_slides_like_a_childs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Two children crashing every 5 s, 2.5 s apart: never more than 2 restarts in any 5 s.
    async with Supervisor.open(
        intensity=GENEROUS,
        supervisor_intensity=RestartIntensity(max_restarts=2, period=5.0),
        backoff=NO_DELAY,
    ) as supervisor:
        await supervisor.start_child(ChildSpec("a", crashes_after(5.0)))
        await trio.sleep(2.5)
        await supervisor.start_child(ChildSpec("b", crashes_after(5.0)))
        await trio.sleep(100)
        assert supervisor.status("a").incarnation == 21
        assert supervisor.status("b").incarnation == 20  # its 20th crash would be at 102.5


async def test_a_strategy_restart_counts_once_against_the_supervisor_intensity(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChildEvent] = []
    await block_ended_by(
        RestartIntensityExceeded,
        Supervisor.open(
            strategy=Strategy.ONE_FOR_ALL,
            intensity=GENEROUS,
            supervisor_intensity=RestartIntensity(max_restarts=1, period=100.0),
            backoff=NO_DELAY,
            on_event=seen.append,
        ),
        [ChildSpec("a", serve_forever), ChildSpec("b", serve_forever), ChildSpec("crasher", crashes_after(1.0))],
    )
    # One restart of all three at 1 fits a budget of one; the crash at 2 does not.
    assert [(event.name, event.incarnation) for event in seen if event.kind is EventKind.STARTED][3:] == [
        ("a", 2),
        ("b", 2),
        ("crasher", 2),
    ]
    assert [(event.kind, event.name, event.time) for event in seen][-4:] == [
        (EventKind.EXITED, "crasher", 2.0),
        (EventKind.GAVE_UP, "crasher", 2.0),
        (EventKind.STOPPED, "b", 2.0),
        (EventKind.STOPPED, "a", 2.0),
    ]


async def test_without_a_supervisor_intensity_only_each_childs_own_budget_applies(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open(intensity=RestartIntensity(max_restarts=5, period=10.0), backoff=NO_DELAY) as supervisor:
        for name in "abcdefgh":
            await supervisor.start_child(ChildSpec(name, crashes_after(2.0)))
        await trio.sleep(9)  # 8 children x 4 restarts: 32 restarts in 8 s, each child within 5 in 10 s
        assert {status.state for status in supervisor.children()} == {ChildState.RUNNING}


async def test_a_nested_supervisor_that_spends_its_intensity_is_restarted_by_its_parent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # OTP's escalation up a supervision tree: the inner supervisor's error leaves
    # its child's run like any crash, and the outer one restarts it.
    inner_runs: list[int] = []

    async def inner_supervisor(context: ChildContext) -> None:
        inner_runs.append(context.incarnation)
        async with Supervisor.open(
            intensity=GENEROUS,
            supervisor_intensity=RestartIntensity(max_restarts=1, period=100.0),
            backoff=NO_DELAY,
        ) as inner:
            await inner.start_child(ChildSpec("worker", crashes_after(1.0)))
            context.started()
            await trio.sleep_forever()

    seen: list[ChildEvent] = []
    async with Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append) as outer:
        await outer.start_child(ChildSpec("inner", inner_supervisor))
        await trio.sleep(5)
    crashes = [event for event in seen if event.kind is EventKind.EXITED]
    assert [(event.incarnation, event.time) for event in crashes] == [(1, 2.0), (2, 4.0)]
    assert all(isinstance(event.error, RestartIntensityExceeded) for event in crashes)
    assert inner_runs == [1, 2, 3]
