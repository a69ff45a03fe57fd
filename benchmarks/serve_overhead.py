"""serve_overhead: a call through ``wave-actors serve --stdio`` against the same call made directly, side by side.

What a host in another language pays for the front: both sides are the MCP
SDK's client (``stdio_client`` + ``ClientSession``) calling the stdlib fault
server's ``echo`` tool. The direct side starts the fault server itself; the
serve side starts ``wave-actors serve --stdio --mode full`` on a project whose
``.mcp.json`` names that server, and calls ``mcp__f__echo``: one more process
hop (client, serve, server) and the library's call path inside serve. Each
round makes ``--calls`` sequential calls per side, the sides alternating call
by call, then a concurrent batch per side (``--concurrency`` tasks), the
sides' batches alternating; ratios are taken per round and their median
reported. No target: the figures are for the README's table (R-SERVE-1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import AsyncGenerator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from benchmarks.call_overhead import Call, Samples, measure_round, side_by_side
from benchmarks.report import Headline, Progress, info, median
from benchmarks.scenario import Option, Outcome, main
from wave_actors.testing import entry_command, fault_server_entry

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

NAME = "serve_overhead"

OPTIONS = (
    Option("calls", int, 1000, 200, "calls per side per round (sequential and concurrent)"),
    Option("warmup", int, 200, 50, "calls per side before measuring"),
    Option("rounds", int, 5, 2, "rounds (each: one sequential and one concurrent batch per side)"),
    Option("concurrency", int, 10, 10, "tasks in the concurrent batch"),
)


@asynccontextmanager
async def _client(command: list[str], devnull: TextIO) -> AsyncGenerator[ClientSession, None]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(parameters, errlog=devnull) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


@asynccontextmanager
async def _sides(workdir: Path, devnull: TextIO) -> AsyncGenerator[dict[str, Call], None]:
    """A fresh direct client and a fresh client of serve, each on its own fault server."""
    entry = fault_server_entry()
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"f": entry}}))
    serve = [sys.executable, "-m", "wave_actors", "serve", "--stdio", "--mode", "full", "--workdir", str(workdir)]
    serve += ["--home", str(workdir / "home")]
    arguments = {"text": "hello"}
    async with _client(entry_command(entry), devnull) as direct, _client(serve, devnull) as through:

        def direct_call() -> Awaitable[object]:
            return direct.call_tool("echo", arguments)

        def serve_call() -> Awaitable[object]:
            return through.call_tool("mcp__f__echo", arguments)

        yield {"direct": direct_call, "serve": serve_call}


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    calls, rounds, tasks = arguments.calls, arguments.rounds, arguments.concurrency
    samples: Samples = {side: {"sequential": [], "concurrent": []} for side in ("serve", "direct")}
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory, open(os.devnull, "w") as devnull:
        for round_index in range(rounds):
            progress.update("measuring", f"round {round_index + 1}/{rounds}: connecting")
            workdir = Path(directory) / f"round-{round_index}"
            workdir.mkdir()
            async with _sides(workdir, devnull) as sides:
                label = f"round {round_index + 1}/{rounds}"
                await measure_round(sides, samples, calls, arguments.warmup, tasks, round_index, label, progress)
    table, ratios = side_by_side(
        f"serve_overhead: echo over stdio, {calls} calls per side per round, {rounds} rounds "
        "(medians over rounds; ratio = through serve / direct, per round, then median)",
        samples,
        measured=("serve", "SDK client -> serve -> server"),
        base=("direct", "SDK client -> server"),
        tasks=tasks,
    )
    outcome.tables.append(table)
    headlines: list[Headline] = [
        info("sequential latency through serve", median(r["median_us"] for r in samples["serve"]["sequential"]), "µs"),
        info("sequential latency ratio (serve/direct)", ratios["sequential"][0]),
        info(
            f"calls/s through serve, {tasks} in flight",
            median(r["calls_per_s"] for r in samples["serve"]["concurrent"]),
        ),
        info(f"calls/s ratio (serve/direct), {tasks} in flight", ratios["concurrent"][1]),
    ]
    outcome.headlines += headlines
    outcome.data["samples"] = samples
    outcome.data["ratios"] = {mode: {"latency": lat, "calls_per_s": cps} for mode, (lat, cps) in ratios.items()}
    return outcome


if __name__ == "__main__":
    main(NAME, __doc__ or "", OPTIONS, run)
