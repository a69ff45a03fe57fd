"""asyncio_face: the asyncio face against the trio face, and the two ways to run trio under asyncio, side by side.

Every side talks to the stdlib fault server's ``echo`` tool over stdio, one
server per side, in one process:

- ``trio``: :func:`wave_actors.open_session` in this process's trio run (the baseline);
- ``thread (asyncio)``, ``thread (uvloop)``: :func:`wave_actors.asyncio.open_session`,
  called from an asyncio (uvloop) loop running in a thread of its own -- the
  face as shipped: a trio run in a thread of its own, hand-offs by
  ``run_sync_soon`` and ``call_soon_threadsafe``;
- ``guest (asyncio)``, ``guest (uvloop)``: the other way, measured here only:
  the trio session run as a guest of the loop
  (``trio.lowlevel.start_guest_run``), each call a task started through the
  trio token and answered through a future of the loop;
- ``selector guest (asyncio)``, ``selector guest (uvloop)``: a guest run that
  crosses no thread at all, measured here only, to show what running trio in
  the loop's own thread could at best give: trio waits for I/O in a thread of
  its own even as a guest, and here that wait is replaced, in this side's loop
  thread only, by the loop watching trio's epoll descriptor (``add_reader``)
  and a timer. It reaches into trio's private guest machinery
  (``trio._core._run.start_thread_soon``, the timeout in its callback's
  closure), which is why it is a measurement and not a way to ship; with a
  trio whose internals differ its rows say so and the rest runs.

Each round makes ``--calls`` sequential calls per side, side after side
(rotating who goes first), then a concurrent batch per side (``--concurrency``
tasks sharing ``--calls`` calls), then ``--turns`` first ``prepare_turn``s per
side, each on a fresh session, sides taking turns; ratios to the trio side are taken per round and their median
reported. Once, per asyncio side: a call of ``sleep 0.3`` on a server with
``tool_timeout_ms`` 600, during which the loop is blocked for
``--block`` seconds (``time.sleep`` in a callback): what the caller gets, and when.

Each round, per loop, after the calls: the floor of any way that runs trio
in a thread of its own, a bare hand-off there and back with no server and
none of the library (``TrioToken.run_sync_soon`` one way,
``call_soon_threadsafe`` the other), as a round trip in µs and as a share of
the trio face's call latency in that round. It has two values, not one
spread: about 20 µs when the kernel runs the two threads on one core, 50 to
65 when it wakes each on the other (an idle core of this virtual machine
takes ~25 µs to wake); the table shows both ends.

Targets (the face as shipped, each loop): call latency at most 1.2x the
trio face's, calls/s with 10 in flight at least 0.8x, first ``prepare_turn``
at most 1.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import outcome
import trio

import wave_actors.asyncio as wave_asyncio
from benchmarks.report import Progress, Table, at_least, at_most, info, median, ratio
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Session, WaveActorsError, open_session
from wave_actors.testing import fault_server_entry

NAME = "asyncio_face"
LATENCY_TARGET = 1.2
THROUGHPUT_TARGET = 0.8
FIRST_TURN_TARGET = 1.1

OPTIONS = (
    Option("calls", int, 1000, 200, "calls per side per round (sequential and concurrent)"),
    Option("warmup", int, 200, 50, "calls per side before measuring"),
    Option("rounds", int, 7, 2, "rounds"),
    Option("concurrency", int, 10, 10, "tasks in the concurrent batch"),
    Option("turns", int, 3, 1, "first prepare_turns per side per round (each on a fresh session; their median counts)"),
    Option("block", float, 1.0, 1.0, "seconds the loop is blocked in the blocked-loop check"),
    Option("loops", str, "asyncio,uvloop", "asyncio,uvloop", "asyncio loops to measure (uvloop only if installed)"),
    Option("guest", str, "yes", "yes", "measure trio's guest mode (both ways) as well: yes or no"),
    Option("floor", int, 1000, 300, "round trips of the bare two-thread hand-off, per loop per round"),
)

_T = TypeVar("_T")
Call = Callable[[], Awaitable[object]]
ARGUMENTS = {"text": "hello"}


class LoopThread:
    """An asyncio loop (standard or uvloop) running in a thread of its own; coroutines handed to it from trio."""

    def __init__(self, kind: str) -> None:
        if kind == "uvloop":
            import uvloop

            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        else:
            self.loop = asyncio.new_event_loop()
        self.kind = kind
        self.thread = threading.Thread(target=self._run, name=f"benchmark {kind} loop")
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def submit(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop; wait for it in a worker thread of trio."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await trio.to_thread.run_sync(future.result)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# The other way, for the comparison only: trio as a guest of the asyncio loop.


class GuestSession:
    """A trio session run by ``trio.lowlevel.start_guest_run`` on the running asyncio loop."""

    def __init__(self) -> None:
        self._session: Session | None = None
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None

    @classmethod
    @asynccontextmanager
    async def open(cls, workdir: Path, entry: dict[str, object]) -> AsyncGenerator[GuestSession, None]:
        loop = asyncio.get_running_loop()
        guest = cls()
        ready: asyncio.Future[None] = loop.create_future()
        done: asyncio.Future[outcome.Outcome[None]] = loop.create_future()

        async def trio_main() -> None:
            try:
                async with (
                    open_session(workdir=workdir, home=workdir / "home", mcp_servers={"f": entry}) as session,
                    trio.open_nursery() as nursery,
                ):
                    guest._session, guest._nursery = session, nursery
                    guest._token, guest._stop = trio.lowlevel.current_trio_token(), trio.Event()
                    ready.set_result(None)
                    await guest._stop.wait()
                    nursery.cancel_scope.cancel()
            except BaseException as error:
                if not ready.done():
                    ready.set_exception(RuntimeError(f"the guest run failed: {error!r}"))
                raise

        trio.lowlevel.start_guest_run(
            trio_main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=done.set_result,
            host_uses_signal_set_wakeup_fd=False,
        )
        try:
            await ready
            yield guest
        finally:
            if guest._token is not None and guest._stop is not None:
                guest._token.run_sync_soon(guest._stop.set)
            (await done).unwrap()

    async def run(self, function: Callable[[Session], Awaitable[_T]]) -> _T:
        """``function(session)`` as a trio task of the guest run, its outcome handed back through a future."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[outcome.Outcome[_T]] = loop.create_future()
        session, nursery, token = self._session, self._nursery, self._token
        assert session is not None and nursery is not None and token is not None

        async def task() -> None:
            result = await outcome.acapture(function, session)
            if not future.done():
                future.set_result(result)

        token.run_sync_soon(lambda: nursery.start_soon(task))
        return (await future).unwrap()

    async def call(self) -> object:
        return await self.run(lambda session: session.call_tool("mcp__f__echo", ARGUMENTS))


