"""KeyboardInterrupt and SystemExit from a child: never restarted, they stop the supervisor (R-SUP).

On trio's MockClock with autojump: times are virtual and exact.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from supervisor_support import (
    GENEROUS,
    NO_DELAY,
    block_ended_by,
    crashes_after,
    ignores_cancellation_for,
    serve_forever,
    timeline,
)

from supervisors import (
    ChildContext,
    ChildEvent,
    ChildSpec,
    ChildState,
    EventKind,
    Strategy,
    Supervisor,
)

STARTED, EXITED, STOPPED = EventKind.STARTED, EventKind.EXITED, EventKind.STOPPED
INTERRUPTS = [KeyboardInterrupt, SystemExit]


@pytest.mark.parametrize("interrupt", INTERRUPTS)
async def test_an_interrupt_from_a_running_child_stops_every_sibling_in_order_and_leaves_the_block_as_is(
    autojump_clock: trio.testing.MockClock, interrupt: type[BaseException]
) -> None:
    seen: list[ChildEvent] = []
    ending = await block_ended_by(
        interrupt,
        Supervisor.open(intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append),
        [
            ChildSpec("first", ignores_cancellation_for(1.0)),
            ChildSpec("interrupted", crashes_after(1.0, interrupt)),
            ChildSpec("last", ignores_cancellation_for(1.0)),
        ],
    )
    assert type(ending.error) is interrupt  # the exception itself, not a group around it
    assert ending.body_cancelled
    assert timeline(seen)[3:] == [
        (EXITED, "interrupted", 1, 1.0),  # not restarted, though permanent
        (STOPPED, "last", 1, 2.0),  # the others: one by one, in reverse start order
        (STOPPED, "first", 1, 3.0),
    ]
    assert seen[3].error is ending.error
    status = ending.supervisor.status("interrupted")
    assert (status.state, status.error) == (ChildState.EXITED, ending.error)


@pytest.mark.parametrize("interrupt", INTERRUPTS)
async def test_an_interrupt_wins_over_a_pending_restart_and_a_strategy(
    autojump_clock: trio.testing.MockClock, interrupt: type[BaseException]
) -> None:
    seen: list[ChildEvent] = []
    await block_ended_by(
        interrupt,
        Supervisor.open(strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS, backoff=NO_DELAY, on_event=seen.append),
        [
            ChildSpec("steady", serve_forever),
            ChildSpec("interrupted", crashes_after(1.0, interrupt)),
            ChildSpec("crasher", crashes_after(1.0)),
        ],
    )
    # Whatever the order of the two exits at 1, nothing starts again after them.
    assert [event for event in seen if event.kind is STARTED and event.time > 0] == []


@pytest.mark.parametrize("interrupt", INTERRUPTS)
async def test_an_interrupt_in_a_first_start_comes_out_of_start_child_and_the_supervisor_goes_on(
    autojump_clock: trio.testing.MockClock, interrupt: type[BaseException]
) -> None:
    async def interrupted_while_starting(context: ChildContext) -> None:
        await trio.sleep(1)
        raise interrupt()

    seen: list[ChildEvent] = []
    async with Supervisor.open(on_event=seen.append) as supervisor:
        await supervisor.start_child(ChildSpec("steady", serve_forever))
        with pytest.raises(interrupt):
            await supervisor.start_child(ChildSpec("starting", interrupted_while_starting))
        assert supervisor.status("starting").state is ChildState.EXITED
        await trio.sleep(5)
        assert supervisor.status("steady").state is ChildState.RUNNING
    assert timeline(seen) == [
        (STARTED, "steady", 1, 0.0),
        (EXITED, "starting", 1, 1.0),
        (STOPPED, "steady", 1, 6.0),
    ]
    assert isinstance(seen[1].error, interrupt)
