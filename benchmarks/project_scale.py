"""project_scale: N sessions of one project, each owning its connections or sharing the project's (R-SCOPE-1).

One workdir, 3 fault servers configured, N sessions (default 100) created one
after the other, each running one ``prepare_turn``; once with
``ownership="session"`` (every session dials its own: N x 3 processes) and
once with ``ownership="project"`` (one connection per server for the whole
project: 3 processes). Measured in each mode:

- the server processes alive once every session has had its turn;
- the host's RSS growth (after ``gc.collect()``) and its trio tasks, in total
  and per session;
- the first ``prepare_turn`` of session N, created after N-1 sessions are
  connected (repeated: session N is destroyed and created again);
- the time to destroy the N sessions one by one, the server processes still
  alive then (project mode keeps its connections for the idle timeout), the
  time to close the host, and the processes left after it closed (must be 0).

Memory is only honest in a fresh interpreter, so each (run, mode) is a worker
process (``--worker``); the two modes alternate, their order swapped every
run, so that load from elsewhere on the machine falls on both alike. Both
modes warm up the same way first: one session-mode session of the same
servers, dialed and destroyed, before anything is counted.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks import processes
from benchmarks.report import Headline, Progress, Table, at_most, info, median, ratio
from benchmarks.scenario import Option, Outcome, main_or_worker, worker_parser

NAME = "project_scale"
MODES = ("session", "project")

OPTIONS = (
    Option("sessions", int, 100, 20, "sessions of the one project, per mode and run"),
    Option("servers", int, 3, 3, "fault servers configured for the project"),
    Option("runs", int, 2, 1, "runs of each mode, each in a fresh interpreter, modes interleaved"),
    Option("repeats", int, 7, 3, "timed first prepare_turn of the last session, per run"),
    Option("ready_budget", float, 5.0, 5.0, "ProjectOptions.ready_budget, seconds"),
    Option("idle_timeout", float, 300.0, 300.0, "ProjectOptions.idle_timeout, seconds"),
)


def _servers_alive() -> tuple[int, int]:
    """(fault servers, every process) among this worker's processes."""
    from wave_actors.testing import process_census

    census = process_census()
    return processes.kinds(census)["server"], len(census)


def _servers_pss() -> int:
    """Bytes of proportional set size of this worker's live fault servers (0 where unreadable)."""
    from wave_actors.testing import process_census

    total = 0
    for process in process_census():
        if processes.kind(process) != "server":
            continue
        try:
            total += process.memory_full_info().pss
        except Exception:  # gone, or no smaps: the figure is a lower bound
            continue
    return total


async def _worker(arguments: argparse.Namespace) -> dict[str, Any]:
    """One mode, one run: N sessions up, measured, destroyed; the host closed."""
    import psutil

    from wave_actors import Host, ProjectOptions, ServerState
    from wave_actors.testing import count_tasks, fault_server_entry, leftover_processes

    mode: str = arguments.mode
    sessions: int = arguments.sessions
    me = psutil.Process()
    entries = {f"s{index}": fault_server_entry(instructions=f"project-{index}") for index in range(arguments.servers)}
    project = ProjectOptions(idle_timeout=arguments.idle_timeout, ready_budget=arguments.ready_budget)
    result: dict[str, Any] = {"mode": mode, "sessions": sessions, "servers": arguments.servers}

    def phase(text: str) -> None:
        print(json.dumps({"phase": text}), flush=True)

    async def turn(session: Any) -> float:
        started = time.perf_counter()
        await session.prepare_turn()
        elapsed = time.perf_counter() - started
        states = {status.state for status in session.servers()}
        if states != {ServerState.CONNECTED}:
            errors = [status.error for status in session.servers() if status.error]
            raise RuntimeError(f"{mode}: prepare_turn left states {sorted(map(str, states))}: {errors}")
        return elapsed

    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home", project=project) as host:
            # The same warm-up in both modes (imports, the dial path, page cache), counted in neither.
            warm = await host.create_session(workdir, entries)
            await turn(warm)
            await host.destroy_session(warm.id)
            gc.collect()
            rss_before = me.memory_info().rss
            tasks_before = count_tasks()
            result["servers_before"] = _servers_alive()[0]

            phase(f"{mode}: {sessions - 1} sessions, one turn each")
            up_turns: list[float] = []
            started = time.perf_counter()
            for _ in range(sessions - 1):
                session = await host.create_session(workdir, entries, ownership=mode)
                up_turns.append(await turn(session))
            result["bring_up_s"] = time.perf_counter() - started
            result["bring_up_turns_s"] = up_turns

            phase(f"{mode}: session {sessions}'s first turn x {arguments.repeats}")
            last_creates: list[float] = []
            last_turns: list[float] = []
            last = None
            for repeat in range(arguments.repeats):
                if last is not None:
                    await host.destroy_session(last.id)
                started = time.perf_counter()
                last = await host.create_session(workdir, entries, ownership=mode)
                last_creates.append(time.perf_counter() - started)
                last_turns.append(await turn(last))
                if repeat == 0:  # all N sessions up and turned once: count before any is destroyed
                    gc.collect()
                    rss_after = me.memory_info().rss
                    result["tasks"] = count_tasks() - tasks_before
                    result["servers_alive"], result["processes_alive"] = _servers_alive()
                    result["rss_before"] = rss_before
                    result["rss_after"] = rss_after
                    result["rss_growth"] = rss_after - rss_before
                    result["servers_pss"] = _servers_pss()
            result["last_create_s"] = last_creates
            result["last_turn_s"] = last_turns
            result["live_sessions"] = len(host.sessions())

            phase(f"{mode}: destroying {sessions} sessions")
            started = time.perf_counter()
            for session in host.sessions():
                await host.destroy_session(session.id)
            result["destroy_s"] = time.perf_counter() - started
            result["servers_after_destroy"] = _servers_alive()[0]
            closing = time.perf_counter()
        result["close_s"] = time.perf_counter() - closing
    left = leftover_processes(processes.RUN_VARIABLE, processes.RUN_MARK)
    result["left_after_close"] = len(left)
    result["left_kinds"] = dict(processes.kinds(left))
    return result


