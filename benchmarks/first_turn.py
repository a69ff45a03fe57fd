"""first_turn: the first ``prepare_turn`` of a fresh process, one stdlib server, against its parts.

A fresh host must import the MCP SDK before its first dial, most of a second,
several times the dial itself. ``Host.open`` starts that import in a thread of
its own, so a host opened at start-up has it done by the time its first user
asks for a turn, and a turn asked for at once waits only for the rest of it.

Every figure comes from a fresh interpreter (a worker, ``--worker MODE``), one
of each per round, the modes in a rotating order:

* ``open``: ``Host.open``, a session, then its first ``prepare_turn`` at once;
  then later dials (a new session each) in the same process.
* ``paused``: the same, with ``--pause`` seconds between ``Host.open`` and the
  first ``prepare_turn`` (a host opened at start-up, its user not there yet).
* ``dial``: the SDK imported before ``Host.open``: a first dial without the import.
* ``import``: the bare SDK import, ``import mcp.client.session``, timed alone
  after ``trio`` and ``wave_actors``, as a host has them. It runs the ``mcp``
  package's ``__init__``, so it imports the whole SDK (HTTP clients and
  servers included); the library imports only what a stdio dial needs.

Targets: paused first turn <= 1.5x a later dial of the same process; the first
turn right after ``Host.open`` <= 1.2x the larger of the import and the dial.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from benchmarks import processes
from benchmarks.report import Progress, Table, at_most, info, median, ratio
from benchmarks.scenario import Option, Outcome, main

if TYPE_CHECKING:
    from wave_actors import Host, Session

NAME = "first_turn"
PAUSED_TARGET = 1.5
OPEN_TARGET = 1.2
MODES = ("open", "paused", "dial", "import")

OPTIONS = (
    Option("rounds", int, 5, 2, "rounds; each runs every mode once, in a fresh interpreter"),
    Option("pause", float, 3.0, 3.0, "seconds between Host.open and the first prepare_turn, mode paused"),
    Option("later_dials", int, 5, 3, "dials after the first turn, modes open and paused"),
)


def _http_client_modules() -> list[str]:
    tops = ("httpx", "httpx2", "httpcore", "httpcore2", "starlette", "sse_starlette", "uvicorn")
    extra = ("mcp.client.streamable_http", "mcp.client.sse", "mcp.shared._httpx_utils")
    return sorted(name for name in sys.modules if name.split(".")[0] in tops or name in extra)


def _import_seconds() -> float:
    """``import mcp.client.session`` in this fresh process, synchronously: the bare SDK import."""
    import importlib

    started = time.perf_counter()
    importlib.import_module("mcp.client.session")
    return time.perf_counter() - started


async def _turn(session: Session) -> float:
    """Time ``session``'s ``prepare_turn``, which must leave its server connected."""
    from wave_actors import ServerState

    started = time.perf_counter()
    await session.prepare_turn()
    elapsed = time.perf_counter() - started
    status = session.server("s")
    if status.state is not ServerState.CONNECTED:
        raise RuntimeError(f"prepare_turn left the server {status.state.value}: {status.error}")
    return elapsed


async def _later_dial(host: Host, workdir: Path, index: int) -> float:
    """A new session's first ``prepare_turn`` in a process that has dialed before."""
    from wave_actors.testing import fault_server_entry

    session = await host.create_session(workdir, {"s": fault_server_entry(instructions=f"first-turn-{index}")})
    try:
        return await _turn(session)
    finally:
        await host.destroy_session(session.id)


async def _worker(mode: str, pause: float, later_dials: int) -> dict[str, Any]:
    """One fresh-process measurement; the SDK must not be imported yet."""
    if "mcp" in sys.modules or "mcp_types" in sys.modules:
        raise RuntimeError("the worker imported the MCP SDK before measuring")
    if mode == "import":
        return {"import_s": _import_seconds(), "modules": len(sys.modules)}
    if mode == "dial":
        _import_seconds()
    from wave_actors import Host
    from wave_actors.testing import fault_server_entry

    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        modules_before = len(sys.modules)
        opened = time.perf_counter()
        async with Host.open(home=workdir / "home") as host:
            session = await host.create_session(workdir, {"s": fault_server_entry(instructions="first-turn")})
            if mode == "paused":
                await trio.sleep(pause)
            result["first_turn_s"] = await _turn(session)
            result["since_open_s"] = time.perf_counter() - opened
            result["modules_imported"] = len(sys.modules) - modules_before
            result["http_client_modules"] = len(_http_client_modules())
            later = [await _later_dial(host, workdir, index) for index in range(later_dials)]
            result["later_dials_s"] = later
            result["later_dial_s"] = median(later)
    return result


