"""race_storm: random interleavings of every operation across many sessions, with invariants checked live.

For ``--duration`` seconds, ``--sessions`` slots each keep one session of 2-3
fault servers alive and hammer it from ``--workers`` concurrent tasks with
random operations: prepare_turn, call, connect, disconnect, crash (the
server's ``crash`` tool), reconfigure (add, remove or change a server) and
destroy; a destroyed session is replaced by a new one (create). Some servers
spawn a grandchild, some a ``setsid`` grandchild, some answer ``initialize``
late so that commands land mid-dial.

Invariants, each of which must hold with zero violations:

(a) one transport per actor: a sampler process (:mod:`benchmarks.sampler`)
    lists this process's children every ``--sample-interval`` seconds; no two
    live server processes may carry the same actor marker
    (``storm-<session>-<server>``, passed as the server's ``instructions`` so
    it shows in argv).
(b) no state change from a stale generation: the sessions' transition
    observer (``SessionOptions.transition_observer``) sees every message every
    state machine handles; a transport event whose ``generation`` is not the
    live one must change nothing and ask for no effects. (``Started`` is
    the message that *sets* the live generation after the actor's own
    ``StartTransport``; it is checked separately: it may never replace a live
    generation.) The wrapper also checks the pure form of (c): from a
    manually disconnected state only an explicit ``Connect`` or a ``Reload``
    may leave ``disconnected``.
(c) manual disconnect never undone: once ``session.disconnect(name)`` has
    returned, and until the next connect, reconfigure or destroy issued on
    that session for that server, every status snapshot a per-session watcher
    receives must show it ``disconnected``.

Afterwards no process of the run may be left: descendants and anything
carrying this run's environment mark (``setsid`` grandchildren re-parent to
init but keep it), and the library's family tag
(:data:`wave_actors.testing.FAMILY_VARIABLE`) is reported for each leftover.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from benchmarks import processes
from benchmarks.report import Headline, Progress, Table, at_most, median
from benchmarks.scenario import Option, Outcome, main
from supervisors import Backoff, RestartIntensity
from wave_actors import (
    Graces,
    Host,
    ServerState,
    ServerUnavailable,
    Session,
    SessionOptions,
    Transition,
    TransportOptions,
    WaveActorsError,
)
from wave_actors.testing import FAMILY_VARIABLE, FAULT_SERVER_PATH, fault_server_entry, kill_processes

NAME = "race_storm"
MARKER_PREFIX = "storm-"

OPTIONS = (
    Option("duration", float, 60.0, 5.0, "seconds of storm"),
    Option("sessions", int, 50, 12, "concurrent sessions"),
    Option("workers", int, 3, 3, "concurrent tasks issuing operations on each session"),
    Option("sample_interval", float, 0.02, 0.02, "seconds between process samples"),
    Option("graces", str, "", "", "reclamation graces eof,term,kill in seconds (default: the library's Graces())"),
)

WEIGHTS: Mapping[str, int] = {
    "prepare_turn": 12,
    "call": 36,
    "connect": 12,
    "disconnect": 9,
    "crash": 5,
    "reconfigure": 4,
    "destroy": 2,
}


def storm_options(graces: Graces, observer: Callable[[Transition], None] | None = None) -> SessionOptions:
    """Fast reconnects (so that crashes lead to reconnect races within seconds); graces as given."""
    return SessionOptions(
        transition_observer=observer,
        dial_timeout=10.0,
        transport=TransportOptions(graces=graces),
        reconnect_backoff=Backoff(initial=0.05, multiplier=2.0, maximum=0.5, jitter=0.2, reset_after=5.0),
        reconnect_intensity=RestartIntensity(max_restarts=3, period=10.0),
    )


@attrs.define
class Violation:
    invariant: str
    detail: str
    at: float


@attrs.define
class Ledger:
    """Everything the storm counts."""

    started: float = attrs.field(factory=time.monotonic)
    operations: Counter[str] = attrs.field(factory=Counter[str])
    outcomes: Counter[tuple[str, str]] = attrs.field(factory=Counter[tuple[str, str]])
    violations: list[Violation] = attrs.field(factory=list[Violation])
    violation_counts: Counter[str] = attrs.field(factory=Counter[str])
    reducer: Counter[str] = attrs.field(factory=Counter[str])
    sessions_created: int = 0
    crashes: int = 0
    samples: int = 0
    last_sample: float = 0.0
    sample_seconds: list[float] = attrs.field(factory=list[float])
    most_servers_alive: int = 0
    most_per_actor: int = 0
    log_records: Counter[str] = attrs.field(factory=Counter[str])
    log_examples: dict[str, list[str]] = attrs.field(factory=dict[str, list[str]])

    def violate(self, invariant: str, detail: str) -> None:
        self.violation_counts[invariant] += 1
        if len(self.violations) < 50:
            self.violations.append(Violation(invariant, detail, time.monotonic() - self.started))


# (b) and the pure form of (c): every state machine transition, watched.


def _transition_checker(ledger: Ledger) -> Callable[[Transition], None]:
    def observe(transition: Transition) -> None:
        try:
            _check_transition(ledger, transition)
        except Exception as error:  # never let the checker break the actor
            ledger.violate("checker", repr(error))

    return observe


def _check_transition(ledger: Ledger, t: Transition) -> None:
    ledger.reducer[t.message] += 1
    if t.message == "Started":
        if t.live_before is not None and t.changed:
            ledger.violate("b", f"{t.server}: Started({t.generation}) replaced live generation {t.live_before}")
    elif t.stale:
        ledger.reducer["stale events"] += 1
        if t.changed or t.effects:
            ledger.violate("b", f"{t.server}: stale {t.message}({t.generation}) (live {t.live_before}) changed: {t}")
    elif t.message == "Up" and t.state_before is ServerState.RECONNECTING:
        ledger.reducer["reconnected"] += 1
    elif t.message == "Lost":
        ledger.reducer["losses"] += 1
    held = t.manually_disconnected_before and t.state_before is ServerState.DISCONNECTED
    allowed = (t.message == "Connect" and t.explicit) or t.message == "Reload"
    if held and not allowed and t.state_after is not ServerState.DISCONNECTED:
        ledger.violate("c", f"{t.server}: {t.message} took a manually disconnected server to {t.state_after.value}")


# (a): the sampler.


async def _sample_processes(ledger: Ledger, interval: float, stop: trio.Event) -> None:
    """Run :mod:`benchmarks.sampler` beside the storm and fold its samples into the ledger."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.sampler",
        "--parent",
        str(os.getpid()),
        "--program",
        str(FAULT_SERVER_PATH),
        "--prefix",
        MARKER_PREFIX,
        "--interval",
        str(interval),
    ]
    process = await trio.lowlevel.open_process(command, stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent)
    assert process.stdout is not None
    buffer = b""
    try:
        async with trio.open_nursery() as nursery:

            async def stopper() -> None:
                await stop.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(stopper)
            while chunk := await process.stdout.receive_some(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    _fold_sample(ledger, json.loads(line))
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()


def _fold_sample(ledger: Ledger, sample: dict[str, Any]) -> None:
    ledger.samples += 1
    ledger.most_servers_alive = max(ledger.most_servers_alive, sample["servers"])
    ledger.most_per_actor = max(ledger.most_per_actor, sample["most"])
    for marker, count in sample["over"].items():
        ledger.violate("a", f"{count} live server processes for actor {marker} (sample at {sample['t']} s)")
    if ledger.samples > 1:
        ledger.sample_seconds.append(sample["t"] - ledger.last_sample)
    ledger.last_sample = sample["t"]


# (c): manual disconnects and a per-session watcher.


@attrs.define(eq=False)
class Slot:
    """One session's life: its entries, commands issued per server, disconnects in force."""

    index: int
    host: Host
    ledger: Ledger
    rng: random.Random
    generation: int = 0
    session: Session | None = None
    entries: dict[str, dict[str, object]] = attrs.field(factory=dict[str, dict[str, object]])
    next_server: int = 0
    epochs: Counter[str] = attrs.field(factory=Counter[str])
    holds: set[str] = attrs.field(factory=set[str])
    finished: bool = False

    def new_entry(self, session_id: str, name: str) -> dict[str, object]:
        rng = self.rng
        return fault_server_entry(
            instructions=f"{MARKER_PREFIX}{session_id}-{name}",
            init_delay=rng.choice([None, None, 0.02, 0.1]),
            grandchild=rng.random() < 0.3,
            setsid_grandchild=rng.random() < 0.2,
        )

    def add_server(self, session_id: str) -> None:
        name = f"s{self.next_server}"
        self.next_server += 1
        self.entries[name] = self.new_entry(session_id, name)

    def issue(self, *names: str) -> None:
        """A command for these servers is being posted: any disconnect in force for them ends."""
        for name in names:
            self.epochs[name] += 1
            self.holds.discard(name)

    def check(self, session: Session, why: str) -> None:
        snapshot = session.snapshot()
        for status in snapshot.servers:
            if status.name in self.holds and status.state is not ServerState.DISCONNECTED:
                self.ledger.violate(
                    "c", f"session {session.id} server {status.name} is {status.state.value} after a disconnect ({why})"
                )


async def _watch(slot: Slot, session: Session) -> None:
    async for _ in session.watch():
        slot.check(session, "watcher")


async def _operate(slot: Slot, session: Session, deadline: float) -> None:
    ledger, rng = slot.ledger, slot.rng
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    while not session.closed and not slot.finished and trio.current_time() < deadline:
        kind = rng.choices(kinds, weights)[0]
        names = list(slot.entries)
        name = rng.choice(names) if names else "s0"
        try:
            await _one(slot, session, kind, name)
            outcome = "ok"
        except WaveActorsError as error:
            outcome = type(error).__name__
        except Exception as error:
            outcome = f"UNEXPECTED {type(error).__name__}"
            ledger.violate("unexpected error", f"{kind} {name}: {error!r}")
        ledger.operations[kind] += 1
        ledger.outcomes[(kind, outcome)] += 1
        await trio.sleep(rng.uniform(0, 0.01))


async def _one(slot: Slot, session: Session, kind: str, name: str) -> None:
    rng = slot.rng
    match kind:
        case "prepare_turn":
            await session.prepare_turn()
        case "call":
            connected = [s.name for s in session.servers() if s.state is ServerState.CONNECTED]
            if connected and rng.random() < 0.8:
                name = rng.choice(connected)
            if rng.random() < 0.2:
                await session.call_tool(f"mcp__{name}__sleep", {"seconds": rng.uniform(0.01, 0.1)})
            else:
                await session.call_tool(f"mcp__{name}__echo", {"text": "storm"})
        case "connect":
            slot.issue(name)
            await session.connect(name)
        case "disconnect":
            slot.issue(name)
            epoch = slot.epochs[name]
            await session.disconnect(name)
            if slot.epochs[name] == epoch and not session.closed:
                slot.holds.add(name)
                slot.check(session, "disconnect returned")
        case "crash":
            connected = session.server(name).state is ServerState.CONNECTED
            try:
                await session.call_tool(f"mcp__{name}__crash", {"code": 7})
            except ServerUnavailable:
                if connected:
                    slot.ledger.crashes += 1
                raise
        case "reconfigure":
            entries = dict(slot.entries)
            change = rng.choice(["add", "remove", "change"])
            session_id = session.id
            if (change == "add" and len(entries) < 4) or len(entries) <= 1:
                new_name = f"s{slot.next_server}"
                entries[new_name] = slot.new_entry(session_id, new_name)
            elif change == "remove":
                del entries[name]
            else:
                entries[name] = slot.new_entry(session_id, name)  # same marker: the same actor, reloaded
            slot.issue(*slot.entries, *entries)
            await session.reconfigure(entries)
            if len(entries) > len(slot.entries):
                slot.next_server += 1
            slot.entries = entries
        case "destroy":
            slot.finished = True
            slot.issue(*slot.entries)
            await slot.host.destroy_session(session.id)
        case _:
            raise AssertionError(kind)


async def _run_slot(slot: Slot, workers: int, workdir: Path, deadline: float) -> None:
    while trio.current_time() < deadline:
        slot.generation += 1
        session_id = f"{slot.index}x{slot.generation}"
        slot.entries, slot.next_server, slot.finished = {}, 0, False
        slot.epochs.clear()
        slot.holds.clear()
        for _ in range(slot.rng.choice([2, 2, 3])):
            slot.add_server(session_id)
        session = await slot.host.create_session(workdir, dict(slot.entries), session_id=session_id)
        slot.ledger.sessions_created += 1
        slot.ledger.operations["create"] += 1
        slot.ledger.outcomes[("create", "ok")] += 1
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch, slot, session)
            async with trio.open_nursery() as operators:
                for _ in range(workers):
                    operators.start_soon(_operate, slot, session, deadline)
            slot.issue(*slot.entries)
            await slot.host.destroy_session(session.id)


