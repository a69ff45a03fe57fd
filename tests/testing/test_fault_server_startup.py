"""The fault server starts and answers ``initialize`` fast (it imports the stdlib only).

Tests assert only a coarse bound; the real figure comes from running this file::

    .venv/bin/python tests/testing/test_fault_server_startup.py [runs]

which prints the median spawn-to-initialize-answer latency over 20 runs (default).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import trio

from wave_actors.testing import entry_command, fault_server_entry

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "latency-probe", "version": "0"},
    },
}


def initialize_latency(command: list[str]) -> float:
    """Seconds from spawning ``command`` to reading its answer to ``initialize``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(_INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        elapsed = time.perf_counter() - started
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2025-11-25"
        process.stdin.close()
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return elapsed


def median_initialize_latency(runs: int, command: list[str] | None = None) -> float:
    """Median of ``runs`` calls to :func:`initialize_latency` (default: the fault server entry)."""
    if command is None:
        command = entry_command(fault_server_entry())
    return statistics.median(initialize_latency(command) for _ in range(runs))


async def test_fault_server_answers_initialize_within_half_a_second() -> None:
    # Coarse on purpose: a loaded CI machine must not fail this. The real
    # figure (tens of milliseconds) is measured by running this file.
    median = await trio.to_thread.run_sync(median_initialize_latency, 5)
    assert median < 0.5


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    fast = entry_command(fault_server_entry())
    plain = [sys.executable, fast[-1]]
    for label, command in (("python -I -S (fault_server_entry)", fast), ("python (no flags)", plain)):
        median = median_initialize_latency(runs, command)
        print(f"{label}: median initialize latency over {runs} runs = {median * 1000:.1f} ms")
