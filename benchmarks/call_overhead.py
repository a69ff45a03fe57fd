"""call_overhead: ``Session.call_tool`` against a bare SDK ``ClientSession.call_tool``, side by side.

Both sides talk to the same kind of server -- the stdlib fault server,
``echo`` tool -- over stdio, at the same time, in the same process. The bare
side is what a host writes without this library: ``stdio_client`` +
``ClientSession``. Each round makes ``--calls`` sequential calls per side,
the sides alternating call by call, then a concurrent batch per side
(``--concurrency`` tasks sharing ``--calls`` calls), alternating which side
goes first; ratios are taken per round and their median reported.

Targets: sequential latency at most the bare side's, and with 10 calls in
flight at least its calls/s. If a ratio misses its target (or with
``--profile always``) the sequential batch of each side is run again under
cProfile, and the functions that cost the library side more than the bare
side are listed.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs
import trio

from benchmarks.report import Headline, Progress, Table, at_least, at_most, median, ratio
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Session, open_session
from wave_actors.testing import entry_command, fault_server_entry

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

NAME = "call_overhead"
SEQUENTIAL_TARGET = 1.0
"""Sequential latency, ours / bare: at most this."""
THROUGHPUT_TARGET = 1.0
"""Calls/s with ``--concurrency`` calls in flight, ours / bare: at least this (the stretch: 1.5)."""

OPTIONS = (
    Option("calls", int, 1000, 200, "calls per side per round (sequential and concurrent)"),
    Option("warmup", int, 200, 50, "calls per side before measuring"),
    Option("rounds", int, 11, 3, "rounds (each: one sequential and one concurrent batch per side)"),
    Option("concurrency", int, 10, 10, "tasks in the concurrent batch"),
    Option("profile", str, "auto", "auto", "cProfile both sides: auto (if a ratio misses the target), always, never"),
    Option("profile_calls", int, 2000, 300, "calls per side under cProfile"),
)

Call = Callable[[], Awaitable[object]]


async def alternating(sides: dict[str, Call], count: int) -> dict[str, tuple[list[float], float]]:
    """``count`` sequential calls per side, alternating call by call (rotating who goes first).

    Side by side at the finest grain: a burst of load from elsewhere hits every
    side alike. Returns, per side, its latencies (µs) and the seconds spent in its calls.
    """
    names = list(sides)
    latencies: dict[str, list[float]] = {name: [] for name in names}
    for index in range(count):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            before = time.perf_counter_ns()
            await sides[name]()
            latencies[name].append((time.perf_counter_ns() - before) / 1e3)
    return {name: (values, sum(values) / 1e6) for name, values in latencies.items()}


async def concurrent_batch(call: Call, count: int, tasks: int) -> tuple[list[float], float]:
    latencies: list[float] = []

    async def worker(share: int) -> None:
        for _ in range(share):
            before = time.perf_counter_ns()
            await call()
            latencies.append((time.perf_counter_ns() - before) / 1e3)

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for index in range(tasks):
            nursery.start_soon(worker, count // tasks + (1 if index < count % tasks else 0))
    return latencies, time.perf_counter() - started


async def measure_round(
    sides: dict[str, Call],
    samples: Samples,
    calls: int,
    warmup: int,
    tasks: int,
    round_index: int,
    label: str,
    progress: Progress,
) -> None:
    """One round of two sides into ``samples``: a warm-up, ``calls`` sequential calls alternating call by
    call, then a concurrent batch per side, the first side's first in even rounds.

    :param sides: the two sides, by name (``samples``' keys).
    :param samples: where each side's round is appended, per mode.
    :param calls: calls per side, sequential and concurrent.
    :param warmup: calls per side before measuring, both ways.
    :param tasks: tasks in the concurrent batch.
    :param round_index: the round's number from 0, for the order of the batches.
    :param label: the round as the progress line says it.
    :param progress: the progress line.
    """
    await alternating(sides, warmup)
    for call in sides.values():
        await concurrent_batch(call, warmup, tasks)
    progress.update("measuring", f"{label} sequential, alternating call by call")
    for side, (latencies, seconds) in (await alternating(sides, calls)).items():
        samples[side]["sequential"].append(
            {"median_us": median(latencies), "calls_per_s": calls / seconds, "wall_s": seconds}
        )
    names = list(sides)
    for side in names if round_index % 2 == 0 else names[::-1]:
        progress.update("measuring", f"{label} concurrent {side}")
        latencies, wall = await concurrent_batch(sides[side], calls, tasks)
        samples[side]["concurrent"].append(
            {"median_us": median(latencies), "calls_per_s": calls / wall, "wall_s": wall}
        )


Samples = dict[str, dict[str, list[dict[str, float]]]]
"""Per side, per mode (``sequential``, ``concurrent``), one ``{"median_us", "calls_per_s", ...}`` per round."""


def side_by_side(
    title: str, samples: Samples, *, measured: tuple[str, str], base: tuple[str, str], tasks: int
) -> tuple[Table, dict[str, tuple[float, float]]]:
    """The table of two sides' rounds, and per mode the median of the per-round ratios (latency, calls/s).

    :param title: the table's title.
    :param samples: the rounds of both sides.
    :param measured: the side whose ratios are taken, and its name in the table.
    :param base: the side it is divided by, and its name in the table.
    :param tasks: the concurrent batch's tasks, for its label.
    """
    table = Table(title, ["mode", "side", "median latency µs", "calls/s", "latency ratio", "calls/s ratio"])
    ratios: dict[str, tuple[float, float]] = {}
    for mode in ("sequential", "concurrent"):
        pairs = list(zip(samples[measured[0]][mode], samples[base[0]][mode], strict=True))
        latency_ratio = median(ratio(m["median_us"], b["median_us"]) for m, b in pairs)
        throughput_ratio = median(ratio(m["calls_per_s"], b["calls_per_s"]) for m, b in pairs)
        ratios[mode] = (latency_ratio, throughput_ratio)
        label = mode if mode == "sequential" else f"concurrent x{tasks}"
        for side, shown in (base, measured):
            rows = samples[side][mode]
            table.add(
                label,
                shown,
                median(row["median_us"] for row in rows),
                median(row["calls_per_s"] for row in rows),
                latency_ratio if side == measured[0] else 1.0,
                throughput_ratio if side == measured[0] else 1.0,
            )
    table.notes += [
        "sequential: the two sides alternate call by call; calls/s = calls / time spent in that side's calls.",
        f"concurrent: {tasks} tasks share a batch; the sides' batches alternate. calls/s = calls / batch wall time.",
    ]
    return table, ratios


def _profile_rows(profile: cProfile.Profile, calls: int) -> dict[tuple[str, int, str], tuple[float, float]]:
    """``(file, line, function) -> (tottime µs per call, cumtime µs per call)``."""
    stats = pstats.Stats(profile)
    rows: dict[tuple[str, int, str], tuple[float, float]] = {}
    for (filename, line, function), (_, _, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows[(filename, line, function)] = (tottime / calls * 1e6, cumtime / calls * 1e6)
    return rows


def _short(location: tuple[str, int, str]) -> str:
    filename, line, function = location
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{function} ({filename}:{line})" if line else function


async def _profile(ours: Call, bare: Call, calls: int, progress: Progress) -> tuple[list[Table], dict[str, Any]]:
    """Profile ``calls`` sequential calls on each side; tables of where the library side spends more."""
    results: dict[str, tuple[cProfile.Profile, float]] = {}
    for side, call in (("bare", bare), ("ours", ours)):
        progress.update("profiling", side)
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        for _ in range(calls):
            await call()
        profile.disable()
        results[side] = (profile, time.perf_counter() - started)
    ours_rows = _profile_rows(results["ours"][0], calls)
    bare_rows = _profile_rows(results["bare"][0], calls)
    ours_total = sum(tottime for tottime, _ in ours_rows.values())
    bare_total = sum(tottime for tottime, _ in bare_rows.values())

    summary = Table(
        f"call_overhead: cProfile, {calls} sequential calls per side (profiled CPU in this process)",
        ["side", "wall µs/call", "profiled CPU µs/call"],
    )
    summary.add("bare SDK", results["bare"][1] / calls * 1e6, bare_total)
    summary.add("wave-actors", results["ours"][1] / calls * 1e6, ours_total)

    extra = Table(
        "call_overhead: functions costing the library side more (tottime µs/call, ours - bare)",
        ["function", "ours tottime", "bare tottime", "extra", "ours cumtime"],
    )
    deltas = sorted(
        ((ours_rows[key][0] - bare_rows.get(key, (0.0, 0.0))[0], key) for key in ours_rows),
        reverse=True,
    )
    for delta, key in deltas[:15]:
        extra.add(_short(key), ours_rows[key][0], bare_rows.get(key, (0.0, 0.0))[0], delta, ours_rows[key][1])

    library = Table(
        "call_overhead: wave_actors frames on the call path (cumtime µs/call, includes what they call)",
        ["function", "cumtime", "tottime"],
    )
    own = sorted(((values[1], key) for key, values in ours_rows.items() if "wave_actors/" in key[0]), reverse=True)
    for cumtime, key in own[:12]:
        library.add(_short(key), cumtime, ours_rows[key][0])
    data = {
        "calls": calls,
        "profiled_cpu_us_per_call": {"ours": ours_total, "bare": bare_total},
        "top_extra": [{"function": _short(key), "extra_us_per_call": delta} for delta, key in deltas[:30]],
    }
    return [summary, extra, library], data


async def _layers(
    sides: dict[str, Call], calls: int, rounds: int, tasks: int, progress: Progress
) -> tuple[Table, dict[str, dict[str, list[float]]]]:
    """Per-call time of each layer of the call path, sequential and concurrent, interleaved round by round."""
    samples: dict[str, dict[str, list[float]]] = {layer: {"sequential": [], "concurrent": []} for layer in sides}
    names = list(sides)
    for round_index in range(rounds):
        progress.update("layers", f"round {round_index + 1}/{rounds} sequential, alternating")
        for layer, (latencies, _) in (await alternating(sides, calls)).items():
            samples[layer]["sequential"].append(median(latencies))
        order = names if round_index % 2 == 0 else names[::-1]
        for layer in order:
            progress.update("layers", f"round {round_index + 1}/{rounds} concurrent {layer}")
            _, wall = await concurrent_batch(sides[layer], calls, tasks)
            samples[layer]["concurrent"].append(wall / calls * 1e6)
    base = {mode: median(samples[names[0]][mode]) for mode in ("sequential", "concurrent")}
    table = Table(
        f"call_overhead: the call path layer by layer ({calls} calls, {rounds} rounds, no profiler)",
        ["layer", "seq median µs", "seq ratio", f"x{tasks} wall µs/call", f"x{tasks} ratio"],
    )
    for layer in names:
        sequential = median(samples[layer]["sequential"])
        concurrent = median(samples[layer]["concurrent"])
        table.add(
            layer, sequential, ratio(sequential, base["sequential"]), concurrent, ratio(concurrent, base["concurrent"])
        )
    table.notes.append("each layer adds one wrapper to the previous row; ratios against the first row.")
    return table, samples


@asynccontextmanager
async def _pair(workdir: Path, entry: dict[str, object], devnull: TextIO) -> AsyncGenerator[Pair, None]:
    """A fresh wave-actors session and a fresh bare SDK client, each with its own fault server."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = entry_command(entry)
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with open_session(workdir=workdir, home=workdir / "home", mcp_servers={"f": entry}) as session:
        await session.prepare_turn()
        async with stdio_client(parameters, errlog=devnull) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield Pair(session, client)


@attrs.frozen
class Pair:
    """The two sides of one round."""

    session: Session
    client: ClientSession

    def sides(self) -> dict[str, Call]:
        session, client, arguments = self.session, self.client, {"text": "hello"}

        def ours() -> Awaitable[object]:
            return session.call_tool("mcp__f__echo", arguments)

        def bare() -> Awaitable[object]:
            return client.call_tool("echo", arguments)

        return {"ours": ours, "bare": bare}

    def layers(self) -> dict[str, Call]:
        """The call path one wrapper at a time; rows 1-2 share the bare server, rows 3-5 the session's server."""
        session, client, arguments = self.session, self.client, {"text": "hello"}
        sides = self.sides()
        layers: dict[str, Call] = {"bare SDK (stdio_client + ClientSession)": sides["bare"]}

        def sdk_with_timeout() -> Awaitable[object]:
            return client.call_tool("echo", arguments, read_timeout_seconds=30.0)

        layers["bare SDK + read_timeout_seconds"] = sdk_with_timeout
        # The session's own live connection, reached through private attributes (a diagnosis only):
        # comparing layers on one server process removes the process-to-process spread (+-5 %).
        roster = getattr(session, "_roster", None)
        actor = roster.actors.get("f") if roster is not None else None  # pyright: ignore
        connection = actor._live_connection() if actor is not None else None  # pyright: ignore
        if connection is not None:

            def our_transport() -> Awaitable[object]:
                return connection.session.call_tool("echo", arguments)  # pyright: ignore

            def our_connection() -> Awaitable[object]:
                return connection.call_tool("echo", arguments, timeout=30.0)  # pyright: ignore

            layers["our stdio transport + SDK ClientSession"] = our_transport
            layers["+ Connection.call_tool (timeout, error mapping)"] = our_connection
        layers["+ Session.call_tool (resolve name, actor)"] = sides["ours"]
        return layers


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    entry = fault_server_entry()
    calls, rounds, tasks = arguments.calls, arguments.rounds, arguments.concurrency
    samples: Samples = {side: {"sequential": [], "concurrent": []} for side in ("ours", "bare")}
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory, open(os.devnull, "w") as devnull:
        workdir = Path(directory)
        for round_index in range(rounds):
            # A fresh pair of servers every round: server processes differ by a few percent
            # among themselves (placement, wake-up latency), and the median over rounds evens that out.
            progress.update("measuring", f"round {round_index + 1}/{rounds}: connecting")
            async with _pair(workdir, entry, devnull) as pair:
                label = f"round {round_index + 1}/{rounds}"
                await measure_round(pair.sides(), samples, calls, arguments.warmup, tasks, round_index, label, progress)

        table, ratios = side_by_side(
            f"call_overhead: echo over stdio, {calls} calls per side per round, {rounds} rounds, a fresh pair of "
            "servers each round (medians over rounds; ratio = ours / bare, per round, then median)",
            samples,
            measured=("ours", "wave-actors"),
            base=("bare", "bare SDK"),
            tasks=tasks,
        )
        table.notes.append(
            f"latency ratio: per-call median latency, target <= {SEQUENTIAL_TARGET:g}; calls/s ratio: ours calls/s / "
            f"bare calls/s, target >= {THROUGHPUT_TARGET:g} with {tasks} in flight."
        )
        outcome.tables.append(table)
        outcome.headlines += [
            at_most("sequential latency ratio (ours/bare)", ratios["sequential"][0], SEQUENTIAL_TARGET),
            at_least(f"calls/s with {tasks} in flight, ratio (ours/bare)", ratios["concurrent"][1], THROUGHPUT_TARGET),
            Headline("sequential calls/s (ours)", median(r["calls_per_s"] for r in samples["ours"]["sequential"])),
        ]
        outcome.data["samples"] = samples
        outcome.data["ratios"] = {mode: {"latency": lat, "calls_per_s": cps} for mode, (lat, cps) in ratios.items()}
        missed = ratios["sequential"][0] > SEQUENTIAL_TARGET or not ratios["concurrent"][1] >= THROUGHPUT_TARGET
        if arguments.profile == "always" or (arguments.profile == "auto" and missed):
            # Diagnosis: the same call through each layer, then cProfile of both sides.
            async with _pair(workdir, entry, devnull) as pair:
                layers = pair.layers()
                await alternating(layers, arguments.warmup)
                layer_table, layer_samples = await _layers(layers, calls, max(3, rounds // 2), tasks, progress)
                outcome.tables.append(layer_table)
                sides = pair.sides()
                tables, profile_data = await _profile(sides["ours"], sides["bare"], arguments.profile_calls, progress)
                outcome.tables += tables
                outcome.data["profile"] = profile_data | {"layers_median_us": layer_samples}
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
