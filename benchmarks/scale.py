"""scale: how each operation's cost grows as one host holds 10, 100, then 1 000 sessions.

One host, grown step by step to 10, 100 and 1 000 sessions, in each ownership
mode, each mode in a fresh interpreter (``--worker``), the two modes
alternating between runs. Every session is configured with 10 stdio fault
servers, 2 of them enabled (``live0``, ``live1``) and 8 disabled (listed,
never dialed: R-CFG-6). With ``ownership="project"`` every session of the
population takes its first turn, so all of them hold the project's 2 shared
connections; with ``ownership="session"`` the population is idle (a thousand
sessions owning two processes each would be 2 000 processes, which is the
``--live-servers`` measurement's business), and each sampled session dials
its own two.

At each step, with the population in place, ``--samples`` fresh sessions are
each measured through their life, one after the other:

- ``create``: ``host.create_session``;
- ``first turn``: its first ``prepare_turn`` (session mode: two dials;
  project mode: attaching to the live shared connections);
- ``call``: a sequential ``call_tool`` of ``echo``;
- ``status read``: the sampled session's first ``servers()`` (a snapshot
  built) and its second (cached); in project mode also ``servers()`` of a
  population session the sample's attach changed (reference counts);
- ``watch fan-out``: ``--watchers`` ``watch()`` iterators on population
  sessions sharing a connection (project mode) or on the sampled session
  (session mode): from the change (the sample's attach, or the end of its
  first turn) until the last watcher holds a snapshot showing it;
- ``destroy``: ``host.destroy_session`` (session mode: its two processes reclaimed).

Then a heartbeat task (``trio.sleep(0.001)`` in a loop) records how late each
tick wakes while ``--callers`` tasks call ``echo`` in a loop for
``--load-seconds`` on the population's connections (project mode) or on a
load session of its own (session mode). RSS (after ``gc.collect()``) and trio
tasks are counted per step, per session of the population.

The table prints the median and p99 of each figure per step and the ratio of
the figure at 1 000 to the figure at 10 (target <= 1.2: the cost of an
operation must not grow with the number of sessions).

``--live-servers N`` (not in the default run) also measures N live stdio
servers in one host: one session per server, dialed 20 at a time; the RSS each,
the dial and destroy-all times, the fds each, and the processes left (0).
Raise ``ulimit -n`` first: each server holds 6 descriptors.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio
import trio.testing

from benchmarks import processes
from benchmarks.report import Headline, Progress, Table, at_most, info, median, percentile, ratio
from benchmarks.scenario import Option, Outcome, main_or_worker, worker_parser

NAME = "scale"
MODES = ("session", "project")
CONFIGURED = 10
LIVE = 2

OPTIONS = (
    Option("steps", str, "10,100,1000", "10,100", "population sizes, in order"),
    Option("samples", int, 30, 10, "fresh sessions measured through their life at each step"),
    Option("watchers", int, 5, 5, "watch() iterators in the fan-out (fewer than the smallest step)"),
    Option("callers", int, 10, 10, "tasks calling in a loop while the heartbeat runs"),
    Option("load_seconds", float, 2.0, 1.0, "seconds of heartbeat under call load, per step"),
    Option("runs", int, 2, 1, "runs of each mode, each in a fresh interpreter, modes alternating"),
    Option("live_servers", int, 0, 0, "also measure this many live stdio servers in one host (0: not)"),
)

FIGURES = (
    "create",
    "first turn",
    "call",
    "status read",
    "status read (cached)",
    "status read (a sharer)",
    "watch fan-out",
    "destroy",
)
"""Per-operation figures, each a list of seconds per step."""


def _entries() -> dict[str, dict[str, object]]:
    from wave_actors.testing import fault_server_entry

    entries: dict[str, dict[str, object]] = {f"live{index}": fault_server_entry() for index in range(LIVE)}
    for index in range(CONFIGURED - LIVE):
        entries[f"idle{index}"] = {**fault_server_entry(), "enabled": False}
    return entries


STALL_MS = 10.0
"""A tick later than this is a stall, and its cause is named."""


async def _heartbeat(delays: list[float], woke: list[float], stop: trio.Event) -> None:
    """Sleep 1 ms at a time and record how late each wake-up was, and when it came (``perf_counter``)."""
    period = 0.001
    while not stop.is_set():
        expected = trio.current_time() + period
        await trio.sleep(period)
        delays.append(max(0.0, trio.current_time() - expected))
        woke.append(time.perf_counter())


class _LongSteps(trio.abc.Instrument):
    """Records every task step of at least ``threshold`` seconds: a stall's cause inside the loop, named.

    A step whose thread ran for less than half of it was mostly descheduled
    by the system (the machine's other work), not busy in this loop.
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.steps: list[tuple[float, float, str]] = []  # (ended at, seconds, what)
        self._started = 0.0
        self._cpu = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started, self._cpu = time.perf_counter(), time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        ended = time.perf_counter()
        if ended - self._started >= self.threshold:
            cpu = time.thread_time() - self._cpu
            running = f"{cpu * 1000:.0f} ms of it running"
            what = (
                task.name if cpu >= (ended - self._started) / 2 else f"{task.name} (its thread off the CPU: {running})"
            )
            self.steps.append((ended, ended - self._started, what))


def _stall_causes(
    delays: list[float],
    woke: list[float],
    pauses: list[tuple[int, float, float]],
    steps: list[tuple[float, float, str]],
) -> list[tuple[float, str]]:
    """Each stall (a tick later than :data:`STALL_MS`), in ms, with what overlapped it.

    A garbage collection or a long task step of this loop inside the late
    tick's window names it; with neither, no code of this process held the
    loop: it waited for a CPU (the machine's other processes).
    """
    stalls: list[tuple[float, str]] = []
    for delay, at in zip(delays, woke, strict=True):
        if delay * 1000 < STALL_MS:
            continue
        start = at - delay - 0.001

        def overlaps(ended: float, seconds: float, start: float = start, at: float = at) -> bool:
            return ended > start and ended - seconds < at

        collections = [
            f"full garbage collection ({seconds * 1000:.0f} ms)"
            if generation == 2
            else f"generation-{generation} collection ({seconds * 1000:.0f} ms)"
            for generation, seconds, ended in pauses
            if overlaps(ended, seconds)
        ]
        long_steps = [
            f"a {seconds * 1000:.0f} ms step of {name}" for ended, seconds, name in steps if overlaps(ended, seconds)
        ]
        stalls.append((delay * 1000, "; ".join(collections + long_steps) or "no long step: waiting for a CPU"))
    return stalls


class _CollectionTimer:
    """Times every garbage collection while installed (``gc.callbacks``): a stall's usual cause, named."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float, float]] = []  # (generation, seconds, ended at)
        self._started = 0.0

    def __call__(self, phase: str, information: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            ended = time.perf_counter()
            self.pauses.append((information["generation"], ended - self._started, ended))

    def __enter__(self) -> _CollectionTimer:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self)


async def _call_load(sessions: list[Any], callers: int, seconds: float) -> tuple[int, list[float], list[float]]:
    """``callers`` tasks calling ``echo`` in a loop for ``seconds``; the calls made, the heartbeat's delays and wake times."""
    delays: list[float] = []
    woke: list[float] = []
    stop = trio.Event()
    calls = 0

    async def caller(index: int) -> None:
        nonlocal calls
        session = sessions[index % len(sessions)]
        while not stop.is_set():
            await session.call_tool(f"mcp__live{index % LIVE}__echo", {"text": "load"})
            calls += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_heartbeat, delays, woke, stop)
        for index in range(callers):
            nursery.start_soon(caller, index)
        await trio.sleep(seconds)
        stop.set()
    return calls, delays, woke


