"""reference: the dial-vs-destroy storm driven through the bare SDK, next to the same storm through ``Host``.

What a host gets without this library. Every iteration dials ``--dials``
fault servers that each spawn a grandchild and a ``setsid`` grandchild (some
answer ``initialize`` late, so cancellation lands mid-handshake), and
abandons each dial at a random moment; then, after a short settle, it counts
the processes of that iteration still alive (found by an environment mark
on the servers, which their children inherit), by kind. Drivers:

* ``bare SDK tasks``: a task per dial running ``stdio_client`` +
  ``ClientSession`` + ``initialize`` + ``list_tools``, its cancel scope
  cancelled at the random moment -- the obvious way to use the SDK.
* ``ClientSessionGroup``: ``connect_to_server`` per server with a random
  deadline each, then ``disconnect_from_server`` of the first session, then
  leaving the group. It is unsafe under trio (cancelling a connect in
  flight corrupts trio's cancel-scope stack; disconnecting a session other
  than the last raises "Nursery misnesting"), so every iteration runs in its
  own ``trio.run`` inside a worker process, and a crash is counted as a
  finding, not fatal.
* ``wave-actors Host``: a session per server, ``prepare_turn`` started and
  ``host.destroy_session`` at the random moment (0 orphans expected).

After counting, every orphan of the iteration is killed (by its mark), and
at the end a sweep of the whole run checks that nothing is left.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, cast

import trio

from benchmarks import processes
from benchmarks.report import Headline, Progress, Table, at_most, median
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Graces, Host, SessionOptions, TransportOptions
from wave_actors.testing import entry_command, fault_server_entry, kill_processes, process_census

NAME = "reference"
MARK_VARIABLE = "WAVE_BENCH_ITERATION"
KINDS = ("server", "grandchild", "setsid grandchild", "other")

OPTIONS = (
    Option("iterations", int, 8, 1, "iterations per driver"),
    Option("dials", int, 8, 4, "dials per iteration"),
    Option("cancel_within", float, 0.3, 0.3, "each dial is abandoned at a uniform random moment in [0, this] s"),
    Option("settle", float, 0.5, 0.5, "seconds after an iteration before counting what is left"),
)


def _entry(mark: str, rng: random.Random) -> dict[str, object]:
    entry = fault_server_entry(
        grandchild=True, setsid_grandchild=True, init_delay=rng.choice([None, 0.05, 0.2]), instructions=f"ref-{mark}"
    )
    entry["env"] = {MARK_VARIABLE: mark}
    return entry


def _parameters(entry: dict[str, object]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    command = entry_command(entry)
    env = {**os.environ, **cast("dict[str, str]", entry["env"])}
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


async def _count_and_clean(mark: str, settle: float) -> Counter[str]:
    """What the iteration left after ``settle`` seconds, by kind; then kill it all."""
    await trio.sleep(settle)
    left = await trio.to_thread.run_sync(lambda: process_census(MARK_VARIABLE, mark, descendants=False))
    counts = processes.kinds(left)
    await trio.to_thread.run_sync(kill_processes, left)
    return counts


# Driver: bare SDK, a task per dial.


async def _bare_iteration(rng: random.Random, arguments: argparse.Namespace, devnull: Any) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    mark = uuid.uuid4().hex
    errors: Counter[str] = Counter()
    close_times: list[float] = []

    async def dial(entry: dict[str, object], cancel_at: float) -> None:
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time() + cancel_at
            try:
                async with (
                    stdio_client(_parameters(entry), errlog=devnull) as (read, write),
                    ClientSession(read, write) as client,
                ):
                    await client.initialize()
                    await client.list_tools()
                    await trio.sleep_forever()
            except Exception as error:
                errors[type(error).__name__] += 1
        if scope.cancelled_caught:
            close_times.append(trio.current_time() - scope.deadline)

    async with trio.open_nursery() as nursery:
        for _ in range(arguments.dials):
            nursery.start_soon(dial, _entry(mark, rng), rng.uniform(0, arguments.cancel_within))
    left = await _count_and_clean(mark, arguments.settle)
    return {"left": dict(left), "errors": dict(errors), "close_ms": [t * 1000 for t in close_times]}


# Driver: wave-actors Host, a session per dial.


async def _host_iteration(
    host: Host, workdir: Path, rng: random.Random, arguments: argparse.Namespace
) -> dict[str, Any]:
    mark = uuid.uuid4().hex
    close_times: list[float] = []
    errors: Counter[str] = Counter()

    async def dial_then_destroy(entry: dict[str, object], cancel_at: float) -> None:
        session = await host.create_session(workdir, {"f": entry})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prepare_turn)
            await trio.sleep(cancel_at)
            started = trio.current_time()
            try:
                await host.destroy_session(session.id)
            except Exception as error:
                errors[type(error).__name__] += 1
            close_times.append(trio.current_time() - started)

    async with trio.open_nursery() as nursery:
        for _ in range(arguments.dials):
            nursery.start_soon(dial_then_destroy, _entry(mark, rng), rng.uniform(0, arguments.cancel_within))
    left = await _count_and_clean(mark, arguments.settle)
    return {"left": dict(left), "errors": dict(errors), "close_ms": [t * 1000 for t in close_times]}


# Driver: ClientSessionGroup, each iteration in its own trio.run, in a worker process.


async def _group_iteration(entries: list[dict[str, object]], deadlines: list[float]) -> int:
    from mcp.client.session_group import ClientSessionGroup

    connected: list[Any] = []
    async with ClientSessionGroup() as group:
        for entry, deadline in zip(entries, deadlines, strict=True):
            with trio.move_on_after(deadline):
                connected.append(await group.connect_to_server(_parameters(entry)))
        if len(connected) >= 2:
            await group.disconnect_from_server(connected[0])
    return len(connected)


def _innermost(error: BaseException) -> BaseException:
    """The one exception inside nested single-member groups, or the group itself."""
    while isinstance(error, BaseExceptionGroup):
        members = cast("tuple[BaseException, ...]", error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if len(members) != 1:
            break
        error = members[0]
    return cast(BaseException, error)


def _first_line(error: BaseException) -> str:
    """The message's first line, or where it was raised when it has none (a bare ``assert``)."""
    text = re.sub(r" at 0x[0-9a-f]+", "", str(error))  # so that equal failures count together
    if text:
        return text.splitlines()[0]
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"(no message) at {last.filename.split('site-packages/')[-1]}:{last.lineno} {last.line or ''}".strip()


