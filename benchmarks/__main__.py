"""``python -m benchmarks``: run every scenario, each in its own interpreter, then print a summary.

Each scenario runs as ``python -m benchmarks.<scenario>`` (so a crash, a
monkeypatch or a memory measurement in one cannot affect another), prints its
own tables, and writes ``benchmarks/results/<scenario>.json``; the summary of
headline numbers against their targets is read back from those files and
written to ``benchmarks/results/summary.json``.

Exit status: 1 if a scenario crashed or a hard invariant failed (a leak, a
race violation); a missed performance target is reported, not fatal.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import SCENARIOS
from benchmarks.report import RESULTS_DIRECTORY, Table, environment, format_number


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short smoke runs of every scenario")
    parser.add_argument("--only", default="", help="comma-separated scenarios to run (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated scenarios to leave out")
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="seconds of each race storm (default 20; --quick 5); with --soak, the soak's (3600)",
    )
    parser.add_argument("--seed", type=int, default=2026, help="random seed passed to every scenario")
    parser.add_argument(
        "--soak",
        action="store_true",
        help="run the soak alone: an hour of race storm and session churn, resources sampled every minute "
        "(with --quick: a minute); never part of the default run",
    )
    return parser.parse_args()


def _selected(arguments: argparse.Namespace) -> list[str]:
    if arguments.soak:
        return ["soak"]
    only = [name for name in arguments.only.split(",") if name]
    skip = {name for name in arguments.skip.split(",") if name}
    unknown = (set(only) | skip) - set(SCENARIOS)
    if unknown:
        sys.exit(f"unknown scenario(s): {', '.join(sorted(unknown))}; known: {', '.join(SCENARIOS)}")
    return [name for name in SCENARIOS if (not only or name in only) and name not in skip]


def main() -> None:
    arguments = _arguments()
    root = Path(__file__).resolve().parent.parent
    started = time.monotonic()
    statuses: dict[str, dict[str, Any]] = {}
    for name in _selected(arguments):
        command = [sys.executable, "-m", f"benchmarks.{name}", "--seed", str(arguments.seed)]
        if arguments.quick:
            command.append("--quick")
        if (name.startswith("race_storm") or name == "soak") and arguments.duration is not None:
            command += ["--duration", str(arguments.duration)]
        print(f"=== {name}: {' '.join(command[1:])}", flush=True)
        scenario_started = time.monotonic()
        returncode = subprocess.run(command, cwd=root, check=False).returncode
        statuses[name] = {"returncode": returncode, "seconds": time.monotonic() - scenario_started}
        print(flush=True)
    total = time.monotonic() - started

    summary = Table(
        f"summary: {len(statuses)} scenarios in {total:.0f} s"
        + (" (--quick: smoke sizes, not the numbers to quote)" if arguments.quick else ""),
        ["scenario", "metric", "value", "target", "met"],
    )
    headlines: dict[str, Any] = {}
    failed = False
    for name, status in statuses.items():
        path = RESULTS_DIRECTORY / f"{name}.json"
        document: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        if status["returncode"] != 0 and not any(
            h.get("invariant") and h.get("ok") is False for h in document.get("headlines", [])
        ):
            summary.add(name, "scenario exited with an error", float(status["returncode"]), "0", False)
        if status["returncode"] != 0:
            failed = True
        headlines[name] = document.get("headlines", [])
        for headline in document.get("headlines", []):
            value = headline["value"]
            shown = format_number(math.nan if value is None else float(value))
            if headline.get("unit"):
                shown += f" {headline['unit']}"
            met = "-" if headline["ok"] is None else ("yes" if headline["ok"] else "NO")
            summary.add(name, headline["metric"], shown, headline["target"] or "-", met)
    print(summary.render())
    RESULTS_DIRECTORY.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIRECTORY / "summary.json").write_text(
        json.dumps(
            {
                "quick": arguments.quick,
                "wall_seconds": total,
                "scenarios": statuses,
                "headlines": headlines,
                "environment": environment(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\ntotal wall time {total:.0f} s; results in {RESULTS_DIRECTORY}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
