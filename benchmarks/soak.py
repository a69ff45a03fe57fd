"""soak: an hour of the race storm, with the host process's resources sampled every minute.

:mod:`benchmarks.race_storm` with ``--ownership mixed`` (project-shared and
session-owned sessions side by side in each workdir) for ``--duration``
seconds (default 3 600): random prepare_turn, call, connect, disconnect,
crash, reconfigure and destroy from several tasks per session, every
destroyed session replaced by a new one (session churn), against servers
that crash on demand, answer ``initialize`` late and spawn grandchildren;
the storm's invariants hold throughout, as in the short run.

Every ``--sample-every`` seconds (default 60) the host process's RSS (after
``gc.collect()``), open file descriptors, trio tasks and threads are sampled,
with the number of live sessions and server processes at that moment; the
samples go into the JSON and into ``benchmarks/results/soak.csv`` (one row a
sample, ready to plot). The summary compares the median of the last
``--window`` samples with the median of the first ``--window`` samples after
``--warmup`` seconds: RSS growth <= 1 MiB, fds and tasks flat.

Not part of the default ``python -m benchmarks`` run: ``python -m benchmarks
--soak`` (``make soak``, or ``make bench BENCH_FLAGS=--soak``) runs it alone.
"""

from __future__ import annotations

import argparse
import csv
import gc
import math
import sys
import threading
import time
from typing import Any

import attrs
import psutil
import trio

from benchmarks import race_storm
from benchmarks.report import Headline, Progress, Table, at_most, info, median
from benchmarks.scenario import Option, Outcome, main

NAME = "soak"
RSS_GROWTH_LIMIT_MIB = 1.0

_STORM = {"duration": (3600.0, 60.0), "ownership": ("mixed", "mixed"), "sample_interval": (0.1, 0.1)}
OPTIONS = (
    *(
        attrs.evolve(option, full=_STORM[option.name][0], quick=_STORM[option.name][1])
        if option.name in _STORM
        else option
        for option in race_storm.OPTIONS
    ),
    Option("sample_every", float, 60.0, 5.0, "seconds between resource samples"),
    Option("warmup", float, 600.0, 15.0, "seconds of storm before growth is counted"),
    Option("window", int, 5, 3, "samples whose median is compared at each end of the counted span"),
)

COLUMNS = ("t_s", "rss_kib", "fds", "tasks", "threads", "sessions", "server_processes")


async def _sample(samples: list[dict[str, Any]], every: float, started: float, progress: Progress) -> None:
    """Sample the process's resources every ``every`` seconds until cancelled."""
    from wave_actors.testing import count_tasks

    me = psutil.Process()
    while True:
        gc.collect()
        children = me.children(recursive=True)
        sample = {
            "t_s": round(time.monotonic() - started, 1),
            "rss_kib": me.memory_info().rss / 1024,
            "fds": me.num_fds(),
            "tasks": count_tasks(),
            "threads": threading.active_count(),
            "sessions": _live_sessions(),
            "server_processes": sum(1 for child in children if "fault_server" in " ".join(_cmdline(child))),
        }
        samples.append(sample)
        progress.update(
            "storm",
            f"sample {len(samples)} at {sample['t_s']:.0f} s: RSS {sample['rss_kib'] / 1024:.1f} MiB, "
            f"{sample['fds']} fds, {sample['tasks']} tasks",
            force=True,
        )
        await trio.sleep(every)


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _live_sessions() -> int:
    """Sessions of every host in the process (the storm's one), through the hosts' public listing."""
    from wave_actors import Host

    return sum(len(host.sessions()) for host in _hosts(Host))


def _hosts(kind: type) -> list[Any]:
    return [thing for thing in gc.get_objects() if isinstance(thing, kind)]


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_sample, samples, arguments.sample_every, started, progress)
        outcome = await race_storm.run(arguments, progress)
        nursery.cancel_scope.cancel()
    during = [sample for sample in samples if sample["t_s"] <= arguments.duration]
    path = arguments.results_dir / f"{NAME}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(during)
    outcome.data["resources"] = during
    outcome.data["csv"] = str(path)

    counted = [sample for sample in during if sample["t_s"] >= arguments.warmup]
    window = max(1, min(arguments.window, len(counted) // 2))
    first, last = counted[:window], counted[-window:]

    def growth(key: str) -> float:
        if len(counted) < 2:
            return math.nan
        return median(sample[key] for sample in last) - median(sample[key] for sample in first)

    table = Table(
        f"soak: {arguments.duration:g} s of race storm ({arguments.ownership} ownership, {arguments.sessions} "
        f"sessions), a sample every {arguments.sample_every:g} s; growth after {arguments.warmup:g} s of warm-up",
        ["resource", "at warm-up end", "at the end", "growth", "min", "max"],
    )
    for key, label, scale in (
        ("rss_kib", "RSS MiB (after gc)", 1024),
        ("fds", "file descriptors", 1),
        ("tasks", "trio tasks", 1),
        ("threads", "threads", 1),
        ("sessions", "live sessions", 1),
        ("server_processes", "server processes", 1),
    ):
        values = [sample[key] / scale for sample in counted] or [math.nan]
        table.add(
            label,
            median(sample[key] for sample in first) / scale if first else math.nan,
            median(sample[key] for sample in last) / scale if last else math.nan,
            growth(key) / scale,
            min(values),
            max(values),
        )
    table.notes += [
        f"each end is the median of {window} samples; {len(counted)} samples after warm-up, {len(during)} in all.",
        f"plot-ready samples: {path}",
        "server processes and live sessions vary with the storm's random operations; the host's own resources "
        "should not grow with time.",
    ]
    outcome.tables.insert(0, table)
    rss_growth = growth("rss_kib") / 1024
    outcome.headlines += [
        at_most("soak: RSS growth after warm-up", rss_growth, RSS_GROWTH_LIMIT_MIB, "MiB"),
        info("soak: file descriptors growth after warm-up", growth("fds")),
        info("soak: trio tasks growth after warm-up", growth("tasks")),
        info("soak: threads growth after warm-up", growth("threads")),
        Headline("soak: samples after warm-up", float(len(counted)), "", ">= 2", len(counted) >= 2),
    ]
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
