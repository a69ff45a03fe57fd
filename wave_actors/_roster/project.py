"""Project scopes: one connection per loaded entry of a workdir, shared by the project's sessions (R-SCOPE-1..5).

A session created with ``ownership="project"`` owns no connection. Its host
keeps one :class:`ProjectScope` per workdir, a task in the host's nursery
whose own nursery owns the project's :class:`~wave_actors._roster.group.ActorGroup`,
and with it every transport and process; a session attaches to the scope and
holds references (a :class:`~wave_actors._roster.shared.SharedRoster`), never
tasks. So ownership stays structural: the scope's nursery is what a process
lives in, and a destroyed host cancels it.

The rules, in the words of the configuration being the only source of truth:

- **What is shared.** A connection (a :class:`~wave_actors._roster.slots.Slot`) is shared by the
  sessions that loaded *the same entry* under its name: equal in every field,
  fingerprint (R-CFG-8) and settings alike, from the same file. A session
  sees its own name -> connection mapping. Two sessions given different
  entries for one name (another user's token in a constructor entry, a
  ``trust="all"`` session next to a ``trust="approved"`` one that did not
  approve the project's entry) get two connections, never one replaced by
  the other: a session never calls a server it did not load (R-CFG-10).
- **References.** Each session attached to a connection is one reference.
  Releasing the last one starts an idle timer (:attr:`ProjectOptions.idle_timeout`,
  default 5 min; ``0`` never closes); a new reference cancels it. When it
  fires, the connection is retired and forgotten: the next session dials it
  afresh, lazily (R-SCOPE-2).
- **One connection.** Never two for one loaded entry, and never a new one
  for a name while another of the name is being closed (idle, or removed):
  an attach waits for it first, and a reload stops the old transport before
  the new one starts (R-SCOPE-5, R-RACE-6).
- **Reconcile** (:meth:`ProjectScope.reconcile`) is the single sync point
  after a configuration edit: every attached session's configuration is
  loaded again, over one reading of the files
  (:func:`~wave_actors._parameters.load_together`), and each session is given
  the connection of the entry it loaded. A connection whose sessions now load
  another entry of its name reloads in place, under the same name, so its
  tools keep their model-visible names; one that no session loads any more
  is retired at once (accepted calls finish within their timeout, new ones
  are refused) and withdrawn from every session; a new entry becomes
  available, ``disconnected`` until a turn dials it (R-SCOPE-3). A connection
  is reloaded for an entry only when a session that used it loads that entry
  now: it is never re-dialed with a command none of its sessions chose.
- **Attach** takes the attaching session's configuration as it was just
  loaded. When it names a server for which the project holds a connection
  of another entry only (a hand edit since the connection was made, or
  sessions that differ), the whole project is reconciled, so that every
  session follows the files as they are now; otherwise the session attaches
  without a checkpoint, and a dead connection
  (:func:`~wave_actors._actor.machine.dead`: ``error``, or connected for
  :attr:`ProjectOptions.dead_after` seconds with no tool) is rebuilt.
- **Manual disconnect is per connection.** Disconnecting ends the
  connection and reclaims its processes, for every session using it, and no
  lazy dial of any session brings it back; an explicit connect (or
  reconnect) from any of those sessions does, for all. A user who switches a
  server off means the process, not one conversation's view of it.

Status snapshots of every attached session change together: every change of
a shared actor, and every attach and release (the reference count is part of
each status, :class:`~wave_actors.SharedUse`), is seen by each session using it.
It is seen, not told: a change stamps the connection with a new version of the
host's sequence, and a session's version is the newest of its own and its
connections' stamps (:meth:`SharedRoster.current_version
<wave_actors._roster.shared.SharedRoster.current_version>`), so an attach or a
release costs the same with ten sessions on a connection as with a thousand.
Only a session with someone waiting on its version (a ``watch``, a
``wait_for``, a turn waiting for its servers: :meth:`ProjectScope.listen`) is
woken, at once, by each change of a connection it uses.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Collection, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, final

import trio

from wave_actors._actor.actor import ServerActor
from wave_actors._actor.machine import dead
from wave_actors._actor.messages import Reconnect
from wave_actors._cache import ToolCache
from wave_actors._catalog import build_snapshot
from wave_actors._config import LoadedConfig, ServerConfig
from wave_actors._options import ProjectOptions, SessionOptions
from wave_actors._parameters import Plugins, SessionSources, load_together
from wave_actors._reconfigure import ReconfigureResult
from wave_actors._roster.group import ActorGroup
from wave_actors._roster.slots import Decision, Slot, decide, loaded_entry
from wave_actors._status import ServerStatus, SharedUse

__all__ = ["Attached", "ProjectScope"]

logger = logging.getLogger(__name__)


class Attached(Protocol):
    """What a scope needs of a session attached to it: its view of the project's connections."""

    @property
    def closed(self) -> bool:
        """The session let go of the project."""
        ...

    @property
    def sources(self) -> SessionSources:
        """Where the session's configuration comes from."""
        ...

    @property
    def slots(self) -> Mapping[str, Slot]:
        """The connection the session uses under each of its servers' names, now."""
        ...

    def take(self, name: str, slot: Slot, actor: ServerActor) -> None:
        """The session uses the connection ``slot`` under ``name`` from now on."""
        ...

    def drop(self, name: str) -> None:
        """The session no longer uses ``name``."""
        ...

    def changed(self) -> None:
        """Something the session sees changed."""
        ...


