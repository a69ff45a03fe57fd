"""reclaim_latency: from ``host.destroy_session`` to "no process of the family left" (R-KILL-1, R-KILL-4).

Each run creates a session, connects its servers, records every process of
their families (the servers and their grandchildren, found by an environment
mark given to the entries), then destroys the session while a poller watches
those pids every few milliseconds. Two times are kept: when the last family
member was gone (dead or a zombie), and when ``destroy_session`` returned;
any member still alive when ``destroy_session`` returned is counted (must be
0: destroy returns only after reclamation).

Cases: servers that exit on stdin EOF (the common, polite case), the same
with a grandchild and a ``setsid`` grandchild, servers that ignore both
SIGTERM and stdin EOF and have a grandchild (the worst case: only SIGKILL
ends them, after both graces), sessions of 5 servers of either kind, and
``--mass-sessions`` sessions destroyed all at once (a host shutting down).
Graces are the library defaults unless ``--graces`` says otherwise.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import attrs
import psutil
import trio

from benchmarks.report import Headline, Progress, Table, at_most, median, percentile
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Graces, Host, ServerState, Session, SessionOptions, TransportOptions
from wave_actors.testing import fault_server_entry, is_alive, kill_processes, process_census

NAME = "reclaim_latency"
CASE_VARIABLE = "WAVE_BENCH_CASE"

OPTIONS = (
    Option("runs", int, 30, 4, "runs per single-server case whose servers exit on EOF"),
    Option("slow_runs", int, 30, 1, "runs of the single-server case that only SIGKILL ends (~4 s each)"),
    Option("multi_runs", int, 10, 2, "runs per 5-server case whose servers exit on EOF"),
    Option("multi_slow_runs", int, 5, 0, "runs of the 5-server case that only SIGKILL ends (0: skip)"),
    Option("mass_runs", int, 3, 1, "runs of the case destroying many sessions at once"),
    Option("mass_sessions", int, 50, 50, "sessions in that case"),
    Option("graces", str, "", "", "eof,term,kill seconds (default: the library's Graces())"),
)


@attrs.frozen
class Case:
    label: str
    servers: int
    behaviour: dict[str, object]
    sessions: int = 1

    @property
    def slow(self) -> bool:
        return self.behaviour.get("exit_on_eof") is False

    def runs(self, arguments: argparse.Namespace) -> int:
        if self.sessions > 1:
            return arguments.mass_runs
        if self.servers > 1:
            return arguments.multi_slow_runs if self.slow else arguments.multi_runs
        return arguments.slow_runs if self.slow else arguments.runs


CASES = (
    Case("exits on EOF", 1, {}),
    Case("exits on EOF, grandchild + setsid grandchild", 1, {"grandchild": True, "setsid_grandchild": True}),
    Case("ignores SIGTERM and EOF, grandchild", 1, {"ignore_sigterm": True, "exit_on_eof": False, "grandchild": True}),
    Case("5 servers exiting on EOF, grandchild each", 5, {"grandchild": True}),
    Case(
        "5 servers ignoring SIGTERM and EOF, grandchild each",
        5,
        {"ignore_sigterm": True, "exit_on_eof": False, "grandchild": True},
    ),
)


def _mass_case(sessions: int) -> Case:
    return Case(
        f"{sessions} sessions destroyed at once, 1 server + grandchild + setsid grandchild each",
        1,
        {"grandchild": True, "setsid_grandchild": True},
        sessions=sessions,
    )


def _family(mark: str) -> list[psutil.Process]:
    """The live processes of one session's servers: only they carry its case mark."""
    return process_census(CASE_VARIABLE, mark, descendants=False)