class SelectorWaits:
    """Guest runs whose blocking waits for I/O are their loop's selector, in the chosen loop threads only.

    A guest run's tick asks trio's thread cache to wait for I/O
    (``start_thread_soon(get_events, deliver)``) whenever trio would block;
    here, in a registered thread, that wait becomes the running loop
    watching trio's epoll descriptor, with a timer for trio's timeout, and
    ``deliver`` is called from the loop with what a non-blocking
    ``get_events`` finds. Private trio internals: :meth:`install` says
    whether this trio has them.
    """

    def __init__(self) -> None:
        self.threads: set[threading.Thread] = set()
        self._original: Any = None

    def install(self) -> str | None:
        """Patch trio (once); ``None`` if done, else why this trio cannot be measured this way."""
        if self._original is not None:
            return None
        if not sys.platform.startswith("linux"):
            return "not measurable here: it watches trio's epoll descriptor, which only Linux has"
        try:
            run_module: Any = importlib.import_module("trio._core._run")
            original = run_module.start_thread_soon
            run_module.GLOBAL_RUN_CONTEXT  # noqa: B018  # the thread-local that holds the running guest's runner
            inner = [
                code
                for code in run_module.GuestState.guest_tick.__code__.co_consts
                if getattr(code, "co_name", None) == "get_events"
            ]
        except (ImportError, AttributeError) as error:
            return f"not measurable with trio {trio.__version__}: {error}"
        if len(inner) != 1 or "timeout" not in inner[0].co_freevars:
            return f"not measurable with trio {trio.__version__}: its guest tick waits for I/O in another way"
        self._original = original
        waits = self

        def start_thread_soon(fn: Callable[[], Any], deliver: Callable[[Any], None], name: str | None = None) -> None:
            if threading.current_thread() not in waits.threads:
                original(fn, deliver, name)
                return
            waits.wait_in_selector(run_module, fn, deliver)

        run_module.start_thread_soon = start_thread_soon
        return None

    def uninstall(self) -> None:
        if self._original is not None:
            run_module: Any = importlib.import_module("trio._core._run")
            run_module.start_thread_soon = self._original
            self._original = None

    @staticmethod
    def wait_in_selector(run_module: Any, fn: Callable[[], Any], deliver: Callable[[Any], None]) -> None:
        runner = run_module.GLOBAL_RUN_CONTEXT.runner
        loop = asyncio.get_running_loop()
        descriptor = runner.io_manager._epoll.fileno()
        closure = fn.__closure__
        assert closure is not None  # install() saw the cell
        timeout: float = closure[fn.__code__.co_freevars.index("timeout")].cell_contents
        waiting = True

        def ready() -> None:
            nonlocal waiting
            if not waiting:
                return
            waiting = False
            loop.remove_reader(descriptor)
            timer.cancel()
            deliver(outcome.capture(runner.io_manager.get_events, 0))

        loop.add_reader(descriptor, ready)
        timer = loop.call_later(timeout, ready)


