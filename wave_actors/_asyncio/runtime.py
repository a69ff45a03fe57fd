"""A trio run in a thread of its own, serving one asyncio loop, and every hand-off between them (R-AIO-1, R-AIO-2).

:meth:`TrioRuntime.open` starts a thread running ``trio.run``; in it, a
*holder* (``Host.open(...)`` or ``open_session(...)``, the trio ones) is
entered and held until the asyncio side lets go. Everything the asyncio side
asks is an *operation*: asked for through the trio token, run by a worker
task of the runtime's nursery, its outcome handed back by
``loop.call_soon_threadsafe``. Workers wait idle between operations (up to
:data:`IDLE_WORKERS` of them): a task spawned per operation cost more than
the hand-off across the threads. The hand-offs go in batches, each way one
wake-up of the other thread for all that is ready: what one step of the loop
asked for (:meth:`TrioRuntime.request`), and what one trio batch handed back,
sent as trio is about to wait for I/O, or after :data:`HOLD_LIMIT` while it
stays busy (:meth:`TrioRuntime.post`). Each wake-up is a system call, and a
woken thread takes the interpreter lock at the other's next system call;
with ten calls in flight, one at a time cost the face about a third of its
calls per second.
Operations take their first step in the order they were asked for, so a
``connect`` asked before a ``disconnect`` reaches its server first, as two
trio tasks calling them in turn would (R-RACE-3). Trio runs the tasks of one
batch in any order, so at most one operation is ever handed to a worker and
not yet running: the next one is handed over by it, as its first act, and so
runs in a later batch, after this one's first step. An operation asked for
when none is waiting to run is handed over at once, from the token's
callback: one scheduling pass from the request to its first step.
Why a thread and not trio's guest mode is said, with the figures, in
:mod:`wave_actors.asyncio`.

Cancellation both ways. An asyncio task cancelled while it awaits an
operation cancels that operation's trio cancel scope, then waits until the
operation has ended, then raises :class:`asyncio.CancelledError`: what the
trio side does with a cancellation (a call sends ``notifications/cancelled``;
a destroy, shielded, first reclaims every process) is done before the caller
sees it. A trio-side failure reaches the caller as the very exception object,
its trio frames in its traceback. The other way, a trio task waiting for an
asyncio coroutine (:meth:`TrioRuntime.run_in_loop`, for ``before_destroy``
hooks) cancels the asyncio task when it is cancelled itself.

Endings. Letting go of the holder (leaving the ``async with``) is waited for
whatever cancellations arrive meanwhile. A loop that goes away without
letting go -- closed, or its thread gone, or the interpreter shutting down
(its main thread ended) -- is noticed by the trio side within
:data:`LOOP_POLL` seconds and the holder is left then, so every process is
reclaimed anyway. The thread is not a daemon: an interpreter that exits
waits for that reclamation. Entering the holder is never cut short: letting
go while it opens (a task cancelled as its host opens) takes effect once it
is open.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Generic, TypeVar, overload

import attrs
import outcome
import trio

from wave_actors._errors import WaveActorsError

__all__ = ["HOLD_LIMIT", "LOOP_POLL", "RuntimeClosed", "TrioRuntime"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_R = TypeVar("_R")

LOOP_POLL: Final = 0.1
"""Seconds between two looks, from the trio side, at whether the asyncio loop is still there."""

HOLD_LIMIT: Final = 0.002
"""Seconds an outcome may wait for the trio thread to run out of tasks before the loop is woken for it anyway.

While trio has tasks to run, a woken loop would take the interpreter lock
from them at each of their system calls; holding the outcomes until trio is
about to wait (or this long) let ten calls in flight run ~25% more calls a
second on 2 cores, for at most this much latency under a busy trio thread.
"""

IDLE_WORKERS: Final = 16
"""Trio tasks kept waiting for the next operation once theirs has ended (more are started when more run at once)."""


class RuntimeClosed(WaveActorsError):
    """The runtime's holder was let go (its host or session is closed): nothing more runs there."""