async def _spawn_worker(arguments: argparse.Namespace, mode: str, progress: Progress, label: str) -> dict[str, Any]:
    command = [sys.executable, "-m", f"benchmarks.{NAME}", "--worker", "--mode", mode]
    for option in ("sessions", "servers", "repeats", "ready_budget", "idle_timeout"):
        command += ["--" + option.replace("_", "-"), str(getattr(arguments, option))]
    # The worker keeps this process's run mark, so that the final sweep finds whatever it left.
    env = {**os.environ, processes.INHERIT_VARIABLE: "1"}
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent, env=env
    )
    assert process.stdout is not None
    result: dict[str, Any] | None = None
    buffer = b""
    try:
        with trio.fail_after(300):
            while chunk := await process.stdout.receive_some(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.startswith(b"{"):
                        continue
                    message = json.loads(line)
                    if "phase" in message:
                        progress.update(message["phase"], label)
                    else:
                        result = message
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None and result is None:
                process.kill()
            await process.wait()
        await process.stdout.aclose()
    if process.returncode != 0 or result is None:
        raise RuntimeError(f"{mode} worker failed with status {process.returncode} (its stderr is above)")
    return result


def _per_session(runs: list[dict[str, Any]], key: str) -> float:
    return median(run[key] / run["sessions"] for run in runs)


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    n, servers = arguments.sessions, arguments.servers
    if n < 2:
        raise SystemExit("--sessions must be at least 2")
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for index in range(arguments.runs):
        order = MODES if index % 2 == 0 else MODES[::-1]
        for mode in order:
            label = f"run {index + 1}/{arguments.runs}"
            results[mode].append(await _spawn_worker(arguments, mode, progress, label))
    outcome = Outcome(data={"runs": results})
    by_mode = {mode: results[mode] for mode in MODES}

    def pooled(mode: str, key: str) -> list[float]:
        return [value for run in by_mode[mode] for value in run[key]]

    table = Table(
        f"project_scale: {n} sessions of one project x {servers} fault servers, each session one prepare_turn "
        f"(median of {arguments.runs} fresh-interpreter run(s) per mode, modes interleaved)",
        ["metric", "session", "project", "session/project"],
    )

    def row(label: str, values: dict[str, float], *, count: bool = False, compare: bool = True) -> None:
        shown = [int(values[mode]) if count and values[mode].is_integer() else values[mode] for mode in MODES]
        table.add(label, *shown, ratio(values["session"], values["project"]) if compare else math.nan)

    def each(function: Any) -> dict[str, float]:
        return {mode: float(function(mode)) for mode in MODES}

    alive = each(lambda mode: median(run["servers_alive"] for run in by_mode[mode]))
    rss_total = each(lambda mode: median(run["rss_growth"] / 1024 / 1024 for run in by_mode[mode]))
    rss_session = each(lambda mode: _per_session(by_mode[mode], "rss_growth") / 1024)
    tasks_total = each(lambda mode: median(run["tasks"] for run in by_mode[mode]))
    tasks_session = each(lambda mode: _per_session(by_mode[mode], "tasks"))
    last_turn = each(lambda mode: median(pooled(mode, "last_turn_s")) * 1000)
    last_create = each(lambda mode: median(pooled(mode, "last_create_s")) * 1000)
    destroy = each(lambda mode: median(run["destroy_s"] for run in by_mode[mode]))
    row("server processes alive", alive, count=True)
    row("servers' PSS MiB (total)", each(lambda mode: median(run["servers_pss"] / 2**20 for run in by_mode[mode])))
    row("host RSS growth MiB (total)", rss_total)
    row("host RSS growth KiB / session", rss_session)
    row("trio tasks (total)", tasks_total, count=True)
    row("trio tasks / session", tasks_session)
    row(f"bring-up of {n - 1} sessions s", each(lambda mode: median(run["bring_up_s"] for run in by_mode[mode])))
    row(f"session {n}: create_session ms", last_create)
    row(f"session {n}: first prepare_turn ms", last_turn)
    row(f"destroy {n} sessions s (one by one)", destroy)
    row(
        "servers alive after destroying all",
        each(lambda m: max(r["servers_after_destroy"] for r in by_mode[m])),
        count=True,
        compare=False,
    )
    row("host close s", each(lambda mode: median(run["close_s"] for run in by_mode[mode])))
    left = {mode: float(max(run["left_after_close"] for run in by_mode[mode])) for mode in MODES}
    row("processes left after host close", left, count=True, compare=False)
    table.notes += [
        f"RSS: psutil rss of the host after gc.collect(), from before the first to after the {n}th session's turn.",
        "PSS: the fault servers' proportional set size, summed (what the machine pays for them beyond the host).",
        f"session {n}: created with {n - 1} sessions connected; median of {arguments.repeats} repeats x runs, pooled.",
        f"project mode keeps its connections after the last session for idle_timeout={arguments.idle_timeout:g} s; "
        "the host's close reclaims them.",
    ]
    outcome.tables.append(table)

    turns = Table(
        f"project_scale: session {n}'s first prepare_turn, ms, per run (median, min, max of {arguments.repeats})",
        ["mode", "run", "median", "min", "max"],
    )
    for mode in MODES:
        for index, result in enumerate(by_mode[mode]):
            samples = [value * 1000 for value in result["last_turn_s"]]
            turns.add(mode, index + 1, median(samples), min(samples), max(samples))
    outcome.tables.append(turns)

    outcome.headlines += [
        Headline(
            f"server processes, {n} sessions x {servers} servers, ownership=session",
            alive["session"],
            "",
            f"= {n * servers}",
            all(run["servers_alive"] == n * servers for run in by_mode["session"]),
            True,
        ),
        Headline(
            f"server processes, {n} sessions x {servers} servers, ownership=project",
            alive["project"],
            "",
            f"= {servers}",
            all(run["servers_alive"] == servers for run in by_mode["project"]),
            True,
        ),
        info("host RSS per session, ownership=session", rss_session["session"], "KiB"),
        info("host RSS per session, ownership=project", rss_session["project"], "KiB"),
        info("trio tasks per session, ownership=session", tasks_session["session"]),
        info("trio tasks per session, ownership=project", tasks_session["project"]),
        info(f"session {n}'s first prepare_turn, ownership=session", last_turn["session"], "ms"),
        info(f"session {n}'s first prepare_turn, ownership=project", last_turn["project"], "ms"),
        info(f"destroy {n} sessions, ownership=session", destroy["session"], "s"),
        info(f"destroy {n} sessions, ownership=project", destroy["project"], "s"),
        at_most("processes left after the host closed", max(left.values()), 0, invariant=True),
    ]
    return outcome


def _worker_main(argv: list[str]) -> None:
    parser = worker_parser(NAME, OPTIONS)
    parser.add_argument("--mode", choices=MODES, required=True)
    arguments = parser.parse_args(argv)
    result = trio.run(_worker, arguments)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main_or_worker(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run, _worker_main)
