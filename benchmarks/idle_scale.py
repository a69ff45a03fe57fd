"""idle_scale: 10 000 idle sessions of 10 configured servers in one ``Host`` (R-HOST-3, R-DIAL-1).

Creating a session must spawn nothing and cost little: the creation rate,
the resident memory per session (RSS delta after ``gc.collect()`` divided by
the sessions), the processes spawned (must be 0), the trio tasks per session,
and the rate of ``host.destroy_session``.

Memory is only honest in a fresh interpreter (freed memory is kept by the
allocator and would be reused by a second run), so every run is a separate
worker process (``--worker``) and the medians are over runs. A last worker
runs under ``tracemalloc`` with fewer sessions to show where the bytes of an
idle session go.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks.report import Headline, Progress, Table, at_most, median, short_site
from benchmarks.scenario import Option, Outcome, main

NAME = "idle_scale"
TARGET_KIB = 20.0

OPTIONS = (
    Option("sessions", int, 10_000, 1_000, "sessions per run"),
    Option("servers", int, 10, 10, "configured servers per session"),
    Option("runs", int, 2, 1, "runs, each in a fresh interpreter"),
    Option("trace_sessions", int, 1_000, 200, "sessions in the tracemalloc run (0: skip it)"),
)


async def _worker(sessions: int, servers: int, trace: bool) -> dict[str, Any]:
    """One run: create ``sessions`` idle sessions, measure, destroy them all."""
    import psutil

    from wave_actors import Host
    from wave_actors.testing import count_tasks, fault_server_entry, process_census

    me = psutil.Process()
    entries = {f"s{index}": fault_server_entry(instructions=f"idle-{index}") for index in range(servers)}
    result: dict[str, Any] = {"sessions": sessions, "servers": servers}
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home") as host:
            # One session first, so that imports and first-use caches are not counted per session.
            await host.destroy_session((await host.create_session(workdir, entries)).id)
            if trace:
                import tracemalloc

                tracemalloc.start(1)
            gc.collect()
            rss_before = me.memory_info().rss
            tasks_before = count_tasks()
            batch = max(1, sessions // 10)
            batch_rates: list[float] = []
            started = time.perf_counter()
            for first in range(0, sessions, batch):
                batch_started = time.perf_counter()
                size = min(batch, sessions - first)
                for _ in range(size):
                    await host.create_session(workdir, entries)
                batch_rates.append(size / (time.perf_counter() - batch_started))
            created = time.perf_counter() - started
            gc.collect()
            rss_after = me.memory_info().rss
            result["spawned"] = len(process_census())
            result["tasks_per_session"] = (count_tasks() - tasks_before) / sessions
            if trace:
                import tracemalloc

                snapshot = tracemalloc.take_snapshot()
                tracemalloc.stop()
                statistics = snapshot.statistics("lineno")
                result["traced_bytes_per_session"] = sum(stat.size for stat in statistics) / sessions
                result["top_sites"] = [
                    {"site": str(stat.traceback), "bytes_per_session": stat.size / sessions, "count": stat.count}
                    for stat in statistics[:15]
                ]
            result["create_per_s"] = sessions / created
            result["create_per_s_batches"] = batch_rates
            result["rss_before"] = rss_before
            result["rss_after"] = rss_after
            result["kib_per_session"] = (rss_after - rss_before) / sessions / 1024
            started = time.perf_counter()
            for session in host.sessions():
                await host.destroy_session(session.id)
            result["destroy_per_s"] = sessions / (time.perf_counter() - started)
            result["left_sessions"] = len(host.sessions())
            gc.collect()
            result["rss_after_destroy"] = me.memory_info().rss
    return result


async def _spawn_worker(arguments: argparse.Namespace, sessions: int, trace: bool) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.idle_scale",
        "--worker",
        "--sessions",
        str(sessions),
        "--servers",
        str(arguments.servers),
    ]
    if trace:
        command.append("--trace")
    completed = await trio.run_process(command, capture_stdout=True, check=True)
    return json.loads(completed.stdout)


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    runs: list[dict[str, Any]] = []
    for index in range(arguments.runs):
        progress.update(
            "creating", f"run {index + 1}/{arguments.runs}: {arguments.sessions} sessions x {arguments.servers}"
        )
        runs.append(await _spawn_worker(arguments, arguments.sessions, trace=False))
    outcome = Outcome(data={"runs": runs})
    table = Table(
        f"idle_scale: {arguments.sessions:,} idle sessions x {arguments.servers} servers in one Host "
        f"(median of {len(runs)} fresh-interpreter runs)",
        ["metric", "median", "min", "max", "target"],
    )
    rows = [
        ("create rate sessions/s", "create_per_s", ""),
        ("RSS per session KiB", "kib_per_session", f"<= {TARGET_KIB:g}"),
        ("processes spawned", "spawned", "= 0"),
        ("trio tasks per idle session", "tasks_per_session", ""),
        ("destroy rate sessions/s", "destroy_per_s", ""),
    ]
    for label, key, target in rows:
        values = [float(run[key]) for run in runs]
        table.add(label, median(values), min(values), max(values), target)
    table.notes.append("RSS: psutil rss after gc.collect(), delta over the creation of all sessions, divided by them.")
    outcome.tables.append(table)
    spawned = max(run["spawned"] for run in runs)
    outcome.headlines += [
        Headline("idle sessions created / s", median(run["create_per_s"] for run in runs), "1/s"),
        at_most("RSS per idle session (10 servers)", median(run["kib_per_session"] for run in runs), TARGET_KIB, "KiB"),
        at_most("processes spawned by idle sessions", float(spawned), 0, invariant=True),
        Headline("idle sessions destroyed / s", median(run["destroy_per_s"] for run in runs), "1/s"),
    ]
    if arguments.trace_sessions:
        progress.update("tracemalloc", f"{arguments.trace_sessions} sessions")
        traced = await _spawn_worker(arguments, arguments.trace_sessions, trace=True)
        outcome.data["tracemalloc"] = traced
        sites = Table(
            f"idle_scale: where an idle session's memory goes (tracemalloc, {arguments.trace_sessions:,} sessions; "
            f"{traced['traced_bytes_per_session'] / 1024:.1f} KiB traced per session)",
            ["allocation site", "bytes/session", "blocks"],
        )
        for site in traced["top_sites"][:12]:
            sites.add(short_site(site["site"]), site["bytes_per_session"], site["count"])
        outcome.tables.append(sites)
    return outcome


def _worker_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.idle_scale --worker")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--servers", type=int, required=True)
    parser.add_argument("--trace", action="store_true")
    arguments = parser.parse_args(argv)
    result = trio.run(_worker, arguments.sessions, arguments.servers, arguments.trace)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        _worker_main(sys.argv[1:])
    else:
        main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