class TrioRuntime:
    """One trio run in a thread of its own, holding one trio host or session for one asyncio loop.

    Build it with :meth:`open`. Methods say which thread may call them.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self._loop = loop
        self._loop_thread = threading.current_thread()
        self._name = name
        self._token: trio.lowlevel.TrioToken | None = None
        self._operations: trio.Nursery | None = None
        self._held = trio.CancelScope()
        self._inbox: deque[Callable[[], object]] = deque()  # the asyncio thread appends; the trio thread takes
        self._inbox_posted = False  # set by the asyncio thread as it posts the taking, cleared by the trio thread
        self._outbox: deque[_Posted] = deque()  # the trio thread appends; the asyncio thread takes
        self._outbox_posted = False  # set by the trio thread as it posts the taking, cleared by the asyncio thread
        self._outbox_since = 0.0  # trio thread: when the oldest callback not yet sent was posted
        self._queued: deque[_Call[Any, Any]] = deque()  # trio thread: asked for, not spawned yet
        self._spawned: _Call[Any, Any] | None = None  # trio thread: handed to a worker, not running yet
        self._idle: list[trio.lowlevel.Task] = []  # trio thread: workers waiting for an operation
        self._release_requested = False  # asyncio thread, read by the trio thread
        self._letting_go = False  # trio thread
        self._entered = False  # trio thread
        self._accepting = False
        self._finished: asyncio.Future[None] = loop.create_future()

    @property
    def name(self) -> str:
        """What the runtime serves, as its thread is named (``wave-actors host``)."""
        return self._name

    @classmethod
    @asynccontextmanager
    async def open(
        cls, hold: Callable[[TrioRuntime], AbstractAsyncContextManager[_T]], *, name: str
    ) -> AsyncGenerator[tuple[TrioRuntime, _T], None]:
        """Start the thread, enter ``hold(runtime)`` there, and yield the runtime with what the holder yielded.

        Asyncio thread. Leaving the block lets go of the holder and returns
        once the trio run has ended (every process the holder started is
        gone); a cancellation meanwhile is raised after that.

        :param hold: called in the trio thread; its context manager is entered and exited there.
        :param name: the thread's name.
        :raises Exception: whatever entering or leaving the holder raised, as it was raised.
        """
        loop = asyncio.get_running_loop()
        runtime = cls(loop, name)
        entered: asyncio.Future[_T] = loop.create_future()
        thread = threading.Thread(target=runtime._run, args=(hold, entered), name=name)
        thread.start()
        try:
            value = await entered
            yield runtime, value
        finally:
            await runtime.release()

    async def release(self) -> None:
        """Let go of the holder, and return once the trio run has ended. Idempotent.

        Asyncio thread. Cancelling the caller does not stop the wait: the
        cancellation is raised once the run has ended.

        :raises Exception: what the trio run ended with (leaving the holder failed).
        """
        self._release_requested = True  # read by the trio side if it has not entered the holder yet
        self.request(self._let_go)
        await _wait_out(self._finished)
        self._finished.result()

    async def finished(self) -> None:
        """Return once the trio run has ended, whoever ended it. Asyncio thread; a cancellation waits for it too."""
        await _wait_out(self._finished)

    # asyncio -> trio

    def request(self, callback: Callable[[], object]) -> bool:
        """Run ``callback()`` soon in the trio thread; ``False`` if the run is over (or not started). Asyncio thread.

        Callbacks run in the order they were requested. Those requested
        before the trio thread takes them share one wake-up of it (one
        ``run_sync_soon``): a loop step that asks for ten operations wakes
        trio once.
        """
        token = self._token
        if token is None:
            return False
        self._inbox.append(callback)
        if self._inbox_posted:
            # A taking is on its way (trio runs every callback the token accepted, even as its run
            # ends) and clears the flag before it takes: it takes this one too.
            return True
        self._inbox_posted = True
        try:
            token.run_sync_soon(self._take_inbox)
        except trio.RunFinishedError:
            # Over: so is every request from now on (the flag stays set, and nothing would take them).
            self._token = None
            self._inbox.clear()
            return False
        return True

    def _take_inbox(self) -> None:
        """Trio thread, from the token: run every callback requested so far, in order."""
        self._inbox_posted = False  # before taking: one appended from now on posts a taking of its own
        inbox = self._inbox
        for _ in range(len(inbox)):
            inbox.popleft()()

    @overload
    async def run(self, function: Callable[[], Awaitable[_R]]) -> _R: ...
    @overload
    async def run(self, function: Callable[[], Awaitable[_R]], then: Callable[[_R], _T]) -> _T: ...
    async def run(self, function: Callable[[], Awaitable[_R]], then: Callable[[_R], _T] | None = None) -> Any:
        """Run ``function()`` as a trio task of the runtime and return (or raise) its outcome.

        Asyncio thread. Cancelling the caller cancels the trio task, waits
        until it has ended, and raises :class:`asyncio.CancelledError`.

        :param function: called in the trio thread.
        :param then: called in the asyncio thread with a successful result as
            soon as it arrives, even if the caller was cancelled meanwhile;
            its return value is what the caller gets. What must not be lost
            with a cancelled caller (the face of a session just created) is
            made here.
        :raises RuntimeClosed: the runtime has ended (the host or session is closed).
        """
        call: _Call[_R, _T] = _Call(self, function, then, self._loop.create_future())
        if not self.request(lambda: self._start(call)):
            raise RuntimeClosed(f"{self._name} is closed")
        return await call.result()

    def call_sync(self, function: Callable[[], _R]) -> _R:
        """Run ``function()`` in the trio thread and wait for it, blocking this thread: for quick reads only.

        Asyncio thread (never the trio thread).

        :raises RuntimeClosed: the runtime has ended.
        """
        token = self._token
        try:
            if token is None:
                raise trio.RunFinishedError
            return trio.from_thread.run_sync(function, trio_token=token)
        except trio.RunFinishedError:
            raise RuntimeClosed(f"{self._name} is closed") from None

    def relay(self, callback: Callable[..., object]) -> Callable[..., None]:
        """A callable for the trio side that calls ``callback`` in the asyncio thread, in order, in the caller's context.

        Asyncio thread (to make it; it captures the calling task's context
        variables). An exception ``callback`` raises goes to the loop's
        exception handler, as for any callback.
        """
        context = contextvars.copy_context()

        def relayed(*args: object) -> None:
            self._post(_Posted(callback, args, context))

        return relayed

    # trio -> asyncio

    def post(self, callback: Callable[..., object], *args: object) -> bool:
        """Run ``callback(*args)`` soon in the asyncio thread; ``False`` if the loop is closed. Trio thread.

        Callbacks run in the order they were posted (relayed ones among
        them). The loop is woken once for all that was posted, as trio is
        about to wait for I/O, or once :data:`HOLD_LIMIT` has passed while
        trio stays busy (:meth:`_flush`): the outcomes of ten calls answered
        in one batch wake it once, and not while trio has tasks to run, so
        the two threads do not take the interpreter from each other at every
        system call of those tasks. A closed loop is a loop gone: the
        holder is let go at once.
        """
        return self._post(_Posted(callback, args, None))

    def _post(self, posted: _Posted) -> bool:
        if self._loop.is_closed():
            self._let_go()
            return False
        if not self._outbox:
            self._outbox_since = time.perf_counter()
        self._outbox.append(posted)
        return True

    def _flush(self, timeout: float) -> None:
        """Trio thread, as trio is about to wait for I/O: wake the loop to take what was posted, unless it is woken already.

        While trio has tasks to run (``timeout`` 0) what was posted is held,
        up to :data:`HOLD_LIMIT`: the loop would only take the interpreter
        lock from those tasks at their every system call.
        """
        if not self._outbox or self._outbox_posted:
            return  # a taking on its way clears the flag before it takes: it takes what is there now too
        if timeout <= 0 and time.perf_counter() - self._outbox_since < HOLD_LIMIT:
            return
        self._outbox_posted = True
        try:
            self._loop.call_soon_threadsafe(self._take_outbox)
        except RuntimeError:  # the loop is closed
            self._let_go()

    def _take_outbox(self) -> None:
        """Asyncio thread: run every callback posted so far, in order, each as the loop would run it."""
        self._outbox_posted = False  # before taking: one posted from now on posts a taking of its own
        outbox = self._outbox
        for _ in range(len(outbox)):
            posted = outbox.popleft()
            try:
                if posted.context is None:
                    posted.callback(*posted.args)
                else:
                    posted.context.run(posted.callback, *posted.args)
            except (SystemExit, KeyboardInterrupt):
                if outbox and not self._outbox_posted:  # what is left runs in the loop's next step, if it has one
                    self._outbox_posted = True
                    self._loop.call_soon(self._take_outbox)
                raise
            except BaseException as error:
                self._loop.call_exception_handler(
                    {"message": f"Exception in callback {posted.callback!r}", "exception": error}
                )

    def start_soon(self, function: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Start ``function()`` as a task of the runtime, ended (cancelled) when the holder is let go. Trio thread."""
        if self._operations is not None:
            self._operations.start_soon(function, name=name)

    async def run_in_loop(self, function: Callable[[], Awaitable[_R]]) -> _R:
        """Run ``function()`` as an asyncio task and return (or raise) its outcome. Trio thread.

        Cancelled, it cancels the asyncio task and returns without waiting
        for it (an asyncio coroutine may ignore its cancellation).

        :raises WaveActorsError: the loop is closed, or the asyncio task was cancelled.
        """
        done = trio.Event()
        settled: list[outcome.Outcome[_R]] = []
        started: list[asyncio.Future[_R]] = []
        token = trio.lowlevel.current_trio_token()

        def settle(result: outcome.Outcome[_R]) -> None:
            settled.append(result)
            done.set()

        def finished(task: asyncio.Future[_R]) -> None:
            result = (
                outcome.Error(WaveActorsError(f"{self._name}: the asyncio task was cancelled"))
                if task.cancelled()
                else outcome.capture(task.result)
            )
            try:
                token.run_sync_soon(settle, result)
            except trio.RunFinishedError:
                pass

        def start() -> None:
            if done.is_set():
                return  # abandoned by a cancelled trio caller before it could start
            task = asyncio.ensure_future(function())
            started.append(task)
            task.add_done_callback(finished)

        if not self.post(start):
            raise WaveActorsError(f"{self._name}: the asyncio loop is closed")
        try:
            await done.wait()
        except BaseException:
            done.set()
            self.post(lambda: started and started[0].cancel())
            raise
        return settled[0].unwrap()

    # The trio thread.

    def _run(self, hold: Callable[[TrioRuntime], AbstractAsyncContextManager[_T]], entered: asyncio.Future[_T]) -> None:
        try:
            trio.run(self._main, hold, entered, instruments=[_FlushBeforeWaiting(self)])
        except BaseException as error:
            ended: outcome.Outcome[None] = outcome.Error(error)
        else:
            ended = outcome.Value(None)
        try:
            if self._outbox and not self._outbox_posted:
                # Posted by the run's last steps (an operation refused by the token's last callbacks),
                # after trio's last wait for I/O: sent now, before the end, or its caller would wait forever.
                self._outbox_posted = True
                self._loop.call_soon_threadsafe(self._take_outbox)
            self._loop.call_soon_threadsafe(self._ended, ended, entered)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting

    async def _main(
        self, hold: Callable[[TrioRuntime], AbstractAsyncContextManager[_T]], entered: asyncio.Future[_T]
    ) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as operations:
            self._operations = operations
            operations.start_soon(self._watch_loop, name=f"{self._name}: watching its asyncio loop")
            self._accepting = True
            held = await outcome.acapture(self._hold, hold, entered)
            self._accepting = False
            operations.cancel_scope.cancel()
            while self._queued:  # asked for while the holder was being let go: never started
                self.post(self._queued.popleft().deliver, outcome.Error(RuntimeClosed(f"{self._name} is closed")))
        held.unwrap()  # out here, not in a nursery: raised as it was, never in an exception group

    async def _hold(
        self, hold: Callable[[TrioRuntime], AbstractAsyncContextManager[_T]], entered: asyncio.Future[_T]
    ) -> None:
        with self._held:
            async with hold(self) as value:
                self._entered = True
                self.post(_settle, entered, outcome.Value(value))
                if self._release_requested or self._letting_go:
                    self._held.cancel()
                await trio.sleep_forever()

    def _let_go(self) -> None:
        """Trio thread: leave the holder now, or as soon as it is entered.

        Entering is never interrupted: a trio host cancelled halfway through
        its opening is not promised to unwind, and the opening is bounded.
        """
        self._letting_go = True
        if self._entered:
            self._held.cancel()

    def _start(self, call: _Call[Any, Any]) -> None:
        """Trio thread, from the token: start ``call`` as a task, or refuse it once the holder is being let go."""
        if not self._accepting or self._operations is None:
            self.post(call.deliver, outcome.Error(RuntimeClosed(f"{self._name} is closed")))
            return
        if self._spawned is None:
            self._spawn(self._operations, call)
        else:
            self._queued.append(call)

    def _spawn(self, operations: trio.Nursery, call: _Call[Any, Any]) -> None:
        """Hand ``call`` to an idle worker, or to a new one."""
        self._spawned = call
        if self._idle:
            trio.lowlevel.reschedule(self._idle.pop(), outcome.Value(call))
        else:
            operations.start_soon(self._worker, call, name=f"{self._name}: operations")

    async def _worker(self, call: _Call[Any, Any]) -> None:
        """Run operations one after the other, waiting idle in between; end when enough others wait idle.

        A task spawned per operation would cost more than the hand-off itself.
        """
        task = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:  # the holder is let go: the worker ends
            self._idle.remove(task)
            return trio.lowlevel.Abort.SUCCEEDED

        while True:
            await call.invoke()
            if len(self._idle) >= IDLE_WORKERS:
                return
            self._idle.append(task)
            call = await trio.lowlevel.wait_task_rescheduled(abort)

    def _running(self, call: _Call[Any, Any]) -> None:
        """Trio thread, the first act of ``call``'s task: spawn the next operation, to run after this first step."""
        if self._spawned is call:
            self._spawned = None
            if self._queued and self._accepting and self._operations is not None:
                self._spawn(self._operations, self._queued.popleft())

    async def _watch_loop(self) -> None:
        while not self._loop_gone():
            await trio.sleep(LOOP_POLL)
        if not self._letting_go:
            logger.warning("%s: its asyncio loop is gone with the block still open; closing it now", self._name)
        self._let_go()

    def _loop_gone(self) -> bool:
        return self._loop.is_closed() or not self._loop_thread.is_alive() or not threading.main_thread().is_alive()

    def _ended(self, ended: outcome.Outcome[None], entered: asyncio.Future[Any]) -> None:
        """Asyncio thread: the trio run is over."""
        if not entered.done():
            failure = ended.error if isinstance(ended, outcome.Error) else None
            entered.set_exception(failure or WaveActorsError(f"{self._name} closed before it opened"))
        _settle(self._finished, ended)