async def _spawn_worker(mode: str, arguments: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, "-m", f"benchmarks.{NAME}", "--worker", mode]
    command += ["--pause", str(arguments.pause), "--later-dials", str(arguments.later_dials)]
    # The worker keeps this process's run mark, so that the final sweep finds whatever it left.
    env = {**os.environ, processes.INHERIT_VARIABLE: "1"}
    completed = await trio.run_process(command, capture_stdout=True, check=True, env=env)
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    rounds: int = arguments.rounds
    samples: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for index in range(rounds):
        order = MODES[index % len(MODES) :] + MODES[: index % len(MODES)]
        for mode in order:
            progress.update("fresh processes", f"round {index + 1}/{rounds}: {mode}")
            samples[mode].append(await _spawn_worker(mode, arguments))

    def values(mode: str, key: str) -> list[float]:
        return [float(sample[key]) for sample in samples[mode]]

    import_s = median(values("import", "import_s"))
    dial_s = median(values("dial", "first_turn_s"))
    open_s = median(values("open", "first_turn_s"))
    paused_s = median(values("paused", "first_turn_s"))
    later_s = median(values("open", "later_dial_s") + values("paused", "later_dial_s"))
    paused_ratio = median(ratio(s["first_turn_s"], s["later_dial_s"]) for s in samples["paused"])
    open_ratio = ratio(open_s, max(import_s, dial_s))

    table = Table(
        f"first_turn: one stdlib server, fresh interpreters (median of {rounds} rounds)",
        ["figure", "ms", "min ms", "max ms", "vs later dial", "target"],
    )

    def row(label: str, data: list[float], target: str = "", versus_later: float | None = None) -> None:
        versus = ratio(median(data), later_s) if versus_later is None else versus_later
        table.add(label, median(data) * 1e3, min(data) * 1e3, max(data) * 1e3, versus, target)

    row(
        "first prepare_turn right after Host.open",
        values("open", "first_turn_s"),
        f"<= {OPEN_TARGET:g}x max(import, dial)",
    )
    row(
        f"first prepare_turn, Host.open {arguments.pause:g} s before",
        values("paused", "first_turn_s"),
        f"<= {PAUSED_TARGET:g}x later dial",
        paused_ratio,
    )
    row("later dial (median per process)", values("open", "later_dial_s") + values("paused", "later_dial_s"))
    row("first dial, SDK imported before Host.open", values("dial", "first_turn_s"))
    row("bare SDK import (import mcp.client.session)", values("import", "import_s"))
    row("Host.open to the end of the first turn", values("open", "since_open_s"))
    table.notes += [
        "later dial: a new session's first prepare_turn once the process has dialed. vs later dial: median / the",
        "later dials' median, except for the paused first turn: per process (its first turn / its later dials),",
        "then the median, the headline.",
        f"right after Host.open: {open_s * 1e3:.0f} ms against max(import {import_s * 1e3:.0f}, dial "
        f"{dial_s * 1e3:.0f}) = {open_ratio:.2f}x.",
        f"modules a first turn imports: {median(values('open', 'modules_imported')):.0f}; "
        f"HTTP client modules among them: {max(values('open', 'http_client_modules')):.0f}.",
        f"{os.cpu_count()} CPUs; the import holds the GIL while it runs, so a dial overlapping it is slower.",
    ]
    outcome = Outcome(tables=[table], data={"samples": samples})
    outcome.headlines += [
        at_most(
            f"first prepare_turn {arguments.pause:g} s after Host.open / a later dial", paused_ratio, PAUSED_TARGET
        ),
        at_most("first prepare_turn right after Host.open / max(import, dial)", open_ratio, OPEN_TARGET),
        info("first prepare_turn right after Host.open", open_s * 1e3, "ms"),
        info(f"first prepare_turn {arguments.pause:g} s after Host.open", paused_s * 1e3, "ms"),
        info("bare SDK import", import_s * 1e3, "ms"),
        info("later dial", later_s * 1e3, "ms"),
    ]
    return outcome


def _worker_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME} --worker MODE")
    parser.add_argument("--worker", choices=MODES, required=True)
    parser.add_argument("--pause", type=float, required=True)
    parser.add_argument("--later-dials", type=int, required=True)
    arguments = parser.parse_args(argv)
    json.dump(trio.run(_worker, arguments.worker, arguments.pause, arguments.later_dials), sys.stdout)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        _worker_main(sys.argv[1:])
    else:
        main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
