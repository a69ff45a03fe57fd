"""What the supervisor tests share: a no-delay backoff, a test error, simple children, event draining."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from supervisors import Backoff, ChildContext, ChildEvent, EventKind, EventSubscription, RestartIntensity

Run = Callable[[ChildContext], Awaitable[object]]
NO_DELAY = Backoff(initial=0.0, jitter=0.0)
GENEROUS = RestartIntensity(max_restarts=1000, period=1.0)


class Boom(Exception):
    """The error test children crash with."""


async def drained(events: EventSubscription) -> list[ChildEvent]:
    """Every event left in a subscription, once the supervisor closed it."""
    return [event async for event in events]


def crashes_after(seconds: float, error: type[Exception] = Boom) -> Run:
    """A child that reports started, runs ``seconds``, then raises ``error``."""

    async def run(context: ChildContext) -> None:
        context.started()
        await trio.sleep(seconds)
        raise error(f"incarnation {context.incarnation}")

    return run


async def serve_forever(context: ChildContext) -> None:
    """A child that reports started and runs until stopped."""
    context.started()
    await trio.sleep_forever()


async def wait_for(events: EventSubscription, kind: EventKind) -> ChildEvent:
    """The next event of ``kind`` (failing after 60 s of trio time)."""
    with trio.fail_after(60):
        async for event in events:
            if event.kind is kind:
                return event
    raise AssertionError(f"the event stream ended before a {kind.name} event")


def ignores_cancellation_for(seconds: float) -> Run:
    """A child whose cleanup, once cancelled, is stuck in a shielded scope for ``seconds``."""

    async def run(context: ChildContext) -> None:
        context.started()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(seconds)

    return run


def timeline(events: list[ChildEvent]) -> list[tuple[EventKind, str, int, float]]:
    """Events as ``(kind, name, incarnation, time)``: what happened to whom, and when."""
    return [(event.kind, event.name, event.incarnation, event.time) for event in events]
