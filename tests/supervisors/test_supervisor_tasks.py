"""What a supervisor costs in tasks, and that its tasks beside the owner's body stay its own.

No task of the supervisor's holds the children: they run in the nursery of
``Supervisor.open`` itself, each shielded once it reported started, so the
owner's cancellation reaches them only through the supervisor's ordered stop.
On trio's MockClock with autojump.
"""

from __future__ import annotations

import trio
import trio.testing
from supervisor_support import NO_DELAY, ignores_cancellation_for

from supervisors import ChildContext, ChildEvent, ChildSpec, EventKind, RestartIntensity, Supervisor
from wave_actors.testing import count_tasks


async def serve_forever(context: ChildContext) -> None:
    context.started()
    await trio.sleep_forever()


async def test_a_supervisor_with_one_running_child_costs_one_task() -> None:
    before = count_tasks()
    async with Supervisor.open() as supervisor:
        assert count_tasks() == before
        await supervisor.start_child(ChildSpec("child", serve_forever))
        assert count_tasks() == before + 1
    assert count_tasks() == before


async def test_a_cancelled_owner_still_abandons_a_stuck_child_at_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The deadline watcher runs beside the owner's body: the owner's cancellation
    # must not end it, or a stuck child would never be reported abandoned.
    events: list[ChildEvent] = []
    with trio.move_on_after(1):
        async with Supervisor.open(on_event=events.append) as supervisor:
            await supervisor.start_child(ChildSpec("slow", ignores_cancellation_for(3.0), shutdown_timeout=5.0))
            await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(100.0), shutdown_timeout=2.0))
            await trio.sleep_forever()
    recorded = [(event.kind, event.name, event.time) for event in events]
    assert recorded == [
        (EventKind.STARTED, "slow", 0.0),
        (EventKind.STARTED, "stuck", 0.0),
        (EventKind.STOPPED, "stuck", 3.0),  # abandoned at its deadline, 2 s after the owner's cancellation
        (EventKind.STOPPED, "slow", 6.0),  # then the next one, given its whole 3 s
        (EventKind.EXITED, "stuck", 101.0),
    ]


async def test_a_restart_waiting_out_its_backoff_is_stopped_in_order_when_the_owner_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def crashes_then_serves(context: ChildContext) -> None:
        context.started()
        if context.incarnation == 1:
            await trio.sleep(1)
            raise RuntimeError("first incarnation")
        await trio.sleep_forever()

    events: list[ChildEvent] = []
    intensity = RestartIntensity(max_restarts=5, period=60.0)
    with trio.move_on_after(10):
        async with Supervisor.open(intensity=intensity, backoff=NO_DELAY, on_event=events.append) as sup:
            await sup.start_child(ChildSpec("flaky", crashes_then_serves))
            await sup.start_child(ChildSpec("steady", serve_forever))
            await trio.sleep_forever()
    recorded = [(event.kind, event.name, event.incarnation) for event in events]
    assert recorded[-2:] == [(EventKind.STOPPED, "steady", 1), (EventKind.STOPPED, "flaky", 2)]


async def test_a_child_reporting_started_after_its_caller_was_cancelled_ends_with_that_cancellation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # trio keeps such a child in the cancelled caller's nursery: it must stay
    # cancellable there, or start_child would wait for it forever.
    async def starts_late(context: ChildContext) -> None:
        with trio.CancelScope(shield=True):
            await trio.sleep(1)
        context.started()
        await trio.sleep_forever()

    with trio.fail_after(60):
        async with Supervisor.open() as supervisor:
            with trio.move_on_after(0.5) as caller:
                await supervisor.start_child(ChildSpec("late", starts_late))
            assert caller.cancelled_caught
            assert trio.current_time() == 1
            await supervisor.start_child(ChildSpec("next", serve_forever))
            assert [child.name for child in supervisor.children()] == ["late", "next"]
