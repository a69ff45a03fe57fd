"""The supervisor: runs children as tasks it owns, restarts them, stops them in order.

Each child runs in one *supervising task* that loops over its incarnations:
run, classify the exit, maybe wait out a backoff delay, run again. The whole
loop sits inside one cancel scope per start; a stop cancels that scope and
marks the child as stopping, so a stop that lands during a run, a start, or
a backoff delay ends the loop the same way, and the loop checks the mark
before deciding anything. Because trio switches tasks only at checkpoints
and no decision awaits, "stop racing a crash" has no window in which a new
incarnation can begin after :meth:`Supervisor.stop_child` returned.

Once a child reports started, its task lives in a nursery that the
supervisor keeps inside a shielded scope: cancelling the code around
``async with Supervisor.open()`` does not reach the children directly; the
supervisor stops them itself, one at a time in reverse start order, each
within its own deadline. Before it reports started, a child runs in the
context of the caller of :meth:`Supervisor.start_child`, so cancelling that
caller cancels the start (a lazy dial dies with the session that asked for it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from random import Random
from typing import cast, final

import attrs
import trio

from ._backoff import Backoff
from ._errors import (
    ChildAbandoned,
    ChildNotStarted,
    RestartIntensityExceeded,
    SupervisorError,
    UnknownChild,
)
from ._events import ChildEvent, EventBroadcast, EventKind, EventSubscription
from ._intensity import RestartIntensity
from ._spec import ChildContext, ChildSpec, Restart
from ._status import ChildState, ChildStatus

logger = logging.getLogger(__name__)

_FINAL_STATES = frozenset({ChildState.STOPPED, ChildState.EXITED, ChildState.GAVE_UP})


@attrs.define(eq=False)
class _Child:
    """The supervisor's mutable record of one start of one child."""

    spec: ChildSpec
    incarnation: int
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    ended: trio.Event = attrs.field(factory=trio.Event)
    state: ChildState = ChildState.STARTING
    error: BaseException | None = None
    stop_deadline: float | None = None
    """Set once, by the first stop; also the "stop requested" mark."""
    restart_history: tuple[float, ...] = ()
    backoff_attempt: int = 0
    up_since: float | None = None

    def status(self) -> ChildStatus:
        return ChildStatus(self.spec.name, self.state, self.incarnation, self.error)