SELECTOR_WAITS = SelectorWaits()


def bare_round_trip(round_trips: int) -> Coroutine[Any, Any, float]:
    """The median µs of a hand-off to a bare trio thread and back: ``run_sync_soon``, then ``call_soon_threadsafe``."""

    async def measure() -> float:
        loop = asyncio.get_running_loop()
        started = threading.Event()
        tokens: list[trio.lowlevel.TrioToken] = []
        stop = threading.Event()

        async def trio_main() -> None:
            tokens.append(trio.lowlevel.current_trio_token())
            started.set()
            while not stop.is_set():
                await trio.sleep(0.05)

        thread = threading.Thread(target=trio.run, args=(trio_main,), name="benchmark bare trio")
        thread.start()
        started.wait()
        token = tokens[0]
        try:

            def there_and_back() -> asyncio.Future[None]:
                future: asyncio.Future[None] = loop.create_future()
                token.run_sync_soon(loop.call_soon_threadsafe, future.set_result, None)
                return future

            for _ in range(min(500, round_trips)):
                await there_and_back()
            times: list[float] = []
            for _ in range(round_trips):
                before = time.perf_counter_ns()
                await there_and_back()
                times.append((time.perf_counter_ns() - before) / 1e3)
            return statistics.median(times)
        finally:
            stop.set()
            thread.join()

    return measure()


# One side: how it opens a session and makes a call, in its own loop.


