"""A process sampler that runs beside a storm, in its own interpreter.

Run as ``python -m benchmarks.sampler --parent PID --prefix storm- --interval 0.02``.
Every interval it lists the parent's live (non-zombie) children whose argv
runs ``--program`` and counts them by their argv argument starting with
``--prefix`` (an actor marker); it writes one JSON line per sample to stdout::

    {"t": 12.5, "servers": 88, "most": 1, "over": {}}

``over`` holds the markers seen on more than one live process. Standard
library only and ``/proc`` only (Linux): a separate process keeps the samples
regular while the storm saturates its own interpreter, and holds no GIL the
storm needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter


def live_children(parent: int) -> list[int]:
    """Pids of ``parent``'s children that are not zombies, from ``/proc/*/stat``."""
    children: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split(b" ", 2)
        if len(fields) >= 2 and fields[0] != b"Z" and int(fields[1]) == parent:
            children.append(int(entry))
    return children


def cmdline(pid: int) -> list[str]:
    """``pid``'s argv, empty if it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def count_markers(parent: int, program: str, prefix: str) -> Counter[str]:
    """Live children of ``parent`` running ``program``, by their argument starting with ``prefix``."""
    counts: Counter[str] = Counter()
    for pid in live_children(parent):
        argv = cmdline(pid)
        if program not in argv:
            continue
        for argument in argv:
            if argument.startswith(prefix):
                counts[argument] += 1
                break
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sampler")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--program", required=True, help="an argv element identifying the servers")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--interval", type=float, default=0.02)
    arguments = parser.parse_args()
    started = time.monotonic()
    out = sys.stdout
    while True:
        try:
            os.kill(arguments.parent, 0)
        except OSError:
            return
        counts = count_markers(arguments.parent, arguments.program, arguments.prefix)
        sample = {
            "t": round(time.monotonic() - started, 4),
            "servers": sum(counts.values()),
            "most": max(counts.values(), default=0),
            "over": {marker: count for marker, count in counts.items() if count > 1},
        }
        try:
            out.write(json.dumps(sample) + "\n")
            out.flush()
        except BrokenPipeError:
            return
        time.sleep(arguments.interval)


if __name__ == "__main__":
    main()
