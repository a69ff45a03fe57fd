"""dial: ``prepare_turn`` wall time with 1, 5 and 20 servers, against the slowest single dial (R-DIAL-2).

``prepare_turn`` dials every due server concurrently, so its wall time should
track the slowest dial, not the sum. Measured twice: servers that answer
``initialize`` at once (spawning 20 Python processes is then CPU-bound on a
small machine, and no scheduler can hide that) and servers that wait 0.5 s
first (a network-like wait, which concurrency can hide).

Per repeat, the session sizes run back to back (order alternating), each
also dialed the bare SDK way (one task per server: ``stdio_client`` +
``ClientSession.initialize`` + ``list_tools``, all in one nursery) so that
the cost of spawning N processes at once on this machine is visible next to
the library's number. Ratios are taken within a repeat, then the median.
The target is on that comparison, at the largest N: prepare_turn / bare SDK
<= 1.05 (N servers / 1 server is shown for information: on a small machine
it measures the machine's spawn rate more than the library).

A third side, for information, where fastmcp is installed (the ``bench``
extra): fastmcp's ``Client`` over its ``StdioTransport``, N of them at once
(``async with`` + ``list_tools``), on an asyncio loop in a thread of its own,
since that client runs on asyncio only. It is the same SDK underneath, in
its default connect mode (a ``server/discover`` probe before the
``initialize`` of a server that predates it). Without fastmcp its columns
are left out, and the reason is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import trio

from benchmarks.report import Progress, Table, at_most, info, median, ratio
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Host, ServerState
from wave_actors.testing import entry_command, fault_server_entry

NAME = "dial"
TARGET = 1.05

OPTIONS = (
    Option("sizes", str, "1,5,20", "1,5,20", "servers per session, comma-separated (the first is the baseline)"),
    Option("delays", str, "0,0.5", "0,0.5", "init_delay values, comma-separated"),
    Option("repeats", int, 5, 1, "repeats per size and delay"),
)


def _entries(count: int, delay: float) -> dict[str, dict[str, object]]:
    run = uuid.uuid4().hex[:8]
    return {
        f"s{index}": fault_server_entry(init_delay=delay or None, instructions=f"dial-{run}-{index}")
        for index in range(count)
    }


async def _ours(host: Host, workdir: Path, count: int, delay: float) -> float:
    session = await host.create_session(workdir, _entries(count, delay))
    try:
        started = time.perf_counter()
        await session.prepare_turn()
        elapsed = time.perf_counter() - started
        states = {status.state for status in session.servers()}
        if states != {ServerState.CONNECTED}:
            raise RuntimeError(f"prepare_turn left states {states}: {[s.error for s in session.servers()]}")
        return elapsed
    finally:
        await host.destroy_session(session.id)


async def _bare(count: int, delay: float, devnull: object) -> float:
    """N concurrent dials the SDK way; the time until the last one has listed its tools."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    release = trio.Event()
    all_up = trio.Event()
    last = _LastUp(count)

    async def dial(entry: dict[str, object]) -> None:
        command = entry_command(entry)
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with (
            stdio_client(parameters, errlog=devnull) as (read, write),  # type: ignore[arg-type]
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.list_tools()
            if last.one_up():
                all_up.set()
            await release.wait()

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for entry in _entries(count, delay).values():
            nursery.start_soon(dial, entry)
        await all_up.wait()
        release.set()
    return last.at - started


class _LastUp:
    """Counts ``count`` dials up and keeps the moment the last one listed its tools."""

    def __init__(self, count: int) -> None:
        self.remaining = count
        self.at = 0.0

    def one_up(self) -> bool:
        """One more dial is up; whether it was the last."""
        self.remaining -= 1
        if self.remaining:
            return False
        self.at = time.perf_counter()
        return True


def _fastmcp_missing() -> str | None:
    """Why fastmcp's client cannot be measured here, or ``None`` if it can."""
    if importlib.util.find_spec("fastmcp") is None:
        return "fastmcp is not installed (pip install -e '.[bench]'); its columns are left out"
    return None


async def _fastmcp_dials(count: int, delay: float, devnull: object) -> float:
    """N concurrent dials through fastmcp's client, on asyncio; the time until the last one has listed its tools."""
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport

    release = asyncio.Event()
    all_up = asyncio.Event()
    last = _LastUp(count)

    async def dial(entry: dict[str, object]) -> None:
        command = entry_command(entry)
        # The same environment as the other sides; keep_alive=False: the server ends with the block.
        transport = StdioTransport(command[0], command[1:], env=dict(os.environ), keep_alive=False, log_file=devnull)  # type: ignore[arg-type]
        async with Client(transport) as client:
            await client.list_tools()
            if last.one_up():
                all_up.set()
            await release.wait()

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for entry in _entries(count, delay).values():
            group.create_task(dial(entry))
        await all_up.wait()
        release.set()
    return last.at - started


async def _fastmcp(count: int, delay: float, devnull: object) -> float:
    return await trio.to_thread.run_sync(asyncio.run, _fastmcp_dials(count, delay, devnull))


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    sizes = [int(size) for size in arguments.sizes.split(",")]
    delays = [float(delay) for delay in arguments.delays.split(",")]
    repeats: int = arguments.repeats
    samples: dict[str, dict[str, dict[int, list[float]]]] = {}
    outcome = Outcome()
    fastmcp_missing = _fastmcp_missing()
    if fastmcp_missing is not None:
        print(f"dial: {fastmcp_missing}", file=sys.stderr)
    peers = ["bare"] if fastmcp_missing else ["bare", "fastmcp"]
    columns = ["init_delay s", "servers", "prepare_turn s", "bare SDK s", "vs 1 server", "vs bare SDK"]
    if fastmcp_missing is None:
        columns += ["fastmcp s", "vs fastmcp"]
    table = Table(
        f"dial: prepare_turn wall time (median of {repeats} repeats; ratios per repeat, then median)",
        columns,
    )
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory, open(os.devnull, "w") as devnull:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home") as host:
            # Warm caches (interpreter, page cache) so the first measured dial is not the slowest.
            await _ours(host, workdir, 2, 0.0)
            await _bare(2, 0.0, devnull)
            if fastmcp_missing is None:
                await _fastmcp(2, 0.0, devnull)
            for delay in delays:
                key = f"{delay:g}"
                samples[key] = {side: {n: [] for n in sizes} for side in ["ours", *peers]}
                for repeat in range(repeats):
                    order = sizes if repeat % 2 == 0 else sizes[::-1]
                    for count in order:
                        progress.update("dialing", f"init_delay={key} repeat {repeat + 1}/{repeats} n={count}")
                        samples[key]["ours"][count].append(await _ours(host, workdir, count, delay))
                        samples[key]["bare"][count].append(await _bare(count, delay, devnull))
                        if fastmcp_missing is None:
                            samples[key]["fastmcp"][count].append(await _fastmcp(count, delay, devnull))
                ours, bare = samples[key]["ours"], samples[key]["bare"]
                baseline = sizes[0]
                for count in sizes:
                    versus_single = median(ratio(o, s) for o, s in zip(ours[count], ours[baseline], strict=True))
                    versus_bare = median(ratio(o, b) for o, b in zip(ours[count], bare[count], strict=True))
                    cells: list[object] = [median(ours[count]), median(bare[count]), versus_single, versus_bare]
                    if fastmcp_missing is None:
                        fast = samples[key]["fastmcp"][count]
                        versus_fastmcp = median(ratio(o, f) for o, f in zip(ours[count], fast, strict=True))
                        cells += [median(fast), versus_fastmcp]
                        if count == sizes[-1]:
                            outcome.headlines.append(
                                info(
                                    f"prepare_turn {count} servers / fastmcp {count}, init_delay={key}", versus_fastmcp
                                )
                            )
                    table.add(delay, count, *cells)
                    if count == sizes[-1]:
                        outcome.headlines.append(
                            at_most(
                                f"prepare_turn {count} servers / bare SDK {count}, init_delay={key}",
                                versus_bare,
                                TARGET,
                            )
                        )
                        if count != baseline:
                            outcome.headlines.append(
                                info(f"prepare_turn {count} servers / 1 server, init_delay={key}", versus_single)
                            )
    table.notes += [
        "vs 1 server: prepare_turn(N) / prepare_turn(1) in the same repeat; the single dial is the slowest",
        "single dial when all servers are alike.",
        "bare SDK: N concurrent stdio_client + initialize + list_tools tasks, what a host gets without the library.",
        "fastmcp: N concurrent fastmcp Clients (connect + list_tools) on asyncio, in a thread of its own"
        if fastmcp_missing is None
        else f"fastmcp: not measured: {fastmcp_missing}.",
        f"Target: vs bare SDK <= {TARGET:g} at the largest N: the library adds at most 5 % to the bare dials.",
        f"{os.cpu_count()} CPUs: with init_delay=0 each dial is CPU work (spawning python), so N dials cost ~N/cpus.",
    ]
    outcome.tables.append(table)
    outcome.data["samples_s"] = samples
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