async def _worker(arguments: argparse.Namespace) -> dict[str, Any]:
    """One mode, one run: the host grown step by step, each step measured."""
    import psutil

    from wave_actors import Host, ProjectOptions, ServerState
    from wave_actors.testing import count_tasks, leftover_processes

    mode: str = arguments.mode
    steps = [int(step) for step in arguments.steps.split(",")]
    entries = _entries()
    me = psutil.Process()
    chooser = random.Random(arguments.seed)
    result: dict[str, Any] = {"mode": mode, "steps": {}}

    def phase(text: str) -> None:
        print(f"[scale worker] {text}", file=sys.stderr, flush=True)

    async def first_turn(session: Any) -> None:
        await session.prepare_turn()
        states = {session.server(f"live{index}").state for index in range(LIVE)}
        if states != {ServerState.CONNECTED}:
            raise RuntimeError(f"{mode}: first turn left {states}: {[s.error for s in session.servers() if s.error]}")

    with tempfile.TemporaryDirectory(prefix="wave-bench-scale-") as directory:
        workdir = Path(directory)
        project = ProjectOptions(idle_timeout=0)  # the shared connections stay for the whole run
        async with Host.open(home=workdir / "home", project=project) as host:
            # Warm-up, counted nowhere: imports, the dial path, the page cache.
            warm = await host.create_session(workdir, entries, ownership=mode)
            await first_turn(warm)
            await warm.call_tool("mcp__live0__echo", {"text": "warm"})
            load = warm  # project mode: one more user of the shared connections; session mode: its own two
            gc.collect()
            rss_base = me.memory_info().rss
            tasks_base = count_tasks()
            population: list[Any] = []
            for size in steps:
                phase(f"{mode}: growing to {size} sessions")
                started = time.perf_counter()
                while len(population) < size:
                    session = await host.create_session(workdir, entries, ownership=mode)
                    if mode == "project":
                        await first_turn(session)
                    population.append(session)
                grow_seconds = time.perf_counter() - started
                gc.collect()
                step: dict[str, Any] = {
                    "grow_s": grow_seconds,
                    "rss_per_session": (me.memory_info().rss - rss_base) / size,
                    "tasks_per_session": (count_tasks() - tasks_base) / size,
                    "gc_tracked_objects": len(gc.get_objects()),
                }
                figures: dict[str, list[float]] = {figure: [] for figure in FIGURES}
                watched = chooser.sample(population, min(arguments.watchers, len(population)))
                unwatched = [session for session in population if session not in watched] or population
                phase(f"{mode}: {size} sessions, {arguments.samples} samples")
                for _ in range(arguments.samples):
                    seen: list[int] = []
                    ready = trio.Event()

                    async def watcher(target: Any, seen: list[int] = seen, ready: trio.Event = ready) -> None:
                        # Project mode: the first snapshot is the baseline; the change is one more session on live0.
                        baseline: int | None = None
                        async for snapshot in target.watch():
                            if mode == "project":
                                if baseline is None:
                                    baseline = _sessions_on_live0(snapshot)
                                    continue
                                if _sessions_on_live0(snapshot) <= baseline:
                                    continue
                            elif not _connected(snapshot):
                                continue
                            seen.append(1)
                            if len(seen) == arguments.watchers:
                                ready.set()
                            return

                    async with trio.open_nursery() as nursery:
                        if mode == "project":
                            for target in watched:
                                nursery.start_soon(watcher, target)
                            await trio.testing.wait_all_tasks_blocked()
                        started = time.perf_counter()
                        sample = await host.create_session(workdir, entries, ownership=mode)
                        figures["create"].append(time.perf_counter() - started)
                        started = time.perf_counter()
                        sample.servers()  # its first snapshot: built, with the whole population around
                        figures["status read"].append(time.perf_counter() - started)
                        started = time.perf_counter()
                        sample.servers()
                        figures["status read (cached)"].append(time.perf_counter() - started)
                        if mode == "project":
                            changed = time.perf_counter()
                            await ready.wait()
                            figures["watch fan-out"].append(time.perf_counter() - changed)
                        else:
                            for _ in range(arguments.watchers):
                                nursery.start_soon(watcher, sample)
                            await trio.testing.wait_all_tasks_blocked()
                        started = time.perf_counter()
                        await first_turn(sample)
                        figures["first turn"].append(time.perf_counter() - started)
                        if mode == "session":
                            changed = time.perf_counter()
                            await ready.wait()
                            figures["watch fan-out"].append(time.perf_counter() - changed)
                    started = time.perf_counter()
                    await sample.call_tool("mcp__live0__echo", {"text": "sample"})
                    figures["call"].append(time.perf_counter() - started)
                    if mode == "project":
                        # A session sharing the connections, not watched: the sample's attach changed its view.
                        reader = chooser.choice(unwatched)
                        started = time.perf_counter()
                        reader.servers()
                        figures["status read (a sharer)"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    await host.destroy_session(sample.id)
                    figures["destroy"].append(time.perf_counter() - started)
                step["figures"] = figures
                phase(f"{mode}: {size} sessions, heartbeat under call load")
                callers = population if mode == "project" else [load]
                long_steps = _LongSteps(STALL_MS / 2000)
                trio.lowlevel.add_instrument(long_steps)
                try:
                    with _CollectionTimer() as collections:
                        calls, delays, woke = await _call_load(callers, arguments.callers, arguments.load_seconds)
                finally:
                    trio.lowlevel.remove_instrument(long_steps)
                step["gc_pauses"] = collections.pauses
                step["stalls"] = _stall_causes(delays, woke, collections.pauses, long_steps.steps)
                step["load_calls_per_s"] = calls / arguments.load_seconds
                step["tick_delays"] = delays
                result["steps"][str(size)] = step
            phase(f"{mode}: destroying {len(population)} sessions")
            started = time.perf_counter()
            for session in host.sessions():
                await host.destroy_session(session.id)
            result["destroy_all_s"] = time.perf_counter() - started
    left = leftover_processes(processes.RUN_VARIABLE, processes.RUN_MARK)
    result["left_after_close"] = len(left)
    return result


def _sessions_on_live0(snapshot: Any) -> int:
    shared = snapshot.server("live0").shared
    return -1 if shared is None else shared.sessions


def _connected(snapshot: Any) -> bool:
    return all(snapshot.server(f"live{index}").state.value == "connected" for index in range(LIVE))


async def _live_servers(count: int) -> dict[str, Any]:
    """``count`` live stdio servers in one host: RSS each, dial time, fds each, destroy-all time, processes left."""
    import psutil

    from wave_actors import Host, ServerState
    from wave_actors.testing import fault_server_entry, leftover_processes

    me = psutil.Process()
    result: dict[str, Any] = {"servers": count}
    with tempfile.TemporaryDirectory(prefix="wave-bench-live-") as directory:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home") as host:
            protection = host.orphan_protection().file_descriptors
            result["descriptors_at_start"] = None if protection is None else protection.in_use
            result["soft_limit"] = None if protection is None else protection.soft_limit
            warm = await host.create_session(workdir, {"s": fault_server_entry()})
            await warm.prepare_turn()
            await host.destroy_session(warm.id)
            gc.collect()
            rss_before = me.memory_info().rss
            fds_before = me.num_fds()
            sessions = [await host.create_session(workdir, {"s": fault_server_entry()}) for _ in range(count)]
            started = time.perf_counter()
            limiter = trio.CapacityLimiter(20)

            async def dial(session: Any) -> None:
                async with limiter:
                    await session.prepare_turn()

            async with trio.open_nursery() as nursery:
                for session in sessions:
                    nursery.start_soon(dial, session)
            result["dial_all_s"] = time.perf_counter() - started
            errors = [s.server("s").error for s in sessions if s.server("s").state is not ServerState.CONNECTED]
            result["not_connected"] = len(errors)
            result["first_errors"] = errors[:3]
            gc.collect()
            result["rss_per_server"] = (me.memory_info().rss - rss_before) / count
            result["fds_per_server"] = (me.num_fds() - fds_before) / count
            result["live_processes"] = len(processes.leftovers())
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for session in sessions:
                    nursery.start_soon(host.destroy_session, session.id)
            result["destroy_all_s"] = time.perf_counter() - started
    result["left_after_close"] = len(leftover_processes(processes.RUN_VARIABLE, processes.RUN_MARK))
    return result


async def _spawn_worker(arguments: argparse.Namespace, progress: Progress, label: str, *flags: str) -> dict[str, Any]:
    command = [sys.executable, "-m", f"benchmarks.{NAME}", "--worker", *flags]
    for option in ("steps", "samples", "watchers", "callers", "load_seconds"):
        command += ["--" + option.replace("_", "-"), str(getattr(arguments, option))]
    command += ["--seed", str(arguments.seed)]
    progress.update(label, " ".join(flags))
    # The worker keeps this process's run mark, so that the final sweep finds whatever it left.
    env = {**os.environ, processes.INHERIT_VARIABLE: "1"}
    completed = await trio.run_process(
        command, capture_stdout=True, check=True, cwd=Path(__file__).parent.parent, env=env
    )
    return json.loads(completed.stdout.decode().strip().splitlines()[-1])


def _longest_full(runs: list[dict[str, Any]], size: str) -> float:
    """The longest generation-2 collection seen under call load at ``size``, in seconds (NaN: none ran)."""
    pauses = [seconds for run in runs for generation, seconds, _ in run["steps"][size]["gc_pauses"] if generation == 2]
    return max(pauses, default=math.nan)


def _stall_summary(runs: list[dict[str, Any]], size: str) -> str:
    """How many stalls there were at ``size``, by cause, and the worst with its cause."""
    stalls = [(delay, cause) for run in runs for delay, cause in run["steps"][size]["stalls"]]
    if not stalls:
        return "none"
    kinds = Counter(
        "garbage collection"
        if "collection" in cause
        else "waiting for a CPU"
        if "off the CPU" in cause or "no long step" in cause
        else "a long task step"
        for _, cause in stalls
    )
    worst, cause = max(stalls)
    by_cause = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    return f"{len(stalls)} ({by_cause}); worst {worst:.1f} ms: {cause}"


def _ms(values: list[float]) -> tuple[float, float]:
    milliseconds = [value * 1000 for value in values]
    return median(milliseconds), percentile(milliseconds, 0.99)


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    steps = [int(step) for step in arguments.steps.split(",")]
    if min(steps) <= arguments.watchers:
        raise SystemExit("--watchers must be fewer than the smallest step (some sessions are read unwatched)")
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for index in range(arguments.runs):
        for mode in MODES if index % 2 == 0 else MODES[::-1]:
            label = f"run {index + 1}/{arguments.runs}: ownership={mode}"
            results[mode].append(await _spawn_worker(arguments, progress, label, "--mode", mode))
    outcome = Outcome(data={"runs": results})
    first, last = str(steps[0]), str(steps[-1])

    def pooled(mode: str, size: str, figure: str) -> list[float]:
        return [value for run in results[mode] for value in run["steps"][size]["figures"][figure]]

    def per_step(mode: str, size: str, key: str) -> float:
        return median(run["steps"][size][key] for run in results[mode])

    for mode in MODES:
        table = Table(
            f"scale, ownership={mode}: per-operation cost (ms) as the host grows; "
            f"{arguments.samples} samples per step x {arguments.runs} run(s)",
            ["figure", *(f"{size}: median" for size in steps), *(f"{size}: p99" for size in steps), f"{last}/{first}"],
        )
        for figure in FIGURES:
            medians = [_ms(pooled(mode, str(size), figure))[0] for size in steps]
            p99s = [_ms(pooled(mode, str(size), figure))[1] for size in steps]
            table.add(figure, *medians, *p99s, ratio(medians[-1], medians[0]))
        ticks = {
            str(size): [d * 1000 for run in results[mode] for d in run["steps"][str(size)]["tick_delays"]]
            for size in steps
        }
        table.add(
            "tick delay under call load",
            *(median(ticks[str(size)]) for size in steps),
            *(percentile(ticks[str(size)], 0.99) for size in steps),
            ratio(percentile(ticks[last], 0.99), percentile(ticks[first], 0.99)),
        )
        table.notes += [
            "per step: "
            + "; ".join(
                f"{size}: RSS {per_step(mode, str(size), 'rss_per_session') / 1024:.1f} KiB/session, "
                f"{per_step(mode, str(size), 'tasks_per_session'):.2f} tasks/session, "
                f"worst tick {max(ticks[str(size)], default=math.nan):.1f} ms, "
                f"{per_step(mode, str(size), 'load_calls_per_s'):.0f} calls/s under load, "
                f"{per_step(mode, str(size), 'gc_tracked_objects'):,.0f} GC-tracked objects, "
                f"longest full collection under load {_longest_full(results[mode], str(size)) * 1000:.1f} ms"
                for size in steps
            ),
            "status read: the sampled session's first servers() (a snapshot built), right after its create; "
            "(cached): the second; (a sharer): servers() of a random unwatched population session after the "
            "sample's attach changed its reference counts (project mode).",
            "watch fan-out: "
            + (
                f"{arguments.watchers} watch() iterators on population sessions, from the sample's attach to the last "
                "holding the new reference count."
                if mode == "project"
                else f"{arguments.watchers} watch() iterators on the sampled session, from the end of its first turn "
                "to the last holding it connected."
            ),
            f"tick delay: a 1 ms heartbeat's lateness while {arguments.callers} tasks call echo for "
            f"{arguments.load_seconds:g} s, per step.",
            *(f"stalls over {STALL_MS:g} ms at {size}: {_stall_summary(results[mode], str(size))}" for size in steps),
        ]
        outcome.tables.append(table)

    for mode in MODES:
        for figure in (*FIGURES, "tick p99"):
            if figure == "tick p99":
                values = {
                    size: percentile([d for run in results[mode] for d in run["steps"][size]["tick_delays"]], 0.99)
                    for size in (first, last)
                }
            else:
                values = {size: median(pooled(mode, size, figure)) for size in (first, last)}
            growth = ratio(values[last], values[first])
            if figure in ("create", "first turn", "call", "status read", "destroy"):
                outcome.headlines.append(
                    at_most(f"{figure} at {last} sessions / at {first}, ownership={mode}", growth, 1.2)
                )
            else:
                outcome.headlines.append(info(f"{figure} at {last} sessions / at {first}, ownership={mode}", growth))
        ticks = [d * 1000 for run in results[mode] for d in run["steps"][last]["tick_delays"]]
        outcome.headlines += [
            at_most(
                f"tick delay p99 with {last} sessions and calls in flight, ownership={mode}",
                percentile(ticks, 0.99),
                10,
                "ms",
            ),
            at_most(f"worst tick delay with {last} sessions, ownership={mode}", max(ticks, default=math.nan), 50, "ms"),
            info(
                f"host RSS per session at {last}, ownership={mode}",
                per_step(mode, last, "rss_per_session") / 1024,
                "KiB",
            ),
            info(f"trio tasks per session at {last}, ownership={mode}", per_step(mode, last, "tasks_per_session")),
            info(
                f"longest full garbage collection under load at {last} sessions, ownership={mode}",
                _longest_full(results[mode], last) * 1000,
                "ms",
            ),
        ]
    left = max(run["left_after_close"] for mode in MODES for run in results[mode])
    outcome.headlines.append(at_most("processes left after the host closed", float(left), 0, invariant=True))

    if arguments.live_servers:
        live = await _spawn_worker(
            arguments, progress, f"{arguments.live_servers} live servers", "--live", str(arguments.live_servers)
        )
        outcome.data["live_servers"] = live
        table = Table(f"scale: {arguments.live_servers} live stdio servers in one host", ["figure", "value"])
        table.add("connected", live["servers"] - live["not_connected"])
        table.add("dial all (20 at a time) s", live["dial_all_s"])
        table.add("host RSS per server KiB", live["rss_per_server"] / 1024)
        table.add("host fds per server", live["fds_per_server"])
        table.add("destroy all (concurrently) s", live["destroy_all_s"])
        table.add("processes left after close", live["left_after_close"])
        table.notes.append(f"soft fd limit {live['soft_limit']}; first errors: {live['first_errors']}")
        outcome.tables.append(table)
        outcome.headlines += [
            Headline(
                f"live stdio servers connected in one host (of {arguments.live_servers})",
                float(live["servers"] - live["not_connected"]),
                "",
                f"= {arguments.live_servers}",
                live["not_connected"] == 0,
            ),
            at_most(
                "processes left after the live servers' host closed", float(live["left_after_close"]), 0, invariant=True
            ),
        ]
    return outcome


def _worker_main(argv: list[str]) -> None:
    parser = worker_parser(NAME, OPTIONS)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--live", type=int, default=0)
    parser.add_argument("--seed", type=int, default=2026)
    arguments = parser.parse_args(argv)
    result = trio.run(_live_servers, arguments.live) if arguments.live else trio.run(_worker, arguments)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main_or_worker(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run, _worker_main)