class _FlushBeforeWaiting(trio.abc.Instrument):
    """Wakes the asyncio loop for what the batch just run posted, as trio is about to wait for I/O."""

    __slots__ = ("_runtime",)

    def __init__(self, runtime: TrioRuntime) -> None:
        self._runtime = runtime

    def before_io_wait(self, timeout: float) -> None:
        self._runtime._flush(timeout)  # pyright: ignore[reportPrivateUsage]


@attrs.frozen
class _Posted:
    """A callback posted to the asyncio thread, with its arguments and, if relayed, the context to run it in."""

    callback: Callable[..., object]
    args: tuple[object, ...]
    context: contextvars.Context | None


class _Call(Generic[_R, _T]):
    """One operation: started in the trio thread, awaited in the asyncio thread."""

    def __init__(
        self,
        runtime: TrioRuntime,
        function: Callable[[], Awaitable[_R]],
        then: Callable[[_R], _T] | None,
        future: asyncio.Future[_T],
    ) -> None:
        self._runtime = runtime
        self._function = function
        self._then = then
        self._future = future
        self._scope: trio.CancelScope | None = None
        self._cancelled = False  # trio thread
        self._delivered = False  # asyncio thread
        self._ended: asyncio.Future[None] | None = None  # asyncio thread, once the caller stopped waiting

    @property
    def name(self) -> object:
        """What the trio task is named after: the function."""
        return self._function

    async def invoke(self) -> None:
        """Trio thread: run the function in a cancel scope of its own, and hand its outcome over.

        Its first act hands the next operation asked for to a worker, which
        therefore runs it after this one's first step (its command is issued).
        Never raises but a cancellation of the worker itself.
        """
        self._runtime._running(self)  # pyright: ignore[reportPrivateUsage]
        with trio.CancelScope() as scope:
            self._scope = scope
            if self._cancelled:
                scope.cancel()
            self._runtime.post(self.deliver, await outcome.acapture(self._function))

    def cancel(self) -> None:
        """Trio thread: the asyncio caller was cancelled."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    def deliver(self, result: outcome.Outcome[_R]) -> None:
        """Asyncio thread: the trio task has ended with ``result``."""
        self._delivered = True
        if isinstance(result, outcome.Error) and isinstance(result.error, trio.Cancelled):
            # Not asked for by the caller (that path raises CancelledError): the runtime is closing under it.
            result = outcome.Error(WaveActorsError(f"{self._runtime.name} closed while the operation ran"))
        final: outcome.Outcome[_T] = (
            outcome.capture(self._then, result.value)
            if self._then is not None and isinstance(result, outcome.Value)
            else result  # pyright: ignore[reportAssignmentType]  # without `then`, _T is _R
        )
        if not self._future.done():
            _settle(self._future, final)
        if self._ended is not None:
            _settle(self._ended, outcome.Value(None))

    async def result(self) -> _T:
        """Asyncio thread: the outcome; a cancellation cancels the trio task and waits for its end first."""
        try:
            return await self._future
        except asyncio.CancelledError:
            if not self._delivered:
                self._ended = asyncio.get_running_loop().create_future()
                if self._runtime.request(self.cancel):
                    await _wait_out(self._ended)
            raise


def _settle(future: asyncio.Future[_T], result: outcome.Outcome[_T]) -> None:
    """Asyncio thread: resolve ``future`` with ``result``, unless it is done already."""
    if future.done():
        return
    if isinstance(result, outcome.Value):
        future.set_result(result.value)
    else:
        assert isinstance(result, outcome.Error)
        future.set_exception(result.error)


async def _wait_out(future: asyncio.Future[Any]) -> None:
    """Wait until ``future`` is done, whatever cancellations arrive; raise the first of them afterwards."""
    cancelled: asyncio.CancelledError | None = None
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        raise cancelled