class _CountingHandler(logging.Handler):
    def __init__(self, ledger: Ledger) -> None:
        super().__init__(logging.INFO)
        self._ledger = ledger

    def emit(self, record: logging.LogRecord) -> None:
        key = f"{record.levelname} {record.name}"
        self._ledger.log_records[key] += 1
        examples = self._ledger.log_examples.setdefault(key, [])
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
        if len(examples) < 3 and message not in examples:
            examples.append(message)


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    ledger = Ledger()
    graces = Graces(*(float(value) for value in arguments.graces.split(","))) if arguments.graces else Graces()
    handler = _CountingHandler(ledger)
    library_logger = logging.getLogger("wave_actors")
    library_logger.addHandler(handler)
    library_logger.setLevel(logging.INFO)
    library_logger.propagate = False  # counted and summarized instead of printed
    rng = random.Random(arguments.seed)
    stop_sampling = trio.Event()
    try:
        with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
            workdir = Path(directory)
            async with trio.open_nursery() as background:
                background.start_soon(_sample_processes, ledger, arguments.sample_interval, stop_sampling)

                async def report() -> None:
                    while True:
                        elapsed = time.monotonic() - ledger.started
                        total = sum(ledger.operations.values())
                        progress.update(
                            "storm",
                            f"{elapsed:5.1f}/{arguments.duration:g}s ops={total} ({total / max(elapsed, 1e-9):.0f}/s) "
                            f"servers={ledger.most_servers_alive} violations={sum(ledger.violation_counts.values())}",
                        )
                        await trio.sleep(0.25)

                background.start_soon(report)
                storm_started = time.monotonic()
                options = storm_options(graces, _transition_checker(ledger))
                async with Host.open(home=workdir / "home", options=options) as host:
                    deadline = trio.current_time() + arguments.duration
                    async with trio.open_nursery() as nursery:
                        for index in range(arguments.sessions):
                            slot = Slot(index, host, ledger, random.Random(rng.random()))
                            nursery.start_soon(_run_slot, slot, arguments.workers, workdir, deadline)
                    storm_seconds = time.monotonic() - storm_started
                    progress.update("teardown", "closing the host")
                    sessions_left, pending = len(host.sessions()), len(host.pending_destroys())
                stop_sampling.set()
                background.cancel_scope.cancel()
    finally:
        library_logger.removeHandler(handler)
        library_logger.propagate = True
    progress.update("leftovers", "scanning")
    left = processes.leftovers()
    left_kinds = dict(processes.kinds(left))
    tagged = sum(1 for process in left if FAMILY_VARIABLE in _environ(process))
    if left:
        kill_processes(left)
    return _outcome(arguments, ledger, storm_seconds, len(left), left_kinds, tagged, sessions_left, pending)


