"""The event stream: content, ordering, and a slow reader that never blocks the supervisor (R-SUP)."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from supervisor_support import NO_DELAY, Boom, crashes_after, drained

from supervisors import (
    Backoff,
    ChildContext,
    ChildEvent,
    ChildSpec,
    ChildState,
    EventKind,
    EventSubscription,
    Restart,
    RestartIntensity,
    Supervisor,
)


async def test_a_crash_and_restart_read_as_started_exited_restarting_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backoff = Backoff(initial=0.25, jitter=0.0)
    async with Supervisor.open(backoff=backoff) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await trio.sleep(1.5)
    recorded = await drained(events)
    assert [(event.kind, event.incarnation, event.time) for event in recorded] == [
        (EventKind.STARTED, 1, 0.0),
        (EventKind.EXITED, 1, 1.0),
        (EventKind.RESTARTING, 1, 1.0),
        (EventKind.STARTED, 2, 1.25),
        (EventKind.STOPPED, 2, 1.5),
    ]
    exited, restarting = recorded[1], recorded[2]
    assert isinstance(exited.error, Boom)
    assert restarting.error is exited.error
    assert restarting.delay == 0.25
    assert {event.name for event in recorded} == {"child"}
    assert recorded[0].error is None and recorded[0].delay is None


async def test_a_slow_reader_never_blocks_the_supervisor_and_counts_what_it_lost(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intensity = RestartIntensity(max_restarts=1000, period=1.0)
    async with Supervisor.open(intensity=intensity, backoff=NO_DELAY) as supervisor:
        never_read = supervisor.subscribe(max_buffer=4)
        everything = supervisor.subscribe(max_buffer=10_000)
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await trio.sleep(50.5)
        # Nobody read `never_read`, yet the child went through 51 incarnations on time.
        assert supervisor.status("child").incarnation == 51
    total = await drained(everything)
    kept = await drained(never_read)
    assert len(total) == 51 + 50 * 2 + 1  # STARTED x51, EXITED+RESTARTING x50, STOPPED
    assert never_read.dropped == len(total) - 4
    assert everything.dropped == 0
    assert kept == total[-4:]  # the oldest were dropped, the newest kept


async def test_a_reader_blocked_elsewhere_does_not_delay_stops(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def serve(context: ChildContext) -> None:
        context.started()
        await trio.sleep_forever()

    async def reads_one_then_stalls(events: EventSubscription) -> None:
        async for _ in events:
            await trio.sleep(1000)

    async with trio.open_nursery() as readers:
        async with Supervisor.open() as supervisor:
            readers.start_soon(reads_one_then_stalls, supervisor.subscribe(max_buffer=1))
            for index in range(20):
                await supervisor.start_child(ChildSpec(f"child-{index}", serve))
        assert trio.current_time() == 0
        readers.cancel_scope.cancel()


async def test_iteration_ends_once_the_supervisor_closed_and_the_buffer_is_drained(
    autojump_clock: trio.testing.MockClock,
) -> None:
    received: list[EventKind] = []

    async def reader(events: EventSubscription) -> None:
        async for event in events:
            received.append(event.kind)

    with trio.fail_after(10):  # the reader must end on its own for the nursery to exit
        async with trio.open_nursery() as nursery, Supervisor.open() as supervisor:
            nursery.start_soon(reader, supervisor.subscribe())
            await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
    assert trio.current_time() == 0
    assert received == [EventKind.STARTED, EventKind.STOPPED]


async def test_a_closed_subscription_receives_nothing_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        with supervisor.subscribe() as events:
            await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await trio.sleep(3)
        assert await drained(events) == []
        assert events.dropped == 0


async def test_subscribing_after_the_supervisor_closed_yields_an_empty_stream(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        pass
    assert await drained(supervisor.subscribe()) == []


async def test_a_subscription_needs_room_for_at_least_one_event(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        with pytest.raises(ValueError):
            supervisor.subscribe(max_buffer=0)


async def test_on_event_hook_sees_every_event_in_order_without_dropping(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[tuple[EventKind, int]] = []

    async def crash_twice(context: ChildContext) -> None:
        context.started()
        if context.incarnation < 3:
            raise RuntimeError(f"crash {context.incarnation}")
        await trio.sleep_forever()

    async with Supervisor.open(
        intensity=RestartIntensity(max_restarts=5, period=60),
        on_event=lambda event: seen.append((event.kind, event.incarnation)),
    ) as supervisor:
        subscription = supervisor.subscribe(max_buffer=1)
        await supervisor.start_child(ChildSpec("c", crash_twice, restart=Restart.TRANSIENT))
        with trio.fail_after(60):
            while supervisor.status("c").incarnation < 3 or supervisor.status("c").state is not ChildState.RUNNING:
                await trio.sleep(0.1)
        await supervisor.stop_child("c")
        assert subscription.dropped > 0  # the ring buffer lost some; the hook did not
    assert seen == [
        (EventKind.STARTED, 1),
        (EventKind.EXITED, 1),
        (EventKind.RESTARTING, 1),
        (EventKind.STARTED, 2),
        (EventKind.EXITED, 2),
        (EventKind.RESTARTING, 2),
        (EventKind.STARTED, 3),
        (EventKind.STOPPED, 3),
    ]


async def test_an_on_event_hook_that_raises_is_logged_and_ignored(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    def breaks(event: ChildEvent) -> None:
        raise ValueError("hook bug")

    async with Supervisor.open(backoff=NO_DELAY, on_event=breaks) as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        await trio.sleep(1.5)
        assert supervisor.status("child").incarnation == 2  # the supervisor went on
    assert [event.kind for event in await drained(events)] == [  # subscribers still see everything
        EventKind.STARTED,
        EventKind.EXITED,
        EventKind.RESTARTING,
        EventKind.STARTED,
        EventKind.STOPPED,
    ]
    assert [record.message for record in caplog.records].count(
        f"on_event hook raised on {ChildEvent(EventKind.STARTED, 'child', 1, 0.0)!r}; ignored"
    ) == 1


async def test_a_subscription_sees_only_events_published_after_it_was_made(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        await supervisor.start_child(ChildSpec("before", crashes_after(1.0)))
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("after", crashes_after(1.0)))
        await supervisor.stop_child("before")
        await supervisor.stop_child("after")
    assert [(event.kind, event.name) for event in await drained(events)] == [
        (EventKind.STARTED, "after"),
        (EventKind.STOPPED, "before"),
        (EventKind.STOPPED, "after"),
    ]


async def test_waiting_for_the_next_event_is_always_a_checkpoint(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with Supervisor.open() as supervisor:
        events = supervisor.subscribe()
        await supervisor.start_child(ChildSpec("child", crashes_after(1.0)))
        with trio.testing.assert_checkpoints():
            await events.__anext__()  # buffered already: still a checkpoint
