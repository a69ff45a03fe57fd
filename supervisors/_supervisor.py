"""The supervisor: runs children as tasks it owns, restarts them, stops them in order.

Each start of a child runs in one *supervising task* that loops over its
incarnations: run, classify the exit, wait for its turn (a backoff delay, or
a strategy restart's go-ahead), run again. The loop sits inside one cancel
scope per start and, under a strategy that restarts siblings, each
incarnation inside a scope of its own: a stop for good cancels the first, a
strategy stop only the second. Every decision (what
follows an exit, whether a ``started()`` still counts, whether anything may
start) is taken synchronously and re-checked right before an incarnation
begins, so "stop racing a crash" has no window in which a new incarnation
begins after :meth:`Supervisor.stop_child` returned or shutdown began.

Deadlines belong to the supervisor: every stop (for good, or by the strategy)
gets a watcher task that abandons the child at its deadline whether or not
anyone still waits for the stop. A strategy restart of several children is
one *round* task: stop the others in reverse start order, wait out the
delay, start them in start order. A round that a newer one overlaps is
cancelled and its children not yet restarted join the newer one.

Once a child reports started, its task lives in the supervisor's nursery,
beside the body of ``async with Supervisor.open()``, and its scope shields
it (cancelling a shielded scope itself still works): cancelling the code
around the block does not reach the children directly; the supervisor stops
them itself, one at a time in reverse start order, each within its own
deadline. The watcher and round tasks are shielded the same way. Before it
reports started, a child runs in the context of the caller of
:meth:`Supervisor.start_child`, so cancelling that caller cancels the start.
No task of the
supervisor's own holds the children: a supervisor with one running child
costs the child's task and nothing more.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Callable, Iterable
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
    SiblingRestart,
    SupervisorError,
    UnknownChild,
)
from ._events import ChildEvent, EventBroadcast, EventKind, EventSubscription
from ._intensity import RestartIntensity
from ._spec import ChildContext, ChildSpec, Restart
from ._status import ChildState, ChildStatus
from ._strategy import Strategy

logger = logging.getLogger(__name__)

_FINAL_STATES = frozenset({ChildState.STOPPED, ChildState.EXITED, ChildState.GAVE_UP})
_DEFAULT_INTENSITY = RestartIntensity()
_DEFAULT_BACKOFF = Backoff()


@attrs.define(eq=False)
class _Incarnation:
    """One run of a child's ``run``."""

    number: int
    scope: trio.CancelScope | None = None
    """Its own scope, which a strategy stop cancels; ``None`` under one-for-one, which never stops an
    incarnation alone (a stop for good cancels the child's scope), and so saves a scope per child."""
    up: bool = False
    """It reported ``started()``."""
    over: bool = False
    """Its ``run`` has returned or raised: a ``started()`` from it no longer counts."""
    halt: SiblingRestart | None = None
    """Set when the strategy stopped it (not for good): the reason."""
    fatal: bool = False
    """It raised something that is not an ``Exception`` (KeyboardInterrupt, SystemExit)."""


@attrs.define(eq=False)
class _Child:
    """The supervisor's mutable record of one start of one child."""

    spec: ChildSpec
    incarnation: int
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    ended: trio.Event = attrs.field(factory=trio.Event)
    state: ChildState = ChildState.STARTING
    error: BaseException | None = None
    current: _Incarnation | None = None
    first_starting: bool = True
    """Its start_child has not returned yet: it is that caller's, not the strategy's."""
    final: bool = False
    """A stop for good was requested (or the child was abandoned): nothing more starts."""
    stop_reason: SiblingRestart | None = None
    """The error of the final ``STOPPED`` event: set when the strategy stopped it for good."""
    abandoned: bool = False
    gate: trio.Event | None = None
    """Set by a strategy round to let the next incarnation start."""
    restart_history: tuple[float, ...] = ()
    backoff_attempt: int = 0
    up_since: float | None = None
    starter: trio.TaskStatus[ChildStatus] | None = None
    """The task status of the start_child waiting for it: dropped once used, since it holds the nursery
    that ``Nursery.start`` opened for the start (a kilobyte or two, for as long as the child runs)."""

    def status(self) -> ChildStatus:
        return ChildStatus(self.spec.name, self.state, self.incarnation, self.error)

    @property
    def pending(self) -> bool:
        """Waiting for a strategy round to start its next incarnation."""
        return not self.final and not self.ended.is_set() and self.gate is not None and not self.gate.is_set()