def _group_worker(arguments: argparse.Namespace) -> None:
    """Run the group driver's iterations; print one JSON line per iteration."""
    rng = random.Random(arguments.seed)
    for _ in range(arguments.iterations):
        mark = uuid.uuid4().hex
        entries = [_entry(mark, rng) for _ in range(arguments.dials)]
        deadlines = [rng.uniform(0, arguments.cancel_within) for _ in entries]
        outcome: dict[str, Any] = {}
        started = time.monotonic()
        try:
            outcome["connected"] = trio.run(_group_iteration, entries, deadlines)
            outcome["error"] = None
        except BaseException as error:  # the finding: how it breaks
            leaf = _innermost(error)
            outcome["error"] = f"{type(error).__name__}: {_first_line(error)[:120]}"
            outcome["leaf"] = f"{type(leaf).__name__}: {_first_line(leaf)[:90]}"
        outcome["seconds"] = time.monotonic() - started
        outcome["left"] = dict(trio.run(_count_and_clean, mark, arguments.settle))
        print(json.dumps(outcome), flush=True)
    kill_processes(processes.leftovers())


async def _run_group_driver(arguments: argparse.Namespace, progress: Progress) -> tuple[list[dict[str, Any]], int]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.reference",
        "--group-worker",
        "--iterations",
        str(arguments.iterations),
        "--dials",
        str(arguments.dials),
        "--cancel-within",
        str(arguments.cancel_within),
        "--settle",
        str(arguments.settle),
        "--seed",
        str(arguments.seed),
    ]
    iterations: list[dict[str, Any]] = []
    stderr = bytearray()
    with tempfile.TemporaryFile() as errors:
        # The worker keeps this process's run mark, so that the final sweep finds its orphans too.
        env = {**os.environ, processes.INHERIT_VARIABLE: "1"}
        process = await trio.lowlevel.open_process(
            command, stdout=subprocess.PIPE, stderr=errors, cwd=Path(__file__).parent.parent, env=env
        )
        assert process.stdout is not None
        buffer = b""
        try:
            # A corrupted trio run could hang rather than crash: bound the worker.
            with trio.move_on_after(30 + 20 * arguments.iterations) as bound:
                while chunk := await process.stdout.receive_some(65536):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    iterations += [json.loads(line) for line in lines if line.startswith(b"{")]
                    progress.update(
                        "ClientSessionGroup", f"iteration {len(iterations)}/{arguments.iterations} (worker process)"
                    )
            if bound.cancelled_caught:
                process.kill()
                iterations.append({"error": "worker hung; killed", "leaf": "worker hung; killed", "left": {}})
        finally:
            with trio.CancelScope(shield=True):
                await process.wait()
            await process.stdout.aclose()
        errors.seek(0)
        stderr += errors.read()
    return iterations, stderr.decode(errors="replace").count("Exception ignored")


def _errors(iterations: list[dict[str, Any]]) -> str:
    counts: Counter[str] = Counter()
    for iteration in iterations:
        counts.update(iteration["errors"])
    return ", ".join(f"{name} {count}" for name, count in counts.most_common()) or "none"


