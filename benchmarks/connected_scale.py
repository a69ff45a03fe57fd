"""connected_scale: what one connected stdio server costs the host, against a bare SDK ``ClientSession``.

One session connects ``--servers`` stdio servers (the stdlib fault server,
which does not import the SDK) and calls ``echo`` once on each; the figures
are the host process's resident memory per connected server (RSS delta after
``gc.collect()``, divided by the servers), the trio tasks per connected
server, the objects the garbage collector tracks per server (each one walked
by every full collection), and the bytes ``tracemalloc`` sees per server. The bare side does the
same with what a host writes without this library: ``stdio_client`` +
``ClientSession`` + ``initialize`` + ``list_tools`` + one call, per server,
and drops the tool list. A host shows its model the tools of every server
each turn, and this library keeps them for that (schemas included), so a
third side, ``bare-kept``, is the bare SDK keeping each server's
``list_tools().tools``; both bare figures are shown.

Memory is only honest in a fresh interpreter (freed memory is kept by the
allocator and reused by a later run), so every run is a worker process
(``--worker``), the sides alternate run by run, and the figures are
medians over runs. A last pair of workers runs under ``tracemalloc`` to show
where the bytes of a connection go: by allocation site, and by the innermost
frame of this library (or of ``supervisors``) that led to the allocation.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio

from benchmarks.report import Headline, Progress, Table, at_most, median, ratio, short_site
from benchmarks.scenario import Option, Outcome, main

NAME = "connected_scale"
TARGET_KIB = 48.0
TARGET_TASKS = 4.0
SIDES = ("ours", "bare", "bare-kept")
# The traced runs compare this library with the bare SDK as it always was measured.
TRACED_SIDES = ("ours", "bare")

OPTIONS = (
    Option("servers", int, 40, 10, "connected stdio servers per run"),
    Option("runs", int, 3, 1, "runs per side, each in a fresh interpreter"),
    Option("trace", int, 1, 1, "1: one more run per side under tracemalloc; 0: skip it"),
)

_TRACE_FRAMES = 30


async def _connect_ours(stack: AsyncExitStack, workdir: Path, servers: int, label: str) -> None:
    from wave_actors import ServerState, open_session
    from wave_actors.testing import fault_server_entry

    entries = {f"{label}{index}": fault_server_entry(instructions=f"{label}-{index}") for index in range(servers)}
    session = await stack.enter_async_context(open_session(workdir=workdir, home=workdir / "home", mcp_servers=entries))
    await session.prepare_turn()
    states = {status.name: status.state for status in session.servers()}
    if any(state is not ServerState.CONNECTED for state in states.values()):
        raise RuntimeError(f"not every server connected: {states}")
    for name in entries:
        await session.call_tool(f"mcp__{name}__echo", {"text": "hello"})


async def _connect_bare(
    stack: AsyncExitStack, workdir: Path, servers: int, label: str, kept: list[Any] | None = None
) -> None:
    """The bare SDK's connections; ``kept`` receives each server's tool list, as a host that shows it would keep it."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from wave_actors.testing import entry_command, fault_server_entry

    devnull = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - closed by the stack
    environment = dict(os.environ)
    for index in range(servers):
        command = entry_command(fault_server_entry(instructions=f"{label}-{index}"))
        parameters = StdioServerParameters(command=command[0], args=command[1:], env=environment, cwd=workdir)
        read, write = await stack.enter_async_context(stdio_client(parameters, errlog=devnull))
        client = await stack.enter_async_context(ClientSession(read, write))
        await client.initialize()
        listed = await client.list_tools()
        if kept is not None:
            kept.append(listed.tools)
        await client.call_tool("echo", {"text": "hello"})


def _tracked_objects() -> int:
    """How many objects the garbage collector tracks, counted without allocating.

    ``len(gc.get_objects())`` builds a list of every object, a megabyte or
    more: freeing it raises the allocator's mmap threshold, and the RSS
    measured after it then keeps what the dials freed. Frozen, every tracked
    object is counted by an int.
    """
    gc.freeze()
    count = gc.get_freeze_count()
    gc.unfreeze()
    return count