def _environ(process: Any) -> dict[str, str]:
    try:
        return process.environ()
    except Exception:
        return {}


def _outcome(
    arguments: argparse.Namespace,
    ledger: Ledger,
    storm_seconds: float,
    left: int,
    left_kinds: dict[str, int],
    tagged: int,
    sessions_left: int,
    pending: int,
) -> Outcome:
    total = sum(ledger.operations.values())
    outcome = Outcome()
    summary = Table(
        f"race_storm: {arguments.sessions} sessions x {arguments.workers} tasks, {storm_seconds:.1f} s "
        f"(seed {arguments.seed}, graces {arguments.graces or 'default'})",
        ["metric", "value"],
    )
    summary.add("operations", total)
    summary.add("operations/s", total / storm_seconds)
    summary.add("sessions created", ledger.sessions_created)
    summary.add("crashes (crash tool on a connected server)", ledger.crashes)
    summary.add("losses detected (Lost events)", ledger.reducer["losses"])
    summary.add("reconnects (Up after reconnecting)", ledger.reducer["reconnected"])
    summary.add("stale events checked", ledger.reducer["stale events"])
    summary.add("process samples", ledger.samples)
    summary.add("median ms between process samples", median(ledger.sample_seconds) * 1000)
    summary.add("most live servers in one sample", ledger.most_servers_alive)
    summary.add("most live servers for one actor", ledger.most_per_actor)
    for invariant, label in (
        ("a", "(a) >1 live transport per actor"),
        ("b", "(b) state change from a stale generation"),
        ("c", "(c) manual disconnect undone"),
        ("unexpected error", "errors outside WaveActorsError"),
        ("checker", "checker failures"),
    ):
        summary.add(f"violations {label}", ledger.violation_counts[invariant])
    summary.add("processes left after the storm", left)
    summary.add("sessions left / pending destroys", f"{sessions_left} / {pending}")
    if left:
        summary.notes.append(f"left: {left_kinds}; {tagged} carry {FAMILY_VARIABLE} (all killed)")
    outcome.tables.append(summary)

    by_operation = Table("race_storm: outcomes by operation", ["operation", "count", "ok", "errors by type"])
    for kind in ["create", *WEIGHTS]:
        errors = {
            outcome_name: count
            for (operation, outcome_name), count in ledger.outcomes.items()
            if operation == kind and outcome_name != "ok"
        }
        shown = ", ".join(f"{name} {count}" for name, count in sorted(errors.items(), key=lambda item: -item[1]))
        by_operation.add(kind, ledger.operations[kind], ledger.outcomes[(kind, "ok")], shown or "-")
    outcome.tables.append(by_operation)
    if ledger.violations:
        details = Table("race_storm: first violations", ["invariant", "at s", "detail"])
        for violation in ledger.violations[:20]:
            details.add(violation.invariant, violation.at, violation.detail[:200])
        outcome.tables.append(details)

    violations = sum(ledger.violation_counts[key] for key in ("a", "b", "c"))
    outcome.headlines += [
        Headline("storm operations / s", total / storm_seconds, "1/s"),
        at_most("storm invariant violations (a+b+c)", float(violations), 0, invariant=True),
        at_most("storm unexpected errors", float(ledger.violation_counts["unexpected error"]), 0, invariant=True),
        at_most("processes left after the storm", float(left), 0, invariant=True),
    ]
    outcome.data = {
        "storm_seconds": storm_seconds,
        "operations": dict(ledger.operations),
        "outcomes": {f"{kind}: {name}": count for (kind, name), count in ledger.outcomes.items()},
        "reducer_messages": dict(ledger.reducer),
        "violation_counts": dict(ledger.violation_counts),
        "violations": [attrs.asdict(violation) for violation in ledger.violations],
        "crashes": ledger.crashes,
        "samples": ledger.samples,
        "sample_period_median_s": median(ledger.sample_seconds),
        "most_servers_alive": ledger.most_servers_alive,
        "most_per_actor": ledger.most_per_actor,
        "left": left,
        "left_kinds": left_kinds,
        "left_with_family_tag": tagged,
        "sessions_left": sessions_left,
        "pending_destroys": pending,
        "library_log_records": dict(ledger.log_records),
        "library_log_examples": ledger.log_examples,
    }
    if ledger.log_records:
        logs = Table("race_storm: library log records (INFO and above)", ["level logger", "count", "example"])
        for key, count in ledger.log_records.most_common():
            logs.add(key, count, ledger.log_examples.get(key, [""])[0][:110])
        outcome.tables.append(logs)
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