async def _one_run(host: Host, workdir: Path, case: Case) -> dict[str, float]:
    """Create the case's sessions, connect them, destroy them all at once; time until their families are gone."""
    marks = [uuid.uuid4().hex for _ in range(case.sessions)]
    sessions: list[Session] = []
    for mark in marks:
        entries: dict[str, dict[str, object]] = {}
        for index in range(case.servers):
            entry = fault_server_entry(instructions=f"reclaim-{mark}-{index}", **case.behaviour)  # type: ignore[arg-type]
            entry["env"] = {CASE_VARIABLE: mark}
            entries[f"s{index}"] = entry
        sessions.append(await host.create_session(workdir, entries))
    async with trio.open_nursery() as nursery:
        for session in sessions:
            nursery.start_soon(session.prepare_turn)
    for session in sessions:
        if {status.state for status in session.servers()} != {ServerState.CONNECTED}:
            raise RuntimeError(f"{case.label}: servers did not connect: {[s.error for s in session.servers()]}")
    per_server = 1 + int(bool(case.behaviour.get("grandchild"))) + int(bool(case.behaviour.get("setsid_grandchild")))
    families: dict[str, list[psutil.Process]] = {}
    for mark in marks:
        # Grandchildren are spawned at server start, before initialize is answered; allow a moment to be sure.
        family: list[psutil.Process] = []
        with trio.move_on_after(2.0):
            while len(family := await trio.to_thread.run_sync(_family, mark)) < case.servers * per_server:
                await trio.sleep(0.01)
        families[mark] = family
    everyone = [process for family in families.values() for process in family]
    gone_at = trio.Event()
    times: dict[str, float] = {"family": float(len(everyone)), "alive_at_return": 0.0}

    async def poll(started: float) -> None:
        remaining = list(everyone)
        while remaining:
            remaining = [process for process in remaining if is_alive(process)]
            if remaining:
                # Checking a pid costs ~20 µs: keep the poller under ~15% of the loop for big families.
                await trio.sleep(max(0.002, 0.00015 * len(remaining)))
        times["gone_s"] = time.perf_counter() - started
        gone_at.set()

    async def destroy(session_id: str, family: list[psutil.Process]) -> None:
        await host.destroy_session(session_id)
        times["alive_at_return"] += sum(1 for process in family if is_alive(process))

    async with trio.open_nursery() as nursery:
        started = time.perf_counter()
        nursery.start_soon(poll, started)
        async with trio.open_nursery() as destroys:
            for session, mark in zip(sessions, marks, strict=True):
                destroys.start_soon(destroy, session.id, families[mark])
        times["returned_s"] = time.perf_counter() - started
        with trio.move_on_after(30):
            await gone_at.wait()
        nursery.cancel_scope.cancel()
    times.setdefault("gone_s", float("nan"))
    left = [process for process in everyone if is_alive(process)]
    if left:
        kill_processes(left)
    return times


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    if arguments.graces:
        eof, term, kill = (float(value) for value in arguments.graces.split(","))
        graces = Graces(eof=eof, term=term, kill=kill)
    else:
        graces = Graces()
    options = SessionOptions(transport=TransportOptions(graces=graces))
    outcome = Outcome(data={"graces": attrs.asdict(graces), "cases": {}})
    table = Table(
        f"reclaim_latency: destroy_session -> no family process left (graces eof={graces.eof:g} s, "
        f"term={graces.term:g} s, kill={graces.kill:g} s)",
        ["case", "runs", "processes", "p50 ms", "p99 ms", "max ms", "destroy returned p50 ms", "alive at return"],
    )
    alive_at_return = 0
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        async with Host.open(home=workdir / "home", options=options) as host:
            for case in (*CASES, _mass_case(arguments.mass_sessions)):
                runs = case.runs(arguments)
                if runs <= 0:
                    continue
                results: list[dict[str, float]] = []
                for index in range(runs):
                    progress.update("reclaiming", f"{case.label}: run {index + 1}/{runs}")
                    results.append(await _one_run(host, workdir, case))
                outcome.data["cases"][case.label] = results
                gone = [result["gone_s"] * 1000 for result in results]
                finished = [value for value in gone if not math.isnan(value)]
                returned = [result["returned_s"] * 1000 for result in results]
                alive = int(sum(result["alive_at_return"] for result in results))
                table.add(
                    case.label,
                    runs,
                    int(median(result["family"] for result in results)),
                    median(finished) if len(finished) == len(gone) else math.nan,
                    percentile(finished, 0.99) if len(finished) == len(gone) else math.nan,
                    max(finished) if len(finished) == len(gone) else math.nan,
                    median(returned),
                    alive,
                )
                outcome.headlines.append(
                    Headline(f"p50 {case.label}", median(finished) if len(finished) == len(gone) else math.nan, "ms")
                )
                alive_at_return += alive
                never = sum(1 for value in gone if math.isnan(value))
                if never:
                    table.notes.append(
                        f"{case.label}: in {never} run(s) family members were still alive 30 s after destroy "
                        "returned (times shown as '-'; killed by the benchmark)"
                    )
    table.notes += [
        "processes: per run (servers + grandchildren), found by an env mark on the entries.",
        "N sessions at once: every destroy_session starts together; times run until the last family is gone.",
        "p99 is nearest-rank (with <= 100 runs it is the maximum); a member is gone once dead or a zombie.",
        f"a server ignoring SIGTERM and EOF costs the eof grace + the term grace (~{(graces.eof + graces.term) * 1000:.0f} ms) by design.",
    ]
    outcome.tables.append(table)
    outcome.headlines.append(
        at_most("family members alive when destroy returned", float(alive_at_return), 0, invariant=True)
    )
    outcome.data["cpus"] = os.cpu_count()
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