@final
class ProjectScope:
    """The shared connections of one workdir, owned by the scope's nursery (R-SCOPE-1).

    Made by :class:`~wave_actors._roster.projects.ProjectScopes`; not part of the public API.

    :param workdir: the resolved workdir (the scope's key).
    :param nursery: the scope's nursery: every shared actor's task, transport and process lives in it.
    :param options: how the shared servers are dialed and kept up (the host's session options).
    :param project: idle timeout, ready budget, dead threshold.
    :param tool_cache: the workdir's tool snapshots, read when the scope was made.
    :param cache_file: where the tool snapshot cache is written (R-CACHE-1).
    :param versions: the host's one sequence of snapshot versions, for the connections' stamps (R-HOST-2).
    """

    def __init__(
        self,
        workdir: str,
        *,
        nursery: trio.Nursery,
        options: SessionOptions,
        project: ProjectOptions,
        tool_cache: ToolCache,
        cache_file: Path,
        versions: Iterator[int],
    ) -> None:
        self.workdir = workdir
        self.project = project
        self._nursery = nursery
        self._versions = versions
        self._stamps: dict[Slot, int] = {}  # connection -> the version of its last change
        self._listening: dict[Attached, int] = {}  # session -> how many of its callers wait on its version
        self.group: ActorGroup[Slot] = ActorGroup(
            workdir,
            nursery=nursery,
            options=options,
            tool_cache=tool_cache,
            cache_file=cache_file,
            on_change=self._changed,
        )
        self._serials = itertools.count(1)
        self._users: dict[Slot, dict[Attached, None]] = {}  # connection -> attached sessions, in attach order
        self._attached: dict[Attached, None] = {}
        self._idle: dict[Slot, tuple[trio.CancelScope, float]] = {}  # connection -> (timer, deadline)
        self._reconciling = trio.Lock()  # one reconcile at a time, its loads included
        self._deciding = trio.Lock()  # who uses which connection: one attach or reconcile decides at a time
        self._empty = trio.Event()
        self.closing = False

    # What sessions see.

    def sharing(self, slot: Slot) -> SharedUse:
        """How the connection ``slot`` is shared now."""
        idle = self._idle.get(slot)
        return SharedUse(len(self._users.get(slot, ())), idle[1] if idle is not None else None)

    def servers(self) -> list[ServerStatus]:
        """Every connection the project holds (or a registration), sorted by name, then by age.

        Unlike a session's view, this includes connections no session uses any
        more, while their idle timer runs (:attr:`SharedUse.idle_deadline`),
        and every connection of a name that sessions loaded different entries for.
        """
        statuses: list[ServerStatus] = []
        for slot, actor in sorted(self.group.actors.items(), key=lambda item: (item[0].name, item[0].serial)):
            snapshot = build_snapshot(
                0,
                [(actor.config, actor.state)],
                cache=self.group.tool_cache.cache,
                shared={slot.name: self.sharing(slot)},
            )
            statuses.extend(snapshot.servers)
        return statuses

    def stamp(self, slots: Iterable[Slot]) -> int:
        """The version of the latest change of any of ``slots`` (0 for none)."""
        stamps = self._stamps
        return max((stamps.get(slot, 0) for slot in slots), default=0)

    @contextmanager
    def listen(self, session: Attached) -> Generator[None]:
        """While entered, every change of a connection ``session`` uses is told to it at once (:meth:`Attached.changed`)."""
        self._listening[session] = self._listening.get(session, 0) + 1
        try:
            yield
        finally:
            count = self._listening.get(session, 0) - 1
            if count > 0:
                self._listening[session] = count
            else:
                self._listening.pop(session, None)

    def _changed(self, slots: Collection[Slot]) -> None:
        """The group changed: the sessions using ``slots`` see it; a connection withdrawn leaves them."""
        for slot in slots:
            if slot in self.group.actors:
                continue
            self._stamps.pop(slot, None)  # withdrawn: no session reads its stamp any more
            if slot in self._users:
                users = self._users.pop(slot)
                self._cancel_idle_timer(slot)
                for session in users:
                    if session.slots.get(slot.name) == slot:
                        session.drop(slot.name)
                        session.changed()  # what it holds changed: its own version moves on
        self._tell(slots)

    def _slot_of(self, name: str, config: ServerConfig) -> Slot | None:
        """The connection made for exactly ``config`` under ``name``, if the project has one."""
        entry = loaded_entry(config)
        for slot, actor in self.group.actors.items():
            if slot.name == name and loaded_entry(actor.config) == entry:
                return slot
        return None

    # Attaching and releasing.

    def reserve(self, session: Attached) -> None:
        """Count a session that is about to attach: the scope does not end while it is being made."""
        self._attached[session] = None

    async def attach(self, session: Attached, loaded: LoadedConfig) -> None:
        """Attach a new session to the connections of the entries it loaded (R-SCOPE-1).

        A connection of one of its names still being closed (idle, or
        removed) is waited for first, so there is never a second connection
        to it (R-SCOPE-5). When the project holds a connection under one of
        its names for another entry only, the whole project is reconciled
        instead (the files may have changed since the others loaded them).
        Otherwise the attach itself runs without a checkpoint, so a session
        that closes meanwhile is never attached.
        """
        names = set(loaded.servers)
        while True:
            await self.group.wait_retired(names)
            async with self._deciding:
                if session.closed:
                    return
                if self.group.retiring_names() & names:
                    continue  # another connection of a name began to close meanwhile: wait for it too
                conflicts = [
                    name
                    for name, config in loaded.servers.items()
                    if self._slot_of(name, config) is None and any(slot.name == name for slot in self.group.actors)
                ]
                if not conflicts:
                    self._attach_now(session, loaded.servers)
                    return
            break
        logger.info(
            "project %s: %s served for another entry than the attaching session loaded; reconciling",
            self.workdir,
            ", ".join(repr(name) for name in sorted(conflicts)),
        )
        await self.reconcile()

    def _attach_now(self, session: Attached, servers: Mapping[str, ServerConfig]) -> None:
        now = time.time()
        for name, config in servers.items():
            slot = self._slot_of(name, config)
            if slot is None:
                slot = Slot(name, next(self._serials))
                self.group.register((slot,), {slot: config})
            else:
                actor = self.group.actors[slot]
                if dead(actor.state, now=now, dead_after=self.project.dead_after):
                    logger.info(
                        "project %s: server %r is dead (%s); rebuilding it", self.workdir, name, actor.state.error
                    )
                    actor.post(Reconnect())
            self._add_user(session, name, slot)
        session.changed()
        self._tell(session.slots.values())

    def _add_user(self, session: Attached, name: str, slot: Slot) -> None:
        session.take(name, slot, self.group.actors[slot])
        self._users.setdefault(slot, {})[session] = None
        self._cancel_idle_timer(slot)

    def _remove_user(self, session: Attached, slot: Slot, *, idle: bool = True) -> None:
        """``session`` no longer holds ``slot``; its last user leaving starts the idle timer (with ``idle``)."""
        users = self._users.get(slot)
        if users is None:
            return
        users.pop(session, None)
        if idle and not users and slot not in self._idle:
            self._start_idle_timer(slot)

    def detach(self, session: Attached) -> None:
        """Release every reference of a closing session; the last reference to a connection starts its idle timer."""
        self._attached.pop(session, None)
        self._listening.pop(session, None)
        slots = list(session.slots.values())
        for slot in slots:
            # The closed session keeps listing its servers (as disconnected), like a session-mode one.
            self._remove_user(session, slot)
        self._tell(slots)
        self._check_empty()

    def _tell(self, slots: Iterable[Slot]) -> None:
        """``slots`` changed (reference counts included): stamp them, and wake the sessions listening to one.

        The cost is that of the listeners, never of every session using a
        connection: the others see the stamp when they next read their version.
        """
        slots = [slot for slot in slots if slot in self.group.actors]
        if not slots:
            return
        stamp = next(self._versions)
        for slot in slots:
            self._stamps[slot] = stamp
        listening = self._listening
        if not listening:
            return
        told: dict[Attached, None] = {}
        for slot in slots:
            users = self._users.get(slot, {})
            if len(users) <= len(listening):
                told.update((session, None) for session in users if session in listening)
            else:
                told.update((session, None) for session in listening if session in users)
        for session in told:
            session.changed()

    # The idle timer.

    def _start_idle_timer(self, slot: Slot) -> None:
        timeout = self.project.idle_timeout
        if timeout == 0:
            return  # never close: the connection waits for the next session, or the host's end
        timer = trio.CancelScope()
        deadline = trio.current_time() + timeout
        self._idle[slot] = (timer, deadline)
        self._nursery.start_soon(self._close_when_idle, slot, timer, deadline, name=f"wave_actors.idle:{slot.name}")

    def _start_idle_timers_of_unused(self) -> None:
        for slot in self.group.actors:
            if not self._users.get(slot) and slot not in self._idle:
                self._start_idle_timer(slot)

    def _cancel_idle_timer(self, slot: Slot) -> None:
        timer = self._idle.pop(slot, None)
        if timer is not None:
            timer[0].cancel()

    async def _close_when_idle(self, slot: Slot, timer: trio.CancelScope, deadline: float) -> None:
        with timer:
            await trio.sleep_until(deadline)
        if timer.cancelled_caught or self._users.get(slot) or self._idle.get(slot, (None,))[0] is not timer:
            return
        del self._idle[slot]
        logger.info(
            "project %s: server %r unused for %g s; closing it", self.workdir, slot.name, self.project.idle_timeout
        )
        try:
            await self.group.retire(slot)
        finally:
            self._check_empty()

    # Reconciling.

    async def reconcile(self, plugins: Plugins | None = None) -> dict[Attached, ReconfigureResult]:
        """Load every attached session's configuration again and give each the connections of what it loaded (R-SCOPE-3).

        One reconcile at a time per project; no session attaches while it
        loads and decides (an attach would decide on an older reading of the
        files). Returns, per session, what changed for it, once every reload
        and retirement it started is done.

        :param plugins: new plugin sources for every attached session; ``None`` keeps each session's own.
        """
        async with self._reconciling:
            async with self._deciding:  # no attach between the loads and the decision: it would decide on older files
                sessions = [session for session in self._attached if not session.closed]
                loaded = await load_together([session.sources for session in sessions], plugins)
                loads = dict(zip(sessions, loaded, strict=True))
                before = {session: dict(session.slots) for session in loads}
                decision = self._decide({session: load.servers for session, load in loads.items()})
                try:
                    done = self._carry_out(decision)
                    added = {decision.wanted[slot].name for slot in decision.plan.added}
                    await self.group.wait_retired(added)  # never two connections of a name at once (R-SCOPE-5)
                    self.group.register(decision.plan.added, decision.wanted)
                    self._assign(decision, added=True)
                finally:
                    self._start_idle_timers_of_unused()  # what no session holds now closes when idle, as ever
                    self._check_empty()
            for event in done:
                await event.wait()
            changed = set(decision.plan.changed)
            results: dict[Attached, ReconfigureResult] = {}
            for session, load in loads.items():
                if session.closed:
                    continue
                old, new = before[session], decision.targets.get(session, {})
                results[session] = ReconfigureResult(
                    added=tuple(name for name in load.servers if name not in old),
                    removed=tuple(sorted(old.keys() - load.servers.keys())),
                    changed=tuple(
                        name
                        for name in load.servers
                        if name in old and (old[name] != new[name] or new[name] in changed)
                    ),
                    diagnostics=load.diagnostics,
                )
            return results

    def _decide(self, loads: Mapping[Attached, Mapping[str, ServerConfig]]) -> Decision[Attached]:
        """Which connection each session uses after the reconcile, and what becomes of each connection.

        Synchronous. A session reserved but not attached yet keeps what it
        holds (nothing, until it attaches); see :func:`~wave_actors._roster.slots.decide`.
        """
        wants: dict[Attached, Mapping[str, ServerConfig]] = {
            session: servers for session, servers in loads.items() if not session.closed
        }
        for session in self._attached:
            if session not in wants and not session.closed:
                wants[session] = {
                    name: self.group.actors[slot].config
                    for name, slot in session.slots.items()
                    if slot in self.group.actors
                }
        decision = decide(wants, self.group.configs(), self._users, self._serials)
        for slot in decision.plan.changed:
            logger.info("project %s: server %r loads another entry now; reloading it in place", self.workdir, slot.name)
        return decision

    def _carry_out(self, decision: Decision[Attached]) -> list[trio.Event]:
        """Move the sessions off what they no longer use, then start the plan; all without a checkpoint.

        A session leaves a connection *before* it reloads for another entry,
        so it never sees, let alone calls, an entry it did not load.
        """
        for session, targets in decision.targets.items():
            for name, slot in list(session.slots.items()):
                if targets.get(name) != slot:
                    self._remove_user(session, slot, idle=False)
                    session.drop(name)
        done = self.group.start(decision.plan, decision.wanted)
        self._assign(decision, added=False)
        return done

    def _assign(self, decision: Decision[Attached], *, added: bool) -> None:
        """Give each session its connections: those that exist now, or (``added``) the new ones; tell them."""
        fresh = set(decision.plan.added)
        told: set[Slot] = set()
        for session, targets in decision.targets.items():
            if session.closed:
                continue
            for name, slot in targets.items():
                if (slot in fresh) == added and session.slots.get(name) != slot and slot in self.group.actors:
                    self._add_user(session, name, slot)
                    told.add(slot)
            session.changed()
        self._tell(told)

    # The scope's own end.

    def _is_empty(self) -> bool:
        return not self._attached and not self.group.actors and not self.group.retiring

    def _check_empty(self) -> None:
        if self._is_empty():
            self._empty.set()

    def close(self) -> None:
        """Cancel every shared connection (the host closes): each is reclaimed as the scope's nursery exits."""
        self.closing = True
        for timer, _ in self._idle.values():
            timer.cancel()
        self._nursery.cancel_scope.cancel()

    async def wait_empty(self) -> None:
        """Return once no session is attached and no connection is left (every idle timer fired)."""
        while True:
            await self._empty.wait()
            # A session may have reserved the scope between the set and this task's turn: then it is not empty.
            if self._is_empty():
                return
            self._empty = trio.Event()