def _spread(values: list[float]) -> str:
    return f"median {median(values):.0f}, max {max(values, default=float('nan')):.0f}"


def _table_row(table: Table, driver: str, iterations: list[dict[str, Any]], dials: int) -> Counter[str]:
    left: Counter[str] = Counter()
    for iteration in iterations:
        left.update(iteration["left"])
    total = sum(left.values())
    runs = max(1, len(iterations))
    table.add(
        driver,
        len(iterations),
        left["server"],
        left["grandchild"],
        left["setsid grandchild"],
        left["other"],
        total,
        total / runs,
        total / (runs * dials),
    )
    return left


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    rng = random.Random(arguments.seed)
    outcome = Outcome()
    bare: list[dict[str, Any]] = []
    hosted: list[dict[str, Any]] = []
    options = SessionOptions(transport=TransportOptions(graces=Graces()))
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory, open(os.devnull, "w") as devnull:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home", options=options) as host:
            for index in range(arguments.iterations):
                # Interleaved, so that load from elsewhere falls on both drivers alike.
                progress.update("bare SDK tasks", f"iteration {index + 1}/{arguments.iterations}")
                bare.append(await _bare_iteration(rng, arguments, devnull))
                progress.update("wave-actors Host", f"iteration {index + 1}/{arguments.iterations}")
                hosted.append(await _host_iteration(host, workdir, rng, arguments))
    group, ignored = await _run_group_driver(arguments, progress)
    progress.update("sweep", "checking that nothing of the run is left")
    swept = await trio.to_thread.run_sync(processes.leftovers)
    swept_kinds = dict(processes.kinds(swept))
    await trio.to_thread.run_sync(kill_processes, swept)

    table = Table(
        f"reference: dial vs destroy, {arguments.dials} dials per iteration abandoned at random in "
        f"[0, {arguments.cancel_within:g}] s; processes alive {arguments.settle:g} s after each iteration",
        [
            "driver",
            "iterations",
            "servers",
            "grandchildren",
            "setsid grandchildren",
            "other",
            "orphans",
            "per iteration",
            "per dial",
        ],
    )
    bare_left = _table_row(table, "bare SDK tasks (stdio_client)", bare, arguments.dials)
    group_left = _table_row(table, "ClientSessionGroup", group, arguments.dials)
    host_left = _table_row(table, "wave-actors Host", hosted, arguments.dials)
    group_errors = Counter(iteration["leaf"] for iteration in group if iteration.get("error"))
    table.notes += [
        "every orphan was killed by its environment mark right after it was counted.",
        f"bare SDK: {_spread([t for it in bare for t in it['close_ms']])} ms from cancel to task exit; "
        f"Host: {_spread([t for it in hosted for t in it['close_ms']])} ms per destroy_session.",
        f"ClientSessionGroup: {sum(1 for it in group if it.get('error'))}/{len(group)} iterations crashed; "
        f"{ignored} 'Exception ignored' tracebacks on stderr.",
        f"errors raised by the dials: bare SDK {_errors(bare)}; Host {_errors(hosted)}.",
    ]
    if swept:
        table.notes.append(f"final sweep found and killed {len(swept)} more: {swept_kinds}")
    outcome.tables.append(table)
    if group_errors:
        crashes = Table("reference: how ClientSessionGroup failed (innermost exception)", ["error", "iterations"])
        for error, count in group_errors.most_common():
            crashes.add(error, count)
        outcome.tables.append(crashes)
    dials = max(1, arguments.dials)
    outcome.headlines += [
        Headline("bare SDK orphans per dial (dial vs cancel)", sum(bare_left.values()) / max(1, len(bare) * dials)),
        Headline(
            "ClientSessionGroup iterations crashed",
            float(sum(1 for it in group if it.get("error"))),
            f"of {len(group)}",
        ),
        at_most("wave-actors orphans (dial vs destroy)", float(sum(host_left.values())), 0, invariant=True),
    ]
    outcome.data = {
        "bare": bare,
        "group": group,
        "host": hosted,
        "group_exception_ignored_tracebacks": ignored,
        "group_left": dict(group_left),
        "final_sweep": swept_kinds,
    }
    return outcome


if __name__ == "__main__":
    if "--group-worker" in sys.argv[1:]:
        worker = argparse.ArgumentParser(prog="python -m benchmarks.reference --group-worker")
        worker.add_argument("--group-worker", action="store_true")
        for flag, kind in (
            ("--iterations", int),
            ("--dials", int),
            ("--cancel-within", float),
            ("--settle", float),
            ("--seed", int),
        ):
            worker.add_argument(flag, type=kind, required=True)
        _group_worker(worker.parse_args())
    else:
        main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
