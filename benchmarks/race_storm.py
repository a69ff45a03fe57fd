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

Ownership (``--ownership``). With ``session`` (the default, described above)
every session owns its connections, all in one workdir. With ``project``
the slots are spread over ``--workdirs`` temporary workdirs (default one per
four sessions) and create ``ownership="project"`` sessions, which share one
connection per (workdir, server) since they load the same entries
(:mod:`wave_actors._roster.project`):

- A workdir's servers are its ``.mcp.json``, which every session of it loads,
  so every slot of a workdir configures the same entries by name; names are
  unique over the storm (``w<workdir>s<n>``), and so are the markers
  (``storm-<workdir>-<name>``): (a) becomes "never two live processes for one
  (workdir, server)". A fifth of the sessions also configure the workdir's
  optional server ``w<workdir>x`` (a constructor entry), so that its last
  reference often goes and comes back: idle closes (``--idle-timeout``, short)
  race with new attaches.
- reconfigure edits the workdir's ``.mcp.json`` (add a server, half the time
  one removed earlier, whose new connection must wait for the old one's end;
  remove one; or change one, which keeps its marker) and reconciles the
  project, through ``session.reconfigure()`` or ``host.reconcile(workdir)``,
  half each; or it draws the session's optional server again
  (``session.reconfigure(entries)``). Every session of the workdir follows.
- (b) is unchanged: shared actors run with the host's options, so the
  observer sees every transition.