def _split_cancelled(raised: BaseException) -> tuple[bool, BaseException | None]:
    """Separate trio's cancellation from whatever else ``raised`` carries."""
    if isinstance(raised, trio.Cancelled):
        return True, None
    if isinstance(raised, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", raised)
        cancelled, rest = group.split(trio.Cancelled)
        return cancelled is not None, rest
    return False, raised


@final
class Supervisor:
    """OTP-style one-for-one supervision of trio tasks.

    Open it with :meth:`open`, start children with :meth:`start_child`. A
    child that exits on its own is restarted according to its
    :class:`Restart` type, after a :class:`Backoff` delay, while its
    :class:`RestartIntensity` allows; then it is given up (``GAVE_UP``), or,
    with ``escalate=True``, the supervisor stops everything and raises
    :class:`RestartIntensityExceeded`.

    Incarnations are numbered per name and never reused within a supervisor:
    starting a name again after it stopped continues from the last number, so
    a caller can use the incarnation as a monotonic connection generation.

    .. note::
       **Shutdown guarantee.** Leaving the ``async with`` block (normally, by
       exception or by cancellation) stops the children one by one in reverse
       start order. Each is cancelled and given its ``shutdown_timeout``; one
       that is still running at its deadline is *abandoned*: reported with a
       ``STOPPED`` event carrying :class:`ChildAbandoned`, and the supervisor
       moves on to the next child at once. So every child is cancelled and
       every stop is reported within the sum of the deadlines. What trio does
       not allow is to leave a nursery while one of its tasks runs: the block
       itself returns only when abandoned tasks have really ended (reported by
       a final ``EXITED``). Past its deadline, that wait is owned by the
       child's own shielded scope; bound the shielded work in the child
       (``trio.move_on_after``) to bound it.
    """

    def __init__(
        self,
        *,
        intensity: RestartIntensity,
        backoff: Backoff,
        escalate: bool,
        random: Random,
        on_event: Callable[[ChildEvent], None] | None = None,
    ) -> None:
        """Use :meth:`open`; a supervisor is useless outside its ``async with`` block.

        :param intensity: default restart intensity of the children.
        :param backoff: default backoff of the children.
        :param escalate: raise instead of giving a child up when it exceeds its intensity.
        :param random: the jitter source.
        :param on_event: called synchronously with every event (see :meth:`open`).
        """
        self._on_event = on_event
        self._intensity = intensity
        self._backoff = backoff
        self._escalate = escalate
        self._random = random
        self._children: dict[str, _Child] = {}
        self._events = EventBroadcast()
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._shutdown_done = trio.Event()
        self._body_scope = trio.CancelScope()
        self._escalation: RestartIntensityExceeded | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        intensity: RestartIntensity = RestartIntensity(),
        backoff: Backoff = Backoff(),
        escalate: bool = False,
        random: Random | None = None,
        on_event: Callable[[ChildEvent], None] | None = None,
    ) -> AsyncGenerator[Supervisor]:
        """Run a supervisor for the duration of an ``async with`` block.

        The children run as tasks of nurseries this block owns. An exception
        raised by the block's body is re-raised as is (not wrapped in an
        exception group) after the children are stopped.

        :param intensity: restart intensity for children that do not set their own.
        :param backoff: backoff for children that do not set their own.
        :param escalate: when a child exceeds its intensity, stop all children
            and raise instead of giving that child up alone. The block's body is
            cancelled first.
        :param random: jitter source; pass ``Random(seed)`` for reproducible delays.
        :param on_event: called synchronously, in order, with every event as it
            happens, before subscribers see it. Unlike a subscription it never
            drops anything, so an owner that keeps its own state machine in step
            with the children (e.g. by incarnation) uses this. It must not block
            or raise; an exception it raises is logged and ignored.
        :raises RestartIntensityExceeded: on escalation, after every child stopped.
        """
        supervisor = cls(
            intensity=intensity,
            backoff=backoff,
            escalate=escalate,
            random=random if random is not None else Random(),
            on_event=on_event,
        )
        body_error: BaseException | None = None
        try:
            async with trio.open_nursery() as nursery:
                # Shielded: _host_children reports started at once, and a
                # cancellation landing after it moved into the nursery but
                # before start() returned would skip the shutdown below and
                # leave it waiting forever.
                with trio.CancelScope(shield=True):
                    supervisor._nursery = await nursery.start(supervisor._host_children)
                try:
                    with supervisor._body_scope:
                        yield supervisor
                except BaseException as error:
                    # Re-raised below, outside the nursery, so the caller sees
                    # its own exception and not an ExceptionGroup around it.
                    body_error = error
                finally:
                    with trio.CancelScope(shield=True):
                        await supervisor._shutdown()
        finally:
            supervisor._events.finish()
        if supervisor._escalation is not None:
            raise supervisor._escalation
        if body_error is not None:
            raise body_error

    async def _host_children(
        self, *, task_status: trio.TaskStatus[trio.Nursery] = trio.TASK_STATUS_IGNORED
    ) -> None:
        # Shielded: children are cancelled by _stop, in order, never wholesale.
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as children:
                task_status.started(children)
                await self._shutdown_done.wait()

    async def start_child(self, spec: ChildSpec) -> ChildStatus:
        """Start a child and return once it reported started.

        A failed first start is the caller's to handle, so it is **not**
        restarted: if the child raises before ``started()``, this re-raises that
        exception and the child ends in ``EXITED`` (an ``EXITED`` event
        carries the error). Only exits of a child that was up, or of
        incarnations the supervisor started itself, are restarted.

        Starting a name that stopped, exited or gave up is allowed: the
        restart history and backoff start afresh, the incarnation number
        continues from the previous one.

        Cancelling the caller while the child is starting cancels the child
        (it ends ``STOPPED``).

        :param spec: the child to start.
        :returns: its status right after it reported started.
        :raises ChildNotStarted: if it returned, or was stopped, before reporting started.
        :raises SupervisorError: if the supervisor is shutting down, or a child
            of that name is still running (including an abandoned one).
        """
        if self._nursery is None or self._closing:
            raise SupervisorError(f"cannot start child {spec.name!r}: the supervisor is closed")
        previous = self._children.get(spec.name)
        if previous is not None:
            if not previous.ended.is_set():
                raise SupervisorError(
                    f"cannot start child {spec.name!r}: incarnation {previous.incarnation} "
                    f"is still {previous.state.value}; stop it first"
                )
            del self._children[spec.name]  # re-inserted last: it is now the latest start
        child = _Child(spec=spec, incarnation=previous.incarnation if previous is not None else 0)
        self._children[spec.name] = child
        await self._nursery.start(self._supervise, child)
        return child.status()

    async def stop_child(self, name: str) -> ChildStatus:
        """Stop a child for good: cancel it and wait for it, at most its ``shutdown_timeout``.

        No incarnation of it starts after this returns, even if it was crashing
        or waiting out a backoff delay at that moment. A child that already
        ended is left as it is. If the deadline passes first, the child is
        reported abandoned and this returns anyway.

        :param name: the child's name.
        :returns: its status: ``STOPPED``, ``ABANDONED``, or the final state it had already reached.
        :raises UnknownChild: if no child of that name was ever started.
        """
        child = self._child(name)
        await self._stop(child)
        return child.status()

    async def restart_child(self, name: str) -> ChildStatus:
        """Stop a child if it runs, then start it again with the same spec.

        The new incarnation is started like :meth:`start_child` does: the call
        returns once it reported started, and a failed start is raised, not retried.

        :param name: the child's name.
        :returns: its status after the new start.
        :raises UnknownChild: if no child of that name was ever started.
        :raises SupervisorError: if the stop abandoned it (see :meth:`start_child`).
        """
        child = self._child(name)
        await self._stop(child)
        return await self.start_child(child.spec)

    def status(self, name: str) -> ChildStatus:
        """The current status of a child.

        :param name: the child's name.
        :raises UnknownChild: if no child of that name was ever started.
        """
        return self._child(name).status()

    def children(self) -> tuple[ChildStatus, ...]:
        """The status of every child ever started here, in order of their latest start."""
        return tuple(child.status() for child in self._children.values())

    def subscribe(self, max_buffer: int = 256) -> EventSubscription:
        """Receive the events published from now on.

        :param max_buffer: events kept for this reader; beyond that, the oldest
            are dropped and counted, so a slow reader never delays the supervisor.
        :raises ValueError: if ``max_buffer`` is less than 1.
        """
        return self._events.subscribe(max_buffer)

    def _child(self, name: str) -> _Child:
        try:
            return self._children[name]
        except KeyError:
            raise UnknownChild(f"no child named {name!r} was started in this supervisor") from None

    async def _shutdown(self) -> None:
        self._closing = True
        for child in reversed(list(self._children.values())):
            await self._stop(child)
        self._shutdown_done.set()

    async def _stop(self, child: _Child) -> None:
        if child.ended.is_set():
            return
        if child.stop_deadline is None:
            child.stop_deadline = trio.current_time() + child.spec.shutdown_timeout
            child.state = ChildState.STOPPING
            child.scope.cancel()
        with trio.move_on_at(child.stop_deadline):
            await child.ended.wait()
        if not child.ended.is_set() and child.state is ChildState.STOPPING:
            child.state = ChildState.ABANDONED
            child.error = ChildAbandoned(
                f"child {child.spec.name!r} incarnation {child.incarnation} did not finish "
                f"within its shutdown_timeout of {child.spec.shutdown_timeout:g} s after "
                f"being cancelled; its task is left running (it is probably inside a "
                f"shielded scope)"
            )
            logger.warning("%s", child.error)
            self._emit(EventKind.STOPPED, child, child.error)

    async def _supervise(
        self, child: _Child, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        first_start: trio.TaskStatus[None] | None = task_status
        try:
            with child.scope:
                while child.stop_deadline is None:
                    error = await self._run_incarnation(child, first_start)
                    if child.stop_deadline is not None:
                        if child.state is ChildState.ABANDONED:
                            self._emit(EventKind.EXITED, child, error)
                        break
                    self._emit(EventKind.EXITED, child, error)
                    if first_start is not None and child.up_since is None:
                        self._settle(child, ChildState.EXITED, error)
                        raise error if error is not None else ChildNotStarted(
                            f"child {child.spec.name!r} returned before reporting started"
                        )
                    first_start = None
                    delay = self._plan_restart(child, error)
                    if delay is None:
                        return
                    await trio.sleep(delay)
            if first_start is not None and child.up_since is None:
                raise ChildNotStarted(
                    f"child {child.spec.name!r} was stopped before it reported started"
                )
        finally:
            if child.state not in _FINAL_STATES:
                if child.state is not ChildState.ABANDONED:  # its STOPPED went out at the deadline
                    self._emit(EventKind.STOPPED, child)
                self._settle(child, ChildState.STOPPED, None)
            child.ended.set()

    async def _run_incarnation(
        self, child: _Child, first_start: trio.TaskStatus[None] | None
    ) -> Exception | None:
        """Run one incarnation; return its error, ``None`` for a return or a stop."""
        child.incarnation += 1
        child.state = ChildState.STARTING
        child.up_since = None
        incarnation = child.incarnation

        def report_started() -> None:
            if child.incarnation != incarnation or child.stop_deadline is not None:
                return
            if child.up_since is not None:
                raise RuntimeError(
                    f"child {child.spec.name!r} incarnation {incarnation} reported started twice"
                )
            child.up_since = trio.current_time()
            child.state = ChildState.RUNNING
            child.error = None
            self._emit(EventKind.STARTED, child)
            if first_start is not None:
                first_start.started()

        context = ChildContext(child.spec.name, incarnation, report_started=report_started)
        try:
            await child.spec.run(context)
        except BaseException as raised:
            cancelled, rest = _split_cancelled(raised)
            if rest is not None and not isinstance(rest, Exception):
                raise  # KeyboardInterrupt and friends are not ours to supervise
            if cancelled and child.stop_deadline is None:
                raise  # cancelled by the caller of start_child: not a crash
            return rest
        return None

    def _plan_restart(self, child: _Child, error: Exception | None) -> float | None:
        """Decide what follows an exit on its own: a delay to restart after, or ``None``."""
        restart = child.spec.restart
        wanted = restart is Restart.PERMANENT or (
            restart is Restart.TRANSIENT and error is not None
        )
        if not wanted or self._closing:
            self._settle(child, ChildState.EXITED, error)
            return None
        now = trio.current_time()
        intensity = child.spec.intensity if child.spec.intensity is not None else self._intensity
        history = intensity.admit(child.restart_history, now)
        if history is None:
            self._settle(child, ChildState.GAVE_UP, error)
            logger.warning(
                "giving up child %r after incarnation %d: more than %d restarts in %g s",
                child.spec.name, child.incarnation, intensity.max_restarts, intensity.period,
            )
            self._emit(EventKind.GAVE_UP, child, error)
            if self._escalate and self._escalation is None:
                self._escalation = RestartIntensityExceeded(
                    f"child {child.spec.name!r} exceeded {intensity.max_restarts} restarts in "
                    f"{intensity.period:g} s; the supervisor stopped all its children"
                )
                self._escalation.__cause__ = error
                self._body_scope.cancel()
            return None
        child.restart_history = history
        backoff = child.spec.backoff if child.spec.backoff is not None else self._backoff
        if child.up_since is not None and now - child.up_since >= backoff.reset_after:
            child.backoff_attempt = 0
        delay = backoff.delay(child.backoff_attempt, self._random)
        child.backoff_attempt += 1
        child.state = ChildState.RESTARTING
        child.error = error
        logger.info(
            "restarting child %r in %.3f s after incarnation %d ended: %r",
            child.spec.name, delay, child.incarnation, error,
        )
        self._emit(EventKind.RESTARTING, child, error, delay=delay)
        return delay

    def _settle(self, child: _Child, state: ChildState, error: BaseException | None) -> None:
        child.state = state
        child.error = error

    def _emit(
        self,
        kind: EventKind,
        child: _Child,
        error: BaseException | None = None,
        *,
        delay: float | None = None,
    ) -> None:
        event = ChildEvent(kind, child.spec.name, child.incarnation, trio.current_time(), error, delay)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                logger.exception("on_event hook raised on %r; ignored", event)
        self._events.publish(event)