class Side:
    """A way to reach a session: trio itself, or from an asyncio loop in a thread (the face, or a guest run)."""

    def __init__(self, name: str, loop: LoopThread | None, way: str) -> None:
        self.name, self.loop, self.way = name, loop, way
        self._stack = AsyncExitStack()
        self.call: Call | None = None

    def opener(self, workdir: Path, entry: dict[str, object]) -> AbstractAsyncContextManager[Any]:
        if self.way == "trio":
            return open_session(workdir=workdir, home=workdir / "home", mcp_servers={"f": entry})
        if self.way == "thread":
            return wave_asyncio.open_session(workdir=workdir, home=workdir / "home", mcp_servers={"f": entry})
        return GuestSession.open(workdir, entry)  # "guest" and "selector" alike: the loop thread decides

    @property
    def guest(self) -> bool:
        """A guest run (either way), driven through :class:`GuestSession`."""
        return self.way in ("guest", "selector")

    async def within(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` in this side's loop (trio's own for the baseline)."""
        if self.loop is None:
            return await coroutine
        return await self.loop.submit(coroutine)

    async def open(self, workdir: Path, entry: dict[str, object]) -> None:
        async def enter() -> None:
            held = await self._stack.enter_async_context(self.opener(workdir, entry))
            if self.guest:
                self.call = held.call
                await held.run(lambda session: session.prepare_turn())
            else:
                await held.prepare_turn()
                self.call = lambda: held.call_tool("mcp__f__echo", ARGUMENTS)

        await self.within(enter())

    async def close(self) -> None:
        await self.within(self._stack.aclose())

    async def sequential(self, count: int) -> list[float]:
        """Latencies (µs) of ``count`` calls one after the other."""
        call = self.call
        assert call is not None

        async def measure() -> list[float]:
            latencies: list[float] = []
            for _ in range(count):
                before = time.perf_counter_ns()
                await call()
                latencies.append((time.perf_counter_ns() - before) / 1e3)
            return latencies

        return await self.within(measure())

    async def concurrent(self, count: int, tasks: int) -> float:
        """Calls/s of ``count`` calls shared by ``tasks`` tasks."""
        call = self.call
        assert call is not None

        async def worker(share: int) -> None:
            for _ in range(share):
                await call()

        shares = [count // tasks + (1 if index < count % tasks else 0) for index in range(tasks)]
        if self.loop is None:
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for share in shares:
                    nursery.start_soon(worker, share)
            return count / (time.perf_counter() - started)

        async def gathered() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(worker(share) for share in shares))
            return count / (time.perf_counter() - started)

        return await self.loop.submit(gathered())

    async def first_turn(self, workdir: Path, entry: dict[str, object]) -> float:
        """Seconds of the first ``prepare_turn`` of a fresh session (one server)."""

        async def measure() -> float:
            async with self.opener(workdir, entry) as held:
                started = time.perf_counter()
                if self.guest:
                    await held.run(lambda session: session.prepare_turn())
                else:
                    await held.prepare_turn()
                return time.perf_counter() - started

        return await self.within(measure())

    async def blocked(self, workdir: Path, block: float) -> str:
        """A 0.3 s call with a 0.6 s tool timeout while the loop is blocked ``block`` s: what came back, when."""
        entry = {**fault_server_entry(), "tool_timeout_ms": 600}

        async def measure() -> str:
            async with self.opener(workdir, entry) as held:
                if self.guest:
                    await held.run(lambda session: session.prepare_turn())

                    def call() -> Awaitable[object]:
                        return held.run(lambda session: session.call_tool("mcp__f__sleep", {"seconds": 0.3}))
                else:
                    await held.prepare_turn()

                    def call() -> Awaitable[object]:
                        return held.call_tool("mcp__f__sleep", {"seconds": 0.3})

                started = time.perf_counter()
                task = asyncio.ensure_future(call())
                await asyncio.sleep(0.02)  # the call is on its way
                time.sleep(block)
                try:
                    result = await task
                    seen = "the result" if not getattr(result, "is_error", False) else "an error result"
                except WaveActorsError as error:
                    seen = type(error).__name__
                return f"{seen}, at {time.perf_counter() - started:.1f} s"

        return await self.within(measure())


def _sides(arguments: argparse.Namespace) -> tuple[list[Side], list[LoopThread]]:
    loops: list[LoopThread] = []
    sides = [Side("trio", None, "trio")]
    for kind in [name for name in arguments.loops.split(",") if name]:
        if kind == "uvloop" and importlib.util.find_spec("uvloop") is None:
            print("asyncio_face: uvloop is not installed; its rows are left out", file=sys.stderr)
            continue
        loop = LoopThread(kind)
        loops.append(loop)
        sides.append(Side(f"thread ({kind})", loop, "thread"))
        if arguments.guest == "yes":
            sides.append(Side(f"guest ({kind})", loop, "guest"))
            unavailable = SELECTOR_WAITS.install()
            if unavailable is not None:
                print(
                    f"asyncio_face: a selector guest is {unavailable}; its rows are left out",
                    file=sys.stderr,
                )
            else:
                # A loop thread of its own: one thread holds one trio run, and this one's waits are the loop's.
                selector_loop = LoopThread(kind)
                loops.append(selector_loop)
                SELECTOR_WAITS.threads.add(selector_loop.thread)
                sides.append(Side(f"selector guest ({kind})", selector_loop, "selector"))
    return sides, loops


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    sides, loops = _sides(arguments)
    floors: dict[str, list[float]] = {}
    floor_ratios: dict[str, list[float]] = {}
    latencies: dict[str, list[float]] = {side.name: [] for side in sides}
    latency_ratios: dict[str, list[float]] = {side.name: [] for side in sides}
    throughputs: dict[str, list[float]] = {side.name: [] for side in sides}
    throughput_ratios: dict[str, list[float]] = {side.name: [] for side in sides}
    first_turns: dict[str, list[float]] = {side.name: [] for side in sides}
    first_turn_ratios: dict[str, list[float]] = {side.name: [] for side in sides}
    blocked: dict[str, str] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
            root = Path(directory)
            for round_index in range(arguments.rounds):
                progress.update("rounds", f"{round_index + 1}/{arguments.rounds}")
                order = sides[round_index % len(sides) :] + sides[: round_index % len(sides)]
                for side in order:
                    workdir = root / f"r{round_index}-{side.name.replace(' ', '-')}"
                    workdir.mkdir()
                    await side.open(workdir, fault_server_entry())
                    await side.sequential(arguments.warmup)
                try:
                    medians: dict[str, float] = {}
                    for side in order:
                        values = await side.sequential(arguments.calls)
                        latencies[side.name] += values
                        medians[side.name] = median(values)
                    for side in order:  # the floor, in the same conditions as the calls just measured
                        if side.way == "thread" and side.loop is not None:
                            floor = await side.within(bare_round_trip(arguments.floor))
                            floors.setdefault(side.loop.kind, []).append(floor)
                            floor_ratios.setdefault(side.loop.kind, []).append(ratio(floor, medians["trio"]))
                    rates: dict[str, float] = {}
                    for side in order:
                        rates[side.name] = await side.concurrent(arguments.calls, arguments.concurrency)
                        throughputs[side.name].append(rates[side.name])
                finally:
                    for side in order:
                        await side.close()
                taken: dict[str, list[float]] = {side.name: [] for side in sides}
                for turn in range(arguments.turns):
                    for side in order:
                        workdir = root / f"t{round_index}-{turn}-{side.name.replace(' ', '-')}"
                        workdir.mkdir()
                        taken[side.name].append(await side.first_turn(workdir, fault_server_entry()))
                turns = {name: median(values) for name, values in taken.items()}
                for name, values in taken.items():
                    first_turns[name] += values
                for side in sides:
                    latency_ratios[side.name].append(ratio(medians[side.name], medians["trio"]))
                    throughput_ratios[side.name].append(ratio(rates[side.name], rates["trio"]))
                    first_turn_ratios[side.name].append(ratio(turns[side.name], turns["trio"]))
            for side in sides[1:]:
                progress.update("blocked loop", side.name)
                workdir = root / f"blocked-{side.name.replace(' ', '-')}"
                workdir.mkdir()
                blocked[side.name] = await side.blocked(workdir, arguments.block)
    finally:
        for loop in loops:
            loop.close()
        SELECTOR_WAITS.uninstall()
    return _outcome(
        arguments,
        sides,
        latencies,
        latency_ratios,
        throughputs,
        throughput_ratios,
        first_turns,
        first_turn_ratios,
        blocked,
        floors,
        floor_ratios,
    )


def _outcome(
    arguments: argparse.Namespace,
    sides: list[Side],
    latencies: dict[str, list[float]],
    latency_ratios: dict[str, list[float]],
    throughputs: dict[str, list[float]],
    throughput_ratios: dict[str, list[float]],
    first_turns: dict[str, list[float]],
    first_turn_ratios: dict[str, list[float]],
    blocked: dict[str, str],
    floors: dict[str, list[float]],
    floor_ratios: dict[str, list[float]],
) -> Outcome:
    result = Outcome()
    table = Table(
        f"asyncio_face: echo over stdio, {arguments.rounds} rounds x {arguments.calls} calls per side, "
        f"{arguments.concurrency} in flight; ratios to the trio face per round, medians",
        [
            "side",
            "latency µs",
            "ratio",
            "calls/s",
            "ratio",
            "first prepare_turn ms",
            "ratio",
            f"0.3 s call, timeout 0.6 s, loop blocked {arguments.block:g} s",
        ],
    )
    for side in sides:
        table.add(
            side.name,
            median(latencies[side.name]),
            median(latency_ratios[side.name]),
            median(throughputs[side.name]),
            median(throughput_ratios[side.name]),
            median(first_turns[side.name]) * 1000,
            median(first_turn_ratios[side.name]),
            blocked.get(side.name, "(no loop to block)"),
        )
    result.tables.append(table)
    floor_table = Table(
        "the floor of a trio thread: a bare hand-off there and back (run_sync_soon, call_soon_threadsafe), "
        "no server, measured each round after the calls; medians",
        ["loop", "round trip µs", "fewest, most", "share of a trio face call", "fewest, most"],
    )
    for kind, values in floors.items():
        shares = floor_ratios[kind]
        share = median(shares)
        floor_table.add(
            kind,
            median(values),
            f"{min(values):.1f}, {max(values):.1f}",
            share,
            f"{min(shares):.2f}, {max(shares):.2f}",
        )
        result.headlines.append(info(f"bare two-thread hand-off ({kind}) / trio call latency", share))
    if floors:
        result.tables.append(floor_table)
    for side in sides[1:]:
        if side.way == "thread":
            result.headlines += [
                at_most(f"{side.name} / trio: call latency", median(latency_ratios[side.name]), LATENCY_TARGET),
                at_least(
                    f"{side.name} / trio: calls/s, {arguments.concurrency} in flight",
                    median(throughput_ratios[side.name]),
                    THROUGHPUT_TARGET,
                ),
                at_most(
                    f"{side.name} / trio: first prepare_turn", median(first_turn_ratios[side.name]), FIRST_TURN_TARGET
                ),
            ]
        else:
            result.headlines += [
                info(f"{side.name} / trio: call latency", median(latency_ratios[side.name])),
                info(
                    f"{side.name} / trio: calls/s, {arguments.concurrency} in flight",
                    median(throughput_ratios[side.name]),
                ),
            ]
    result.data = {
        "latency_us": {name: median(values) for name, values in latencies.items()},
        "latency_ratios": latency_ratios,
        "calls_per_second": throughputs,
        "throughput_ratios": throughput_ratios,
        "first_turn_seconds": first_turns,
        "first_turn_ratios": first_turn_ratios,
        "blocked_loop": blocked,
        "bare_round_trip_us": floors,
        "bare_round_trip_ratios": floor_ratios,
    }
    return result


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