def _our_frame(frames: Any) -> str:
    """The innermost frame of the library (or of supervisors) in a traceback, else the allocation site."""
    for frame in reversed(frames):  # tracemalloc keeps the oldest frame first
        filename = frame.filename.replace("\\", "/")
        for marker in ("/wave_actors/", "/supervisors/"):
            if marker in filename:
                return f"{marker.strip('/')}/{filename.split(marker, 1)[1]}:{frame.lineno}"
    last = frames[-1]
    return f"(outside) {short_site(f'{last.filename}:{last.lineno}')}"


async def _worker(side: str, servers: int, trace: bool) -> dict[str, Any]:
    """One run of one side: connect ``servers`` servers, measure, close them all."""
    import psutil

    from wave_actors.testing import count_tasks

    me = psutil.Process()
    kept: list[Any] = []  # the bare-kept side's tool lists, alive until measured

    async def connect(stack: AsyncExitStack, workdir: Path, servers: int, label: str) -> None:
        if side == "ours":
            await _connect_ours(stack, workdir, servers, label)
        else:
            await _connect_bare(stack, workdir, servers, label, kept if side == "bare-kept" else None)

    result: dict[str, Any] = {"side": side, "servers": servers}
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        # One connection first, so that imports and first-use caches are not counted per server.
        async with AsyncExitStack() as warmup:
            await connect(warmup, workdir, 1, "w")
        kept.clear()
        if trace:
            import tracemalloc

            tracemalloc.start(_TRACE_FRAMES)
        gc.collect()
        rss_before = me.memory_info().rss
        tasks_before = count_tasks()
        objects_before = _tracked_objects()
        async with AsyncExitStack() as stack:
            await connect(stack, workdir, servers, "s")
            gc.collect()
            rss_after = me.memory_info().rss
            result["gc_objects_per_server"] = (_tracked_objects() - objects_before) / servers
            result["tasks_per_server"] = (count_tasks() - tasks_before) / servers
            result["kib_per_server"] = (rss_after - rss_before) / servers / 1024
            if trace:
                import tracemalloc

                snapshot = tracemalloc.take_snapshot()
                tracemalloc.stop()
                snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
                statistics = snapshot.statistics("lineno")
                result["traced_bytes_per_server"] = sum(stat.size for stat in statistics) / servers
                result["top_sites"] = [
                    {"site": short_site(str(stat.traceback)), "bytes_per_server": stat.size / servers}
                    for stat in statistics[:25]
                ]
                ours: Counter[str] = Counter()
                for stat in snapshot.statistics("traceback"):
                    ours[_our_frame(stat.traceback)] += stat.size
                result["our_frames"] = [
                    {"frame": frame, "bytes_per_server": size / servers} for frame, size in ours.most_common(25)
                ]
    return result


