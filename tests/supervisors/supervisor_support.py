"""What the supervisor tests share: a no-delay backoff, a test error, simple children, event helpers, error endings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager

import attrs
import pytest
import trio

from supervisors import (
    Backoff,
    ChildContext,
    ChildEvent,
    ChildSpec,
    EventKind,
    EventSubscription,
    RestartIntensity,
    Supervisor,
)

Run = Callable[[ChildContext], Awaitable[object]]
NO_DELAY = Backoff(initial=0.0, jitter=0.0)
GENEROUS = RestartIntensity(max_restarts=1000, period=1.0)


class Boom(Exception):
    """The error test children crash with."""


async def drained(events: EventSubscription) -> list[ChildEvent]:
    """Every event left in a subscription, once the supervisor closed it."""
    return [event async for event in events]


def crashes_after(seconds: float, error: type[BaseException] = Boom) -> Run:
    """A child that reports started, runs ``seconds``, then raises ``error`` (every incarnation)."""

    async def run(context: ChildContext) -> None:
        context.started()
        await trio.sleep(seconds)
        raise error(f"incarnation {context.incarnation}")

    return run


def crashes_once_after(seconds: float) -> Run:
    """A child whose first incarnation crashes ``seconds`` after it started; later ones run until stopped."""

    async def run(context: ChildContext) -> None:
        context.started()
        if context.incarnation == 1:
            await trio.sleep(seconds)
            raise Boom(f"{context.name} crashed")
        await trio.sleep_forever()

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


@attrs.frozen
class Ending:
    """How a supervisor block that an error left came out: the supervisor, the error, whether the body was cancelled."""

    supervisor: Supervisor
    error: BaseException
    body_cancelled: bool


async def block_ended_by(
    error: type[BaseException], opening: AbstractAsyncContextManager[Supervisor], children: Sequence[ChildSpec]
) -> Ending:
    """Enters ``opening``, starts ``children`` in order and waits; the block must end by raising ``error`` itself."""
    opened: list[Supervisor] = []
    body_cancelled = False
    with pytest.raises(error) as raised:
        async with opening as supervisor:
            opened.append(supervisor)
            for child in children:
                await supervisor.start_child(child)
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                body_cancelled = True
                raise
    return Ending(opened[0], raised.value, body_cancelled)
