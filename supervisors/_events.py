"""The supervisor's event stream: what happened to which incarnation, and when.

Why a bounded ring buffer per subscriber rather than a trio channel or a
trio-util ``AsyncValue``:

- a memory channel either blocks the sender when full (a slow reader would
  stall restarts and stops) or, with ``send_nowait``, drops the *newest*
  event, which is the one that describes the current state;
- an ``AsyncValue`` keeps only the latest value: a reader that wakes late
  misses the ``EXITED`` between a ``STARTED`` and a ``RESTARTING``. Current
  state is better read from :meth:`Supervisor.status` anyway;
- one buffer per subscriber keeps each reader's slowness its own.

So publishing never waits: when a subscriber's buffer is full its oldest
event is dropped and :attr:`EventSubscription.dropped` counts it.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Self, final

import attrs
import trio


class EventKind(enum.Enum):
    """What happened to a child."""

    STARTED = "started"
    """An incarnation reported ``started()``."""

    EXITED = "exited"
    """An incarnation ended on its own (``error`` is its exception, or ``None``
    for a normal return), or an abandoned incarnation finally ended."""

    RESTARTING = "restarting"
    """The next incarnation starts after ``delay`` seconds; ``incarnation`` and
    ``error`` are those of the incarnation that exited, or, for a child the
    strategy stopped, its last incarnation and a :class:`SiblingRestart`.
    Under a strategy, a child waiting for its restart may get another one with
    a new delay when an overlapping restart of a sibling postpones it; and
    the siblings start one after the other, so a ``delay`` is the earliest."""

    GAVE_UP = "gave_up"
    """The restart budget (the child's own, or the supervisor's) is spent; the
    child stays down. ``error`` is its last error."""

    STOPPED = "stopped"
    """A stop ended the child's incarnation. ``error`` is ``None`` for a stop for
    good, a :class:`SiblingRestart` when the strategy stopped it (a
    ``RESTARTING`` follows unless it is temporary), or a
    :class:`ChildAbandoned` if it did not finish within its shutdown deadline
    (published at the deadline; an ``EXITED`` follows when it does finish)."""


@final
@attrs.frozen
class ChildEvent:
    """One thing that happened to one incarnation of a child.

    :param kind: what happened.
    :param name: the child's name.
    :param incarnation: the incarnation it happened to.
    :param time: ``trio.current_time()`` when it happened.
    :param error: the exception involved, if any (see :class:`EventKind`).
    :param delay: for ``RESTARTING`` only, seconds until the next incarnation.
    """

    kind: EventKind
    name: str
    incarnation: int
    time: float
    error: BaseException | None = None
    delay: float | None = None


class _EventBuffer:
    """One reader's ring buffer: written by the broadcast, read by the subscription."""

    def __init__(self, max_buffer: int) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be >= 1, got {max_buffer!r}")
        self.events: deque[ChildEvent] = deque(maxlen=max_buffer)
        self.dropped = 0
        self.finished = False
        self.waiters = trio.lowlevel.ParkingLot()

    def deliver(self, event: ChildEvent) -> None:
        if self.finished:
            return
        if len(self.events) == self.events.maxlen:
            self.dropped += 1
        self.events.append(event)
        self.waiters.unpark_all()

    def finish(self) -> None:
        self.finished = True
        self.waiters.unpark_all()


@final
class EventSubscription:
    """The events of one supervisor, as seen by one reader.

    Iterate it with ``async for``; iteration ends once the supervisor has
    closed and the buffered events are consumed, or right after :meth:`close`.
    Use it as a ``with`` block to unsubscribe on the way out. Obtain it from
    :meth:`Supervisor.subscribe`; events published before that are not seen.
    """

    def __init__(self, buffer: _EventBuffer, on_close: Callable[[_EventBuffer], None]) -> None:
        """Use :meth:`Supervisor.subscribe` instead.

        :param buffer: where the supervisor puts this reader's events.
        :param on_close: called once, with ``buffer``, by :meth:`close`.
        """
        self._buffer = buffer
        self._on_close = on_close

    @property
    def dropped(self) -> int:
        """How many events were discarded (oldest first) because this reader fell behind."""
        return self._buffer.dropped

    def close(self) -> None:
        """Unsubscribe: discard buffered events and end iteration."""
        self._buffer.events.clear()
        if not self._buffer.finished:
            self._buffer.finish()
            self._on_close(self._buffer)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ChildEvent:
        """Wait for the next event; always a trio checkpoint.

        :raises StopAsyncIteration: once the stream has finished and is drained.
        """
        await trio.lowlevel.checkpoint()
        while not self._buffer.events:
            if self._buffer.finished:
                raise StopAsyncIteration
            await self._buffer.waiters.park()
        return self._buffer.events.popleft()


@final
class EventBroadcast:
    """Fans each event out to every live subscription. Internal to the supervisor."""

    __slots__ = ("_buffers", "_finished")

    def __init__(self) -> None:
        # A tuple, replaced on each change: most supervisors never have a subscriber, and the empty tuple is shared.
        self._buffers: tuple[_EventBuffer, ...] = ()
        self._finished = False

    def subscribe(self, max_buffer: int) -> EventSubscription:
        """A new subscription; already finished if the broadcast is.

        :param max_buffer: events kept for the reader before the oldest is dropped.
        :raises ValueError: if ``max_buffer`` is less than 1.
        """
        buffer = _EventBuffer(max_buffer)
        if self._finished:
            buffer.finish()
        else:
            self._buffers += (buffer,)
        return EventSubscription(buffer, self._unsubscribe)

    def _unsubscribe(self, buffer: _EventBuffer) -> None:
        self._buffers = tuple(other for other in self._buffers if other is not buffer)

    def publish(self, event: ChildEvent) -> None:
        """Deliver ``event`` to every subscription, never waiting.

        :param event: the event.
        """
        for buffer in self._buffers:
            buffer.deliver(event)

    def finish(self) -> None:
        """End every subscription's stream after what it has buffered."""
        self._finished = True
        for buffer in self._buffers:
            buffer.finish()
        self._buffers = ()