async def _spawn_worker(side: str, servers: int, trace: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.connected_scale", "--worker", side, "--servers", str(servers)]
    if trace:
        command.append("--trace")
    completed = await trio.run_process(command, capture_stdout=True, check=True)
    return json.loads(completed.stdout)


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for index in range(arguments.runs):
        order = SIDES if index % 2 == 0 else SIDES[::-1]
        for side in order:
            progress.update("connecting", f"run {index + 1}/{arguments.runs}: {side}, {arguments.servers} servers")
            runs[side].append(await _spawn_worker(side, arguments.servers, trace=False))
    outcome = Outcome(data={"runs": runs})

    def figure(side: str, key: str) -> float:
        return median(float(run[key]) for run in runs[side])

    table = Table(
        f"connected_scale: {arguments.servers} connected stdio servers in one process, one call each "
        f"(median of {arguments.runs} fresh-interpreter runs per side)",
        ["metric", "wave-actors", "bare SDK", "ratio", "bare SDK, tools kept", "ratio", "target"],
    )
    kib, bare_kib = figure("ours", "kib_per_server"), figure("bare", "kib_per_server")
    kept_kib = figure("bare-kept", "kib_per_server")
    tasks, bare_tasks = figure("ours", "tasks_per_server"), figure("bare", "tasks_per_server")
    kept_tasks = figure("bare-kept", "tasks_per_server")
    objects, bare_objects = figure("ours", "gc_objects_per_server"), figure("bare", "gc_objects_per_server")
    kept_objects = figure("bare-kept", "gc_objects_per_server")
    table.add(
        "RSS per connected server KiB",
        kib,
        bare_kib,
        ratio(kib, bare_kib),
        kept_kib,
        ratio(kib, kept_kib),
        f"<= {TARGET_KIB:g}",
    )
    table.add(
        "trio tasks per connected server",
        tasks,
        bare_tasks,
        ratio(tasks, bare_tasks),
        kept_tasks,
        ratio(tasks, kept_tasks),
        f"<= {TARGET_TASKS:g}",
    )
    table.add(
        "GC-tracked objects per connected server",
        objects,
        bare_objects,
        ratio(objects, bare_objects),
        kept_objects,
        ratio(objects, kept_objects),
        "",
    )
    table.notes.append(
        "RSS: psutil rss after gc.collect(), delta over connecting all servers (after one warm-up connection)."
    )
    table.notes.append(
        "GC-tracked objects: counted (gc.freeze) after gc.collect(), same delta; each one is walked by every full"
        " collection."
    )
    table.notes.append(
        "bare SDK, tools kept: the same bare SDK code keeping each server's list_tools().tools, as a host that"
        " shows the tools to its model must; the plain bare SDK figure drops them."
    )
    outcome.tables.append(table)
    outcome.headlines += [
        at_most("RSS per connected stdio server", kib, TARGET_KIB, "KiB"),
        Headline("RSS per connection, bare SDK ClientSession", bare_kib, "KiB"),
        Headline("RSS per connection, bare SDK ClientSession keeping its tool list", kept_kib, "KiB"),
        Headline("GC-tracked objects per connected stdio server", objects),
        Headline("GC-tracked objects per connection, bare SDK ClientSession", bare_objects),
        Headline("GC-tracked objects per connection, bare SDK ClientSession keeping its tool list", kept_objects),
        at_most("trio tasks per connected stdio server", tasks, TARGET_TASKS),
    ]
    if arguments.trace:
        traced: dict[str, dict[str, Any]] = {}
        for side in TRACED_SIDES:
            progress.update("tracemalloc", side)
            traced[side] = await _spawn_worker(side, arguments.servers, trace=True)
        outcome.data["tracemalloc"] = traced
        ours, bare = traced["ours"], traced["bare"]
        title = (
            f"connected_scale: traced bytes per connected server: {ours['traced_bytes_per_server'] / 1024:.1f} KiB "
            f"(bare SDK {bare['traced_bytes_per_server'] / 1024:.1f} KiB)"
        )
        sites = Table(f"{title}; by allocation site (wave-actors)", ["allocation site", "bytes/server"])
        for site in ours["top_sites"][:15]:
            sites.add(site["site"], site["bytes_per_server"])
        frames = Table(
            "connected_scale: traced bytes per server by the innermost wave_actors/supervisors frame",
            ["frame", "bytes/server"],
        )
        for frame in ours["our_frames"][:15]:
            frames.add(frame["frame"], frame["bytes_per_server"])
        outcome.tables += [sites, frames]
        outcome.headlines.append(Headline("traced bytes per connected stdio server", ours["traced_bytes_per_server"]))
    return outcome


def _worker_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.connected_scale --worker")
    parser.add_argument("--worker", choices=SIDES, required=True)
    parser.add_argument("--servers", type=int, required=True)
    parser.add_argument("--trace", action="store_true")
    arguments = parser.parse_args(argv)
    result = trio.run(_worker, arguments.worker, arguments.servers, arguments.trace)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        _worker_main(sys.argv[1:])
    else:
        main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
