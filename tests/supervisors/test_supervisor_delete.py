"""delete_child: a long-lived supervisor forgets children that ended (R-SUP).

On trio's MockClock with autojump.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from supervisor_support import GENEROUS, Boom, Run, crashes_after, ignores_cancellation_for, serve_forever, wait_for

from supervisors import (
    Backoff,
    ChildContext,
    ChildSpec,
    ChildState,
    EventKind,
    Restart,
    RestartIntensity,
    Supervisor,
    SupervisorError,
    UnknownChild,
)


async def test_a_deleted_child_is_forgotten_and_its_name_starts_over_at_incarnation_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        await supervisor.start_child(ChildSpec("keep", serve_forever))
        await supervisor.start_child(ChildSpec("child", serve_forever))
        await supervisor.restart_child("child")
        assert (await supervisor.stop_child("child")).incarnation == 2
        supervisor.delete_child("child")
        assert [status.name for status in supervisor.children()] == ["keep"]
        with pytest.raises(UnknownChild):
            supervisor.status("child")
        status = await supervisor.start_child(ChildSpec("child", serve_forever))
        assert status.incarnation == 1


async def returns_at_once(context: ChildContext) -> None:
    context.started()


@pytest.mark.parametrize(
    ("run", "restart", "final_state"),
    [
        (returns_at_once, Restart.TRANSIENT, ChildState.EXITED),
        (crashes_after(1.0), Restart.PERMANENT, ChildState.GAVE_UP),
    ],
)
async def test_a_child_that_exited_or_gave_up_can_be_deleted(
    autojump_clock: trio.testing.MockClock, run: Run, restart: Restart, final_state: ChildState
) -> None:
    async with Supervisor.open(intensity=RestartIntensity(max_restarts=0, period=1.0)) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", run, restart=restart))
        await wait_for(events, EventKind.EXITED)
        assert supervisor.status("child").state is final_state
        supervisor.delete_child("child")
        assert supervisor.children() == ()


async def test_delete_child_refuses_a_child_that_has_not_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open(intensity=GENEROUS, backoff=Backoff(initial=5.0, jitter=0.0)) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("running", serve_forever))
        with pytest.raises(SupervisorError, match=r"'running'.*still running; stop it first"):
            supervisor.delete_child("running")
        await supervisor.start_child(ChildSpec("restarting", crashes_after(1.0)))
        await wait_for(events, EventKind.RESTARTING)
        with pytest.raises(SupervisorError, match="still restarting"):
            supervisor.delete_child("restarting")
        with pytest.raises(UnknownChild, match="'ghost'"):
            supervisor.delete_child("ghost")
        assert [status.name for status in supervisor.children()] == ["running", "restarting"]


async def test_an_abandoned_child_can_be_deleted_once_its_task_really_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("stuck", ignores_cancellation_for(10.0), shutdown_timeout=1.0))
        assert (await supervisor.stop_child("stuck")).state is ChildState.ABANDONED
        with pytest.raises(SupervisorError, match="still abandoned"):
            supervisor.delete_child("stuck")
        await wait_for(events, EventKind.EXITED)
        supervisor.delete_child("stuck")
        assert supervisor.children() == ()


async def test_a_failed_first_start_can_be_deleted(autojump_clock: trio.testing.MockClock) -> None:
    async def refuses(context: ChildContext) -> None:
        raise Boom("dial failed")

    async with Supervisor.open() as supervisor:
        with pytest.raises(Boom):
            await supervisor.start_child(ChildSpec("child", refuses))
        supervisor.delete_child("child")
        assert supervisor.children() == ()