- (c) is per project, as manual disconnect is: once a disconnect of a
  workdir's server has returned, every snapshot of *every* session of that
  workdir must show it ``disconnected``, until a connect or disconnect of it is
  issued by any slot of the workdir, or its connection is retired (an idle
  close, or a reconcile that removed it: the observer's ``Retire``), after
  which the name is a new server. A reload (a changed entry, on reconcile or
  on attach) keeps a manual disconnect, and a destroy only releases
  references, so neither ends one: the checker is stricter than in session
  mode, where a reconfigure may put a new actor under the same name.
- After the storm every session is gone, and the idle timers must close every
  shared connection (``Host.project_servers`` empty) before the host closes;
  then no process may be left, as above.

With ``mixed``, half of each workdir's slots own their sessions' connections
instead; they load no project entry (``trust="approved"``, nothing approved),
so their markers stay per session, and ``host.reconcile`` reaches them too.

Driver (``--driver``). With ``asyncio`` the same slots and operations run as
asyncio tasks on an asyncio loop (in a thread of its own, beside this
process's trio run, which keeps the sampler), through
:mod:`wave_actors.asyncio`: every command crosses to the host's trio thread
and back, and the checker of (c) reads the snapshots the face mirrors to the
loop. The invariants and the leftover scan are the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

import wave_actors.asyncio as wave_asyncio
from benchmarks import processes
from benchmarks.report import Headline, Progress, Table, at_most, median
from benchmarks.scenario import Option, Outcome, main
from supervisors import Backoff, RestartIntensity
from wave_actors import (
    Graces,
    Host,
    MessageKind,
    ProjectOptions,
    ServerState,
    ServerStatus,
    ServerUnavailable,
    Session,
    SessionOptions,
    Transition,
    TransportOptions,
    TrustMode,
    WaveActorsError,
)
from wave_actors.testing import FAMILY_VARIABLE, FAULT_SERVER_PATH, fault_server_entry, kill_processes

NAME = "race_storm"
MARKER_PREFIX = "storm-"
OWNERSHIPS = ("session", "project", "mixed")
DRIVERS = ("trio", "asyncio")
EXTRA_SHARE = 0.2
"""How often a project-mode session configures its workdir's optional server: seldom enough that its last
reference often goes (an idle timer starts) and comes back (an attach, maybe while it closes)."""
IDLE_DRAIN_GRACE = 30.0
"""Seconds beyond the idle timeout allowed for the project connections to close once every session is gone."""
PROJECT_SERVER = re.compile(r"w(\d+)(?:s\d+|x)")
"""A project server's name: ``w<workdir>s<n>`` (from ``.mcp.json``) or ``w<workdir>x`` (the optional one)."""
PROJECT_EVENTS = (
    ("unused for", "idle closes (idle timer fired)"),
    ("served for another entry", "reconciles on attach (entry changed)"),
    ("loads another entry now", "reloads in place (entry changed)"),
    ("is dead", "rebuilds on attach (dead connection)"),
)
"""Library log messages of :mod:`wave_actors._roster.project` counted as project events."""


def driver_choice(value: str) -> str:
    """``--driver``: one of :data:`DRIVERS`."""
    if value not in DRIVERS:
        raise argparse.ArgumentTypeError(f"one of {', '.join(DRIVERS)}, not {value!r}")
    return value


def ownership_choice(value: str) -> str:
    """``--ownership``: one of :data:`OWNERSHIPS`."""
    if value not in OWNERSHIPS:
        raise argparse.ArgumentTypeError(f"one of {', '.join(OWNERSHIPS)}, not {value!r}")
    return value


OPTIONS = (
    Option("duration", float, 20.0, 5.0, "seconds of storm"),
    Option("sessions", int, 50, 12, "concurrent sessions"),
    Option("workers", int, 3, 3, "concurrent tasks issuing operations on each session"),
    Option("sample_interval", float, 0.02, 0.02, "seconds between process samples"),
    Option("graces", str, "", "", "reclamation graces eof,term,kill in seconds (default: the library's Graces())"),
    Option(
        "ownership",
        ownership_choice,
        "session",
        "session",
        "session, project (a workdir's slots share its connections) or mixed (half of each per workdir)",
    ),
    Option("workdirs", int, 0, 0, "workdirs with --ownership project or mixed (0: one per 4 sessions)"),
    Option("idle_timeout", float, 0.2, 0.2, "seconds a shared connection stays open unused (ProjectOptions)"),
    Option(
        "driver",
        driver_choice,
        "trio",
        "trio",
        "trio, or asyncio: the same storm through wave_actors.asyncio, from an asyncio loop in a thread of its own",
    ),
)

AnyHost = Host | wave_asyncio.Host
AnySession = Session | wave_asyncio.Session
Sleep = Callable[[float], Any]
"""``trio.sleep`` or ``asyncio.sleep``: the driver's."""

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
    # The latest periods only: a soak samples for an hour, and the ledger must not grow with it.
    sample_seconds: deque[float] = attrs.field(factory=lambda: deque[float](maxlen=1_000))
    most_servers_alive: int = 0
    most_per_actor: int = 0
    log_records: Counter[str] = attrs.field(factory=Counter[str])
    log_examples: dict[str, list[str]] = attrs.field(factory=dict[str, list[str]])
    project_events: Counter[str] = attrs.field(factory=Counter[str])
    storm_project_events: Counter[str] = attrs.field(factory=Counter[str])
    reconfigures: Counter[str] = attrs.field(factory=Counter[str])
    most_shared: int = 0

    def violate(self, invariant: str, detail: str) -> None:
        self.violation_counts[invariant] += 1
        if len(self.violations) < 50:
            self.violations.append(Violation(invariant, detail, time.monotonic() - self.started))


# (b) and the pure form of (c): every state machine transition, watched.


def _transition_checker(ledger: Ledger, retired: Callable[[str], None] | None = None) -> Callable[[Transition], None]:
    """The observer: checks (b) and the pure form of (c); tells ``retired`` of every ``Retire`` handled."""

    def observe(transition: Transition) -> None:
        try:
            _check_transition(ledger, transition)
            if retired is not None and transition.message is MessageKind.RETIRE:
                retired(transition.server)
        except Exception as error:  # never let the checker break the actor
            ledger.violate("checker", repr(error))

    return observe


def _check_transition(ledger: Ledger, t: Transition) -> None:
    ledger.reducer[t.message.value] += 1
    if t.message is MessageKind.STARTED:
        if t.live_before is not None and t.changed:
            ledger.violate("b", f"{t.server}: Started({t.generation}) replaced live generation {t.live_before}")
    elif t.stale:
        ledger.reducer["stale events"] += 1
        if t.changed or t.effects:
            ledger.violate(
                "b", f"{t.server}: stale {t.message.value}({t.generation}) (live {t.live_before}) changed: {t}"
            )
    elif t.message is MessageKind.UP and t.state_before is ServerState.RECONNECTING:
        ledger.reducer["reconnected"] += 1
    elif t.message is MessageKind.LOST:
        ledger.reducer["losses"] += 1
    held = t.manually_disconnected_before and t.state_before is ServerState.DISCONNECTED
    allowed = (t.message is MessageKind.CONNECT and t.explicit) or t.message is MessageKind.RELOAD
    if held and not allowed and t.state_after is not ServerState.DISCONNECTED:
        ledger.violate(
            "c", f"{t.server}: {t.message.value} took a manually disconnected server to {t.state_after.value}"
        )


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
class Holds:
    """The manual disconnects in force for one owner of connections: a session, or a project.

    ``epochs`` counts, per server, what may end a disconnect: a command issued
    for it, or (in a project) the retirement of its connection. A disconnect
    holds from its return if its server's epoch did not move meanwhile.
    """

    epochs: Counter[str] = attrs.field(factory=Counter[str])
    held: set[str] = attrs.field(factory=set[str])

    def end(self, *names: str) -> None:
        """Something that may end a disconnect in force for these servers is issued (or happened)."""
        for name in names:
            self.epochs[name] += 1
            self.held.discard(name)


@attrs.define(eq=False)
class Project:
    """One workdir of project-mode slots: its ``.mcp.json`` and the disconnects in force on its connections.

    Every slot of the workdir configures the same servers by name (the file),
    so their sessions share one connection per server; each session may also
    configure the optional server :attr:`extra` (a constructor entry, the same
    for every session).
    """

    index: int
    workdir: Path
    rng: random.Random
    entries: dict[str, dict[str, object]] = attrs.field(factory=dict[str, dict[str, object]])
    next_server: int = 0
    removed: list[str] = attrs.field(factory=list[str])
    holds: Holds = attrs.field(factory=Holds)
    extra_entry: dict[str, object] = attrs.field(factory=dict[str, object])

    @classmethod
    def make(cls, index: int, workdir: Path, rng: random.Random) -> Project:
        workdir.mkdir()
        project = cls(index, workdir, rng)
        project.extra_entry = project.new_entry(project.extra)
        entries: dict[str, dict[str, object]] = {}
        for _ in range(rng.choice([2, 3])):
            name = project.new_name()
            entries[name] = project.new_entry(name)
        project.write(entries)
        return project

    @property
    def extra(self) -> str:
        """The optional server's name."""
        return f"w{self.index}x"

    def new_name(self) -> str:
        """A server name never used in this workdir."""
        self.next_server += 1
        return f"w{self.index}s{self.next_server - 1}"

    def names(self) -> list[str]:
        """The servers a slot of this workdir may operate on (configured in its session or not)."""
        return [*self.entries, self.extra]

    def new_entry(self, name: str) -> dict[str, object]:
        """An entry for ``name``: its marker is the (workdir, server)'s, whatever else is drawn."""
        rng = self.rng
        return fault_server_entry(
            instructions=f"{MARKER_PREFIX}{self.index}-{name}",
            init_delay=rng.choice([None, None, 0.02, 0.1]),
            grandchild=rng.random() < 0.3,
            setsid_grandchild=rng.random() < 0.2,
        )

    def write(self, entries: dict[str, dict[str, object]]) -> None:
        """Replace ``.mcp.json`` at once (readers see the old file or the new one), without a checkpoint."""
        self.entries = entries
        path = self.workdir / ".mcp.json"
        temporary = path.with_name(".mcp.json.new")
        temporary.write_text(json.dumps({"mcpServers": entries}))
        os.replace(temporary, path)


def _retired_in(projects: list[Project]) -> Callable[[str], None]:
    """For the observer: a project server's connection was retired; the name is a new server from now on."""

    def retired(name: str) -> None:
        if match := PROJECT_SERVER.fullmatch(name):
            projects[int(match[1])].holds.end(name)

    return retired


@attrs.define(eq=False)
class Slot:
    """One session's life: its entries, commands issued per server, disconnects in force.

    A project-mode slot (``project`` set) keeps no entries of its own (they
    are the project's) and shares the project's :class:`Holds`.
    """

    index: int
    host: AnyHost
    ledger: Ledger
    rng: random.Random
    workdir: Path
    project: Project | None = None
    trust: TrustMode = "all"
    generation: int = 0
    session: AnySession | None = None
    entries: dict[str, dict[str, object]] = attrs.field(factory=dict[str, dict[str, object]])
    next_server: int = 0
    own: Holds = attrs.field(factory=Holds)
    with_extra: bool = False
    finished: bool = False

    @property
    def holds(self) -> Holds:
        """The disconnects in force that this slot's session must show: its own, or its project's."""
        return self.project.holds if self.project is not None else self.own

    def names(self) -> list[str]:
        return self.project.names() if self.project is not None else list(self.entries)

    def constructor(self) -> dict[str, dict[str, object]]:
        """A project-mode session's constructor entries: the optional server, or nothing."""
        assert self.project is not None
        return {self.project.extra: self.project.extra_entry} if self.with_extra else {}

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

    def check(self, session: AnySession, why: str) -> None:
        snapshot = session.snapshot()
        held = self.holds.held
        for status in snapshot.servers:
            if status.shared is not None:
                self.ledger.most_shared = max(self.ledger.most_shared, status.shared.sessions)
            if status.name in held and status.state is not ServerState.DISCONNECTED:
                self.ledger.violate("c", self._undone(session, status, why))

    def _undone(self, session: AnySession, status: ServerStatus, why: str) -> str:
        if self.project is None:
            return f"session {session.id} server {status.name} is {status.state.value} after a disconnect ({why})"
        return (
            f"project {self.project.index} server {status.name} is {status.state.value} in session {session.id} "
            f"after a disconnect ({why})"
        )


async def _watch(slot: Slot, session: AnySession) -> None:
    async for _ in session.watch():
        slot.check(session, "watcher")


async def _operate(slot: Slot, session: AnySession, deadline: float, sleep: Sleep = trio.sleep) -> None:
    """Random operations on ``session`` until it closes or ``deadline`` (``time.monotonic()``) passes."""
    ledger, rng = slot.ledger, slot.rng
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    while not session.closed and not slot.finished and time.monotonic() < deadline:
        kind = rng.choices(kinds, weights)[0]
        names = slot.names()
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
        await sleep(rng.uniform(0, 0.01))


async def _one(slot: Slot, session: AnySession, kind: str, name: str) -> None:
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
            slot.holds.end(name)
            await session.connect(name)
        case "disconnect":
            holds = slot.holds
            holds.end(name)
            epoch = holds.epochs[name]
            await session.disconnect(name)
            if holds.epochs[name] == epoch and not session.closed:
                holds.held.add(name)
                slot.check(session, "disconnect returned")
        case "crash":
            connected = session.server(name).state is ServerState.CONNECTED
            try:
                await session.call_tool(f"mcp__{name}__crash", {"code": 7})
            except ServerUnavailable:
                if connected:
                    slot.ledger.crashes += 1
                raise
        case "reconfigure" if slot.project is not None:
            await _reconfigure_project(slot, slot.project, session, name)
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
            slot.holds.end(*slot.entries, *entries)
            await session.reconfigure(entries)
            if len(entries) > len(slot.entries):
                slot.next_server += 1
            slot.entries = entries
        case "destroy":
            slot.finished = True
            if slot.project is None:
                slot.holds.end(*slot.entries)  # a project's disconnects outlive the session: it releases references
            await slot.host.destroy_session(session.id)
        case _:
            raise AssertionError(kind)


async def _reconfigure_project(slot: Slot, project: Project, session: AnySession, name: str) -> None:
    """Edit the workdir's ``.mcp.json`` and reconcile the project, or draw the session's optional server again.

    No hold ends here: a reload keeps a manual disconnect, and a retired
    connection ends its holds through the observer's ``Retire``.
    """
    rng = slot.rng
    change = rng.choice(["add", "remove", "change", "extra"])
    if change == "extra":
        slot.with_extra = rng.random() < EXTRA_SHARE  # drawn again (maybe unchanged), so the share stays
        slot.ledger.reconfigures["session.reconfigure(entries): optional server drawn again"] += 1
        await session.reconfigure(slot.constructor())
        return
    entries = dict(project.entries)
    if name not in entries:
        name = rng.choice(list(entries))
    if (change == "add" and len(entries) < 4) or len(entries) <= 1:
        # Half the time a removed name comes back: its new connection must wait for the old one's end.
        removed = [old for old in project.removed if old not in entries]
        new_name = rng.choice(removed) if removed and rng.random() < 0.5 else project.new_name()
        entries[new_name] = project.new_entry(new_name)
    elif change == "remove":
        del entries[name]
        if name not in project.removed:
            project.removed.append(name)
    else:
        entries[name] = project.new_entry(name)  # same marker: the same (workdir, server), reloaded
    project.write(entries)
    if rng.random() < 0.5:
        slot.ledger.reconfigures[".mcp.json edited, then session.reconfigure()"] += 1
        await session.reconfigure()
    else:
        slot.ledger.reconfigures[".mcp.json edited, then host.reconcile(workdir)"] += 1
        await slot.host.reconcile(project.workdir)


async def _create(slot: Slot, session_id: str) -> AnySession:
    slot.finished = False
    if slot.project is None:
        slot.entries, slot.next_server = {}, 0
        slot.own = Holds()
        for _ in range(slot.rng.choice([2, 2, 3])):
            slot.add_server(session_id)
        return await slot.host.create_session(slot.workdir, dict(slot.entries), session_id=session_id, trust=slot.trust)
    slot.with_extra = slot.rng.random() < EXTRA_SHARE
    return await slot.host.create_session(
        slot.project.workdir, slot.constructor(), session_id=session_id, ownership="project"
    )


async def _new_session(slot: Slot) -> AnySession:
    slot.generation += 1
    session = await _create(slot, f"{slot.index}x{slot.generation}")
    slot.ledger.sessions_created += 1
    slot.ledger.operations["create"] += 1
    slot.ledger.outcomes[("create", "ok")] += 1
    return session


async def _end_session(slot: Slot, session: AnySession) -> None:
    if slot.project is None:
        slot.holds.end(*slot.entries)
    await slot.host.destroy_session(session.id)


async def _run_slot(slot: Slot, workers: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        session = await _new_session(slot)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch, slot, session)
            async with trio.open_nursery() as operators:
                for _ in range(workers):
                    operators.start_soon(_operate, slot, session, deadline)
            await _end_session(slot, session)


async def _run_slot_in_asyncio(slot: Slot, workers: int, deadline: float) -> None:
    """:func:`_run_slot` for the asyncio driver: the same operations, as asyncio tasks."""
    while time.monotonic() < deadline:
        session = await _new_session(slot)
        watcher = asyncio.ensure_future(_watch(slot, session))
        await asyncio.gather(*(_operate(slot, session, deadline, asyncio.sleep) for _ in range(workers)))
        await _end_session(slot, session)
        await watcher  # it ends with the session


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
        if record.name == "wave_actors._roster.project":
            for needle, event in PROJECT_EVENTS:
                if needle in message:
                    self._ledger.project_events[event] += 1


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
    drained: Drained | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
            workdir = Path(directory)
            projects = _projects(arguments, workdir, rng)
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
                options = storm_options(
                    graces, _transition_checker(ledger, _retired_in(projects) if projects else None)
                )
                project = ProjectOptions(idle_timeout=arguments.idle_timeout)
                if arguments.driver == "asyncio":
                    storm = _storm_in_asyncio(arguments, ledger, rng, workdir, projects, options, project, progress)
                    storm_seconds, drained, sessions_left, pending = await trio.to_thread.run_sync(asyncio.run, storm)
                else:
                    async with Host.open(home=workdir / "home", options=options, project=project) as host:
                        deadline = time.monotonic() + arguments.duration
                        async with trio.open_nursery() as nursery:
                            for index in range(arguments.sessions):
                                slot = _slot(
                                    index,
                                    host,
                                    ledger,
                                    random.Random(rng.random()),
                                    workdir,
                                    projects,
                                    arguments.ownership,
                                )
                                nursery.start_soon(_run_slot, slot, arguments.workers, deadline)
                        storm_seconds = time.monotonic() - storm_started
                        drained = await _teardown(host, ledger, projects, arguments.idle_timeout, progress, trio.sleep)
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
    return _outcome(arguments, ledger, storm_seconds, len(left), left_kinds, tagged, sessions_left, pending, drained)


async def _storm_in_asyncio(
    arguments: argparse.Namespace,
    ledger: Ledger,
    rng: random.Random,
    workdir: Path,
    projects: list[Project],
    options: SessionOptions,
    project: ProjectOptions,
    progress: Progress,
) -> tuple[float, Drained | None, int, int]:
    """The storm through :mod:`wave_actors.asyncio`, on this thread's asyncio loop: seconds, drained, left, pending."""
    storm_started = time.monotonic()
    async with wave_asyncio.Host.open(home=workdir / "home", options=options, project=project) as host:
        deadline = time.monotonic() + arguments.duration
        slots = [
            _slot(index, host, ledger, random.Random(rng.random()), workdir, projects, arguments.ownership)
            for index in range(arguments.sessions)
        ]
        await asyncio.gather(*(_run_slot_in_asyncio(slot, arguments.workers, deadline) for slot in slots))
        storm_seconds = time.monotonic() - storm_started
        drained = await _teardown(host, ledger, projects, arguments.idle_timeout, progress, asyncio.sleep)
        return storm_seconds, drained, len(host.sessions()), len(host.pending_destroys())


async def _teardown(
    host: AnyHost, ledger: Ledger, projects: list[Project], idle_timeout: float, progress: Progress, sleep: Sleep
) -> Drained | None:
    """Once the storm is over: wait for the idle timers (project mode); the host is closed next."""
    drained = None
    if projects:
        ledger.storm_project_events = Counter(ledger.project_events)
        progress.update("teardown", "waiting for the idle timers to close the shared connections")
        drained = await _drain(host, projects, idle_timeout, sleep)
    progress.update("teardown", "closing the host")
    return drained


def _projects(arguments: argparse.Namespace, directory: Path, rng: random.Random) -> list[Project]:
    """The workdirs of project-mode (and mixed) storms, each with its ``.mcp.json``; none in session mode."""
    if arguments.ownership == "session":
        return []
    count = arguments.workdirs or max(1, arguments.sessions // 4)
    return [Project.make(index, directory / f"project-{index}", random.Random(rng.random())) for index in range(count)]


def _slot(
    index: int,
    host: AnyHost,
    ledger: Ledger,
    rng: random.Random,
    directory: Path,
    projects: list[Project],
    ownership: str,
) -> Slot:
    """Slot ``index``: in the one workdir (session mode), or in workdir ``index % workdirs``.

    With mixed ownership, every other round of slots over the workdirs owns its
    sessions' connections, so each workdir has slots of both kinds.
    """
    if not projects:
        return Slot(index, host, ledger, rng, directory)
    project = projects[index % len(projects)]
    if ownership == "mixed" and index // len(projects) % 2 == 1:
        return Slot(index, host, ledger, rng, project.workdir, trust="approved")
    return Slot(index, host, ledger, rng, project.workdir, project=project)


@attrs.frozen
class Drained:
    """How the shared connections ended once every session was gone."""

    workdirs: int
    left: int
    seconds: float


async def _drain(host: AnyHost, projects: list[Project], idle_timeout: float, sleep: Sleep) -> Drained:
    """Wait (bounded) until the idle timers closed every project's connections: no session is left to hold one."""
    started = time.monotonic()
    deadline = started + idle_timeout + IDLE_DRAIN_GRACE

    def left() -> int:
        return sum(len(host.project_servers(project.workdir)) for project in projects)

    while left() and time.monotonic() < deadline:
        await sleep(0.01)  # no event says "this project is empty": look again shortly
    return Drained(len(projects), left(), time.monotonic() - started)


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
    drained: Drained | None = None,
) -> Outcome:
    total = sum(ledger.operations.values())
    outcome = Outcome()
    scenario = "race_storm" if drained is None else f"race_storm ({arguments.ownership} ownership)"
    if arguments.driver != "trio":
        scenario += f", {arguments.driver} driver"
    sizes = f"{arguments.sessions} sessions x {arguments.workers} tasks"
    settings = f"seed {arguments.seed}, graces {arguments.graces or 'default'}"
    if drained is not None:
        sizes = f"{arguments.sessions} sessions in {drained.workdirs} workdirs x {arguments.workers} tasks"
        settings += f", idle timeout {arguments.idle_timeout:g} s"
    summary = Table(f"{scenario}: {sizes}, {storm_seconds:.1f} s ({settings})", ["metric", "value"])
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
    if drained is not None:
        summary.add("most sessions sharing one connection", ledger.most_shared)
        for _, event in PROJECT_EVENTS:
            summary.add(f"{event} during the storm", ledger.storm_project_events[event])
        for way, count in sorted(ledger.reconfigures.items()):
            summary.add(f"reconfigures: {way}", count)
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
    if drained is not None:
        summary.add("shared connections left after the idle timeout", drained.left)
        summary.add("seconds until the idle timers closed them", drained.seconds)
    if left:
        summary.notes.append(f"left: {left_kinds}; {tagged} carry {FAMILY_VARIABLE} (all killed)")
    outcome.tables.append(summary)

    by_operation = Table(f"{scenario}: outcomes by operation", ["operation", "count", "ok", "errors by type"])
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
        details = Table(f"{scenario}: first violations", ["invariant", "at s", "detail"])
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
    if drained is not None:
        outcome.headlines.append(
            at_most("shared connections left after the idle timeout", float(drained.left), 0, invariant=True)
        )
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
    if drained is not None:
        outcome.data.update(
            ownership=arguments.ownership,
            workdirs=drained.workdirs,
            most_sessions_sharing_one_connection=ledger.most_shared,
            project_events=dict(ledger.project_events),
            project_events_during_the_storm=dict(ledger.storm_project_events),
            reconfigures=dict(ledger.reconfigures),
            shared_left_after_idle_timeout=drained.left,
            idle_drain_seconds=drained.seconds,
        )
    if ledger.log_records:
        logs = Table(f"{scenario}: library log records (INFO and above)", ["level logger", "count", "example"])
        for key, count in ledger.log_records.most_common():
            logs.add(key, count, ledger.log_examples.get(key, [""])[0][:110])
        outcome.tables.append(logs)
    return outcome


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