@attrs.define(eq=False)
class _Round:
    """One strategy restart: the children it takes down and starts again."""

    trigger: _Child
    members: set[_Child]
    restart_at: float
    reason: SiblingRestart
    restarted: set[_Child] = attrs.field(factory=lambda: set[_Child]())
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)


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
    """OTP-style supervision of trio tasks: one-for-one, one-for-all or rest-for-one.

    Open it with :meth:`open`, start children with :meth:`start_child`. A
    child that exits on its own is restarted according to its
    :class:`Restart` type, after a :class:`Backoff` delay, together with the
    siblings its supervisor's :class:`Strategy` takes along, while its
    :class:`RestartIntensity` allows; then it is given up (``GAVE_UP``), or,
    with ``escalate=True``, the supervisor stops everything and raises
    :class:`RestartIntensityExceeded`. A ``supervisor_intensity`` bounds the
    restarts of all children together the same way (OTP's MaxR/MaxT); when
    it is spent, the supervisor always stops everything and raises.

    Incarnations are numbered per name and never reused within a supervisor
    (unless the name is deleted with :meth:`delete_child`): starting a name
    again after it stopped continues from the last number, so a caller can
    use the incarnation as a monotonic connection generation.

    .. note::
       **Shutdown guarantee.** Leaving the ``async with`` block (normally, by
       exception or by cancellation, and also after an escalation or a
       ``KeyboardInterrupt``/``SystemExit`` from a child) stops the children
       one by one in reverse start order. From that moment nothing starts:
       neither a restart waiting out its delay nor a :meth:`start_child`. Each
       child is cancelled and given its ``shutdown_timeout``; one that is
       still running at its deadline is *abandoned*: reported with a
       ``STOPPED`` event carrying :class:`ChildAbandoned`, and the supervisor
       moves on to the next child at once. So every child is cancelled and
       every stop is reported within the sum of the deadlines. What trio does
       not allow is to leave a nursery while one of its tasks runs: the block
       itself returns only when abandoned tasks have really ended (reported by
       a final ``EXITED``). Past its deadline, that wait is owned by the
       child's own shielded scope; bound the shielded work in the child
       (``trio.move_on_after``) to bound it.

    .. note::
       **KeyboardInterrupt and SystemExit** are not crashes, so they are never
       restarted. Raised by a child in its first start (before it reported
       started), they come out of that :meth:`start_child`, like any failed
       first start. Raised at any other time, they stop the supervisor: the
       child ends ``EXITED`` (its ``EXITED`` event carries the exception),
       the block's body is cancelled, the other children are stopped as on
       any shutdown (above), and the exception is re-raised out of the
       ``async with`` block as is, not wrapped in an exception group.
    """

    __slots__ = (
        "_backoff",
        "_body_scope",
        "_changed",
        "_children",
        "_closing",
        "_escalate",
        "_escalation",
        "_events",
        "_fatal",
        "_intensity",
        "_nursery",
        "_on_event",
        "_random",
        "_restart_history",
        "_round",
        "_strategy",
        "_supervisor_intensity",
    )

    def __init__(
        self,
        *,
        intensity: RestartIntensity,
        backoff: Backoff,
        escalate: bool,
        random: Random,
        on_event: Callable[[ChildEvent], None] | None = None,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        supervisor_intensity: RestartIntensity | None = None,
    ) -> None:
        """Use :meth:`open`; a supervisor is useless outside its ``async with`` block.

        :param intensity: default restart intensity of the children.
        :param backoff: default backoff of the children.
        :param escalate: raise instead of giving a child up when it exceeds its intensity.
        :param random: the jitter source.
        :param on_event: called synchronously with every event (see :meth:`open`).
        :param strategy: which siblings a restart takes along.
        :param supervisor_intensity: restart budget of all children together, if any.
        """
        self._on_event = on_event
        self._intensity = intensity
        self._backoff = backoff
        self._escalate = escalate
        self._random = random
        self._strategy = strategy
        self._supervisor_intensity = supervisor_intensity
        self._restart_history: tuple[float, ...] = ()
        self._children: dict[str, _Child] = {}
        self._events = EventBroadcast()
        # Made by the first wait (a stop, a round): a supervisor whose child just runs never needs it.
        self._changed: trio.lowlevel.ParkingLot | None = None
        self._nursery: trio.Nursery | None = None
        self._round: _Round | None = None
        self._closing = False
        self._body_scope = trio.CancelScope()
        self._escalation: RestartIntensityExceeded | None = None
        self._fatal: BaseException | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        intensity: RestartIntensity = _DEFAULT_INTENSITY,
        backoff: Backoff = _DEFAULT_BACKOFF,
        escalate: bool = False,
        random: Random | None = None,
        on_event: Callable[[ChildEvent], None] | None = None,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        supervisor_intensity: RestartIntensity | None = None,
    ) -> AsyncGenerator[Supervisor]:
        """Run a supervisor for the duration of an ``async with`` block.

        The children run as tasks of the nursery this block owns. An exception
        raised by the block's body is re-raised as is (not wrapped in an
        exception group) after the children are stopped.

        :param intensity: restart intensity of each child that does not set its own.
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
        :param strategy: which siblings a restart takes along (:class:`Strategy`).
        :param supervisor_intensity: at most so many restarts of all children
            together per period (a strategy restart counts once). When one
            more restart would exceed it, the child that exited is given up
            (``GAVE_UP``), the block's body is cancelled, every child is
            stopped and :class:`RestartIntensityExceeded` is raised out of
            the block. ``None``: no budget beyond each child's own.
        :raises RestartIntensityExceeded: after every child stopped, when the
            ``supervisor_intensity`` was spent, or a child's own with ``escalate``.
        :raises BaseException: a ``KeyboardInterrupt`` or ``SystemExit`` a
            child raised outside its first start, as is, after every child stopped.
        """
        supervisor = cls(
            intensity=intensity,
            backoff=backoff,
            escalate=escalate,
            random=random if random is not None else Random(),
            on_event=on_event,
            strategy=strategy,
            supervisor_intensity=supervisor_intensity,
        )
        body_error: BaseException | None = None
        try:
            # The children run in this nursery, beside the body, each task of the
            # supervisor's under a shield of its own (see the module's docstring):
            # a cancelled owner stops them one by one below, never wholesale.
            async with trio.open_nursery() as nursery:
                supervisor._nursery = nursery
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
        if supervisor._fatal is not None:
            raise supervisor._fatal
        if supervisor._escalation is not None:
            raise supervisor._escalation
        if body_error is not None:
            raise body_error

    async def start_child(self, spec: ChildSpec) -> ChildStatus:
        """Start a child and return once it reported started.

        A failed first start is the caller's to handle, so it is **not**
        restarted: if the child raises before ``started()``, this re-raises that
        exception and the child ends in ``EXITED`` (an ``EXITED`` event
        carries the error). Only exits of a child that was up, or of
        incarnations the supervisor started itself, are restarted.

        Starting a name that stopped, exited or gave up is allowed: the
        restart history and backoff start afresh, the incarnation number
        continues from the previous one. The name becomes the last in start order.

        Cancelling the caller while the child is starting cancels the child
        (it ends ``STOPPED``).

        :param spec: the child to start.
        :returns: its status as it was when it reported started (``RUNNING``,
            with the incarnation that reported), even if it has crashed since.
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
        return await self._nursery.start(self._supervise, child)

    async def stop_child(self, name: str) -> ChildStatus:
        """Stop a child for good: cancel it and wait for it, at most its ``shutdown_timeout``.

        No incarnation of it starts after this returns, even if it was crashing
        or waiting out a backoff delay at that moment. A child that already
        ended is left as it is. If the deadline passes first, the child is
        reported abandoned and this returns anyway. The deadline is the
        supervisor's, not the caller's: if the caller stops waiting (it is
        cancelled), the stop goes on, and the child is abandoned and reported
        at its deadline all the same.

        :param name: the child's name.
        :returns: its status: ``STOPPED``, ``ABANDONED``, or the final state it had already reached.
        :raises UnknownChild: if no child of that name is known.
        """
        child = self._child(name)
        await self._stop(child)
        return child.status()

    async def restart_child(self, name: str) -> ChildStatus:
        """Stop a child if it runs, then start it again with the same spec.

        The new incarnation is started like :meth:`start_child` does: the call
        returns once it reported started, and a failed start is raised, not
        retried. Only this child is restarted, whatever the strategy.

        :param name: the child's name.
        :returns: its status after the new start.
        :raises UnknownChild: if no child of that name is known.
        :raises SupervisorError: if the stop abandoned it (see :meth:`start_child`).
        """
        child = self._child(name)
        await self._stop(child)
        return await self.start_child(child.spec)

    def delete_child(self, name: str) -> None:
        """Forget a child that has ended, so a long-lived supervisor keeps no record of it.

        The name is then unknown (:meth:`status` raises :class:`UnknownChild`,
        :meth:`children` omits it) and its incarnation count is forgotten with
        it: a later :meth:`start_child` under that name starts again from
        incarnation 1. Delete only a name whose old incarnations nobody still
        tells apart by number.

        :param name: the child's name.
        :raises UnknownChild: if no child of that name is known.
        :raises SupervisorError: if the child has not ended: it is running,
            restarting, stopping or abandoned; stop it first (an abandoned
            child can be deleted once its task really ended).
        """
        child = self._child(name)
        if not child.ended.is_set():
            raise SupervisorError(
                f"cannot delete child {name!r}: incarnation {child.incarnation} is still "
                f"{child.state.value}; stop it first"
            )
        del self._children[name]

    def status(self, name: str) -> ChildStatus:
        """The current status of a child.

        :param name: the child's name.
        :raises UnknownChild: if no child of that name is known.
        """
        return self._child(name).status()

    def children(self) -> tuple[ChildStatus, ...]:
        """The status of every child started here and not deleted, in start order.

        Start order is the order of each name's latest :meth:`start_child`.
        """
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
            raise UnknownChild(f"no child named {name!r} is known to this supervisor") from None

    # -- waiting ------------------------------------------------------------------------------

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.unpark_all()

    async def _until(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds; re-checked after every change of any child."""
        while not condition():
            if self._changed is None:
                self._changed = trio.lowlevel.ParkingLot()
            await self._changed.park()

    # -- stopping -----------------------------------------------------------------------------

    def _begin_closing(self) -> None:
        """From now on nothing starts: no restart, no strategy round, no start_child."""
        self._closing = True
        if self._round is not None:
            self._round.scope.cancel()
            self._round = None

    async def _shutdown(self) -> None:
        self._begin_closing()
        for child in reversed(list(self._children.values())):
            await self._stop(child)

    async def _stop(self, child: _Child, reason: SiblingRestart | None = None) -> None:
        """Stop ``child`` for good and wait until it ended or was abandoned."""
        if not child.ended.is_set() and not child.final:
            child.final = True
            child.stop_reason = reason
            child.state = ChildState.STOPPING
            current = child.current
            if current is None or current.halt is None or current.over:
                # Otherwise the strategy's stop of this incarnation is already
                # under way, and its deadline is the one that holds.
                self._watch_deadline(child, None)
            child.scope.cancel()
            self._notify()
        await self._until(lambda: child.ended.is_set() or child.abandoned)

    def _halt(self, child: _Child, incarnation: _Incarnation, reason: SiblingRestart) -> None:
        """Stop one incarnation for the strategy: the child itself stays, to be restarted."""
        incarnation.halt = reason
        child.state = ChildState.STOPPING
        self._watch_deadline(child, incarnation)
        assert incarnation.scope is not None  # a strategy that stops siblings gives each incarnation a scope
        incarnation.scope.cancel()
        self._notify()

    def _watch_deadline(self, child: _Child, incarnation: _Incarnation | None) -> None:
        """Abandon ``child`` at its deadline unless it (or ``incarnation``) ended by then."""
        assert self._nursery is not None
        deadline = trio.current_time() + child.spec.shutdown_timeout

        def done() -> bool:
            return child.ended.is_set() if incarnation is None else incarnation.over

        async def watch() -> None:
            with trio.CancelScope(shield=True):  # the supervisor's own work: never cancelled from outside
                with trio.move_on_at(deadline):
                    await self._until(done)
                if not done() and not child.abandoned:
                    self._abandon(child)

        self._nursery.start_soon(watch, name=f"supervisors:deadline:{child.spec.name}")

    def _abandon(self, child: _Child) -> None:
        child.final = True
        child.abandoned = True
        child.state = ChildState.ABANDONED
        child.error = ChildAbandoned(
            f"child {child.spec.name!r} incarnation {child.incarnation} did not finish "
            f"within its shutdown_timeout of {child.spec.shutdown_timeout:g} s after "
            f"being cancelled; its task is left running (it is probably inside a "
            f"shielded scope)"
        )
        logger.warning("%s", child.error)
        self._emit(EventKind.STOPPED, child, child.error)

    # -- running ------------------------------------------------------------------------------

    async def _supervise(
        self, child: _Child, *, task_status: trio.TaskStatus[ChildStatus] = trio.TASK_STATUS_IGNORED
    ) -> None:
        child.starter = task_status
        del task_status
        first_start = True
        try:
            with child.scope:
                if self._closing:
                    # Shutdown began between start_child's check and this task's first step.
                    self._settle(child, ChildState.STOPPED, None)
                    raise SupervisorError(f"cannot start child {child.spec.name!r}: the supervisor is closing")
                while not child.final:
                    if not first_start and self._closing:
                        # Shutdown began while this restart waited for its turn:
                        # it never starts; the shutdown's stop ends it, in order.
                        await trio.sleep_forever()
                    incarnation, error = await self._run_incarnation(child, first_start)
                    if incarnation.fatal:
                        return
                    if child.final:
                        if child.abandoned:
                            self._emit(EventKind.EXITED, child, error)
                        break
                    if incarnation.halt is not None:
                        turn = self._await_round(child, incarnation.halt)
                    else:
                        self._emit(EventKind.EXITED, child, error)
                        if first_start and not incarnation.up:
                            self._settle(child, ChildState.EXITED, error)
                            raise (
                                error
                                if error is not None
                                else ChildNotStarted(f"child {child.spec.name!r} returned before reporting started")
                            )
                        turn = self._after_exit(child, error)
                    first_start = False
                    child.first_starting = False
                    if turn is None:
                        break
                    if isinstance(turn, trio.Event):
                        await turn.wait()
                    else:
                        await trio.sleep(turn)
            if first_start and child.first_starting:
                raise ChildNotStarted(f"child {child.spec.name!r} was stopped before it reported started")
        finally:
            child.first_starting = False
            child.starter = None
            if child.state not in _FINAL_STATES:
                if child.state is not ChildState.ABANDONED:  # its STOPPED went out at the deadline
                    self._emit(EventKind.STOPPED, child, child.stop_reason)
                self._settle(child, ChildState.STOPPED, child.stop_reason)
            child.ended.set()
            self._notify()

    async def _run_incarnation(self, child: _Child, first_start: bool) -> tuple[_Incarnation, Exception | None]:
        """Run one incarnation; return it and its error (``None`` for a return or a stop)."""
        child.incarnation += 1
        one_for_one = self._strategy is Strategy.ONE_FOR_ONE
        incarnation = _Incarnation(child.incarnation, scope=None if one_for_one else trio.CancelScope())
        child.current = incarnation
        child.state = ChildState.STARTING
        child.gate = None
        child.up_since = None

        # A partial of a method, not a closure over this frame: the context lives as long as the incarnation.
        report_started = functools.partial(self._report_started, child, incarnation, first_start)
        context = ChildContext(child.spec.name, incarnation.number, report_started=report_started)
        try:
            if incarnation.scope is None:
                await child.spec.run(context)
            else:
                with incarnation.scope:
                    await child.spec.run(context)
        except BaseException as raised:
            cancelled, rest = _split_cancelled(raised)
            if rest is not None and not isinstance(rest, Exception):
                # KeyboardInterrupt, SystemExit: not a crash to restart.
                incarnation.over = True
                self._settle(child, ChildState.EXITED, rest)
                self._emit(EventKind.EXITED, child, rest)
                if first_start and not incarnation.up:
                    raise  # a failed first start: the caller's, like any other
                incarnation.fatal = True
                self._fail(rest)
                return incarnation, None
            if cancelled and not child.final and incarnation.halt is None:
                raise  # cancelled by the caller of start_child: not a crash
            return incarnation, rest
        finally:
            incarnation.over = True
            self._notify()
        return incarnation, None

    def _report_started(self, child: _Child, incarnation: _Incarnation, first_start: bool) -> None:
        """An incarnation of ``child`` reported started (its ``ChildContext.started()``)."""
        if incarnation.over or incarnation.halt is not None or child.final:
            return  # an ended or stopping incarnation no longer speaks for the child
        if incarnation.up:
            raise RuntimeError(f"child {child.spec.name!r} incarnation {incarnation.number} reported started twice")
        incarnation.up = True
        child.first_starting = False
        child.up_since = trio.current_time()
        child.state = ChildState.RUNNING
        child.error = None
        self._emit(EventKind.STARTED, child)
        starter, child.starter = child.starter, None
        if first_start and starter is not None:
            # The snapshot is taken here: by the time start_child's caller
            # resumes, the child may have crashed and be restarting.
            starter.started(child.status())
            if trio.lowlevel.current_task().parent_nursery is self._nursery:
                # Moved into the supervisor's nursery, beside the owner's body: only
                # the supervisor may cancel it from now on (its own scope's cancel()
                # still works through the shield). A caller cancelled meanwhile
                # keeps the task, which ends with that caller's cancellation.
                child.scope.shield = True

    def _fail(self, error: BaseException) -> None:
        """A child raised KeyboardInterrupt or SystemExit: stop everything and re-raise it."""
        if self._fatal is not None:
            logger.warning("another child raised %r while the supervisor was already stopping", error)
            return
        self._fatal = error
        self._begin_closing()
        self._body_scope.cancel()

    # -- deciding -----------------------------------------------------------------------------

    def _after_exit(self, child: _Child, error: Exception | None) -> float | trio.Event | None:
        """Decide what follows an exit on its own: a delay, a round's gate, or ``None`` (final)."""
        restart = child.spec.restart
        wanted = restart is Restart.PERMANENT or (restart is Restart.TRANSIENT and error is not None)
        if not wanted or self._closing:
            self._settle(child, ChildState.EXITED, error)
            return None
        now = trio.current_time()
        intensity = child.spec.intensity if child.spec.intensity is not None else self._intensity
        history = intensity.admit(child.restart_history, now)
        if history is None:
            self._give_up(child, error)
            logger.warning(
                "giving up child %r after incarnation %d: more than %d restarts in %g s",
                child.spec.name,
                child.incarnation,
                intensity.max_restarts,
                intensity.period,
            )
            if self._escalate:
                self._escalate_with(
                    RestartIntensityExceeded(
                        f"child {child.spec.name!r} exceeded {intensity.max_restarts} restarts in "
                        f"{intensity.period:g} s; the supervisor stopped all its children"
                    ),
                    error,
                )
            return None
        shared = self._supervisor_intensity
        if shared is not None:
            shared_history = shared.admit(self._restart_history, now)
            if shared_history is None:
                self._give_up(child, error)
                logger.warning(
                    "supervisor restart intensity spent by child %r incarnation %d: more than %d "
                    "restarts of all children in %g s; stopping every child",
                    child.spec.name,
                    child.incarnation,
                    shared.max_restarts,
                    shared.period,
                )
                self._escalate_with(
                    RestartIntensityExceeded(
                        f"the children together exceeded the supervisor's {shared.max_restarts} "
                        f"restarts in {shared.period:g} s (the last to exit was {child.spec.name!r}, "
                        f"incarnation {child.incarnation}); the supervisor stopped all its children"
                    ),
                    error,
                )
                return None
            self._restart_history = shared_history
        child.restart_history = history
        backoff = child.spec.backoff if child.spec.backoff is not None else self._backoff
        if child.up_since is not None and now - child.up_since >= backoff.reset_after:
            child.backoff_attempt = 0
        delay = backoff.delay(child.backoff_attempt, self._random)
        child.backoff_attempt += 1
        logger.info(
            "restarting child %r in %.3f s after incarnation %d ended: %r",
            child.spec.name,
            delay,
            child.incarnation,
            error,
        )
        if self._strategy is Strategy.ONE_FOR_ONE:
            self._settle(child, ChildState.RESTARTING, error)
            self._emit(EventKind.RESTARTING, child, error, delay=delay)
            return delay
        return self._begin_round(child, error, delay)

    def _give_up(self, child: _Child, error: Exception | None) -> None:
        self._settle(child, ChildState.GAVE_UP, error)
        self._emit(EventKind.GAVE_UP, child, error)

    def _escalate_with(self, escalation: RestartIntensityExceeded, cause: Exception | None) -> None:
        if self._escalation is not None or self._fatal is not None:
            return
        escalation.__cause__ = cause
        self._escalation = escalation
        self._begin_closing()
        self._body_scope.cancel()

    # -- strategy rounds ----------------------------------------------------------------------

    def _in_play(self, child: _Child) -> bool:
        """Up or waiting for a restart: what a strategy round takes along."""
        return not child.ended.is_set() and not child.final and not child.first_starting

    def _in_start_order(self, children: Iterable[_Child]) -> list[_Child]:
        wanted = set(children)
        return [child for child in self._children.values() if child in wanted]

    def _begin_round(self, trigger: _Child, error: Exception | None, delay: float) -> trio.Event:
        """Start a strategy round for ``trigger``'s restart; return the gate it waits at."""
        assert self._nursery is not None
        now = trio.current_time()
        order = list(self._children.values())
        if self._strategy is Strategy.REST_FOR_ONE:
            order = order[order.index(trigger) :]
        members = {child for child in order if child is trigger or self._in_play(child)}
        restart_at = now + delay
        previous = self._round
        if previous is not None:
            # Overlapped: this round takes over every child the previous one
            # has not brought back yet, and honours its delay too.
            previous.scope.cancel()
            members |= {child for child in previous.members - previous.restarted if self._in_play(child)}
            restart_at = max(restart_at, previous.restart_at)
        reason = SiblingRestart(
            f"stopped to be restarted with sibling {trigger.spec.name!r}, whose incarnation "
            f"{trigger.incarnation} exited ({self._strategy.value}): {error!r}",
            sibling=trigger.spec.name,
            incarnation=trigger.incarnation,
        )
        reason.__cause__ = error
        round_ = _Round(trigger=trigger, members=members, restart_at=restart_at, reason=reason)
        self._round = round_
        gate = trigger.gate = trio.Event()
        self._settle(trigger, ChildState.RESTARTING, error)
        self._emit(EventKind.RESTARTING, trigger, error, delay=restart_at - now)
        if previous is not None and restart_at != previous.restart_at:
            for child in self._in_start_order(members):
                if child is not trigger and child.pending:
                    self._emit(EventKind.RESTARTING, child, child.error, delay=restart_at - now)
        self._nursery.start_soon(self._run_round, round_, name="supervisors:round")
        return gate

    def _await_round(self, child: _Child, reason: SiblingRestart) -> trio.Event | None:
        """A strategy stop ended ``child``'s incarnation: wait for the round, or end for good."""
        round_ = self._round
        if self._closing or round_ is None or child not in round_.members:
            child.final = True
            child.stop_reason = reason
            return None
        self._emit(EventKind.STOPPED, child, reason)
        gate = child.gate = trio.Event()
        self._settle(child, ChildState.RESTARTING, reason)
        delay = max(0.0, round_.restart_at - trio.current_time())
        self._emit(EventKind.RESTARTING, child, reason, delay=delay)
        return gate

    async def _run_round(self, round_: _Round) -> None:
        with trio.CancelScope(shield=True), round_.scope:  # stopped by its own scope, never from outside
            for member in reversed(self._in_start_order(round_.members)):
                if self._round is not round_:
                    return
                await self._take_down(member, round_.reason)
            await trio.sleep_until(round_.restart_at)
            for member in self._in_start_order(round_.members):
                if self._round is not round_:
                    return
                if member.gate is None or not member.pending:
                    continue  # stopped for good, or abandoned, meanwhile
                await self._bring_up(member, member.gate)
                round_.restarted.add(member)
        if self._round is round_:
            self._round = None

    async def _take_down(self, member: _Child, reason: SiblingRestart) -> None:
        """Stop one member of a round; return once it is down (or abandoned)."""
        incarnation = member.current
        if member.pending or member.final or member.ended.is_set() or incarnation is None:
            return
        if member.spec.restart is Restart.TEMPORARY:
            await self._stop(member, reason)  # a temporary child is never restarted
            return
        if incarnation.halt is None and not incarnation.over:
            self._halt(member, incarnation, reason)
        await self._until(lambda: incarnation.over or member.abandoned)

    async def _bring_up(self, member: _Child, gate: trio.Event) -> None:
        """Let ``member``'s next incarnation start; return once it is up, or it ended."""
        previous = member.current
        gate.set()

        def settled() -> bool:
            current = member.current
            if member.final or member.ended.is_set():
                return True
            return current is not previous and current is not None and (current.up or current.over)

        await self._until(settled)

    # -- reporting ----------------------------------------------------------------------------

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
        self._notify()
