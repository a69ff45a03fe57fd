"""Project scopes: one connection per (workdir, server), shared by the project's sessions (R-SCOPE-1..5).

A session created with ``ownership="project"`` owns no connection. Its host
keeps one :class:`ProjectScope` per workdir, a task in the host's nursery
whose own nursery owns the project's :class:`~wave_actors._roster.group.ActorGroup`,
and with it every transport and process; a session attaches to the scope and
holds references (a :class:`~wave_actors._roster.shared.SharedRoster`), never
tasks. So ownership stays structural: the scope's nursery is what a process
lives in, and a destroyed host cancels it.

The rules, in the words of the configuration being the only source of truth:

- **References.** Each session attached to a server is one reference.
  Releasing the last one starts an idle timer (:attr:`ProjectOptions.idle_timeout`,
  default 5 min; ``0`` never closes); a new reference cancels it. When it
  fires, the connection is retired and the server forgotten: the next session
  dials it afresh, lazily (R-SCOPE-2).
- **One connection.** Never two for one (workdir, server): a server being
  closed (idle, or removed) is waited for before a session can attach to that
  name again, and a reload stops the old transport before the new one starts
  (R-SCOPE-5, R-RACE-6).
- **Reconcile** (:meth:`ProjectScope.reconcile`) is the single sync point
  after a configuration edit: every attached session's configuration is
  loaded again; a server no session configures any more is retired at once
  (accepted calls finish within their timeout, new ones are refused) and
  withdrawn from every session; a changed entry reloads in place, under the
  same name, so its tools keep their model-visible names; an added one
  becomes available, ``disconnected`` until a turn dials it (R-SCOPE-3).
- **Attach** takes the attaching session's configuration as the newest truth:
  a server whose entry no longer matches the files (a hand edit since the
  connection was made) is reloaded, and a dead one
  (:func:`~wave_actors._actor.machine.dead`: ``error``, or connected for
  :attr:`ProjectOptions.dead_after` seconds with no tool) is rebuilt.
  When sessions of one project are given different entries under one name,
  the most recent load wins, and every attached session follows it.
- **Manual disconnect is per project.** Disconnecting ends the server's one
  connection and reclaims its processes, for every session of the project,
  and no lazy dial of any session brings it back; an explicit connect (or
  reconnect) from any session does, for all. A user who switches a server
  off means the process, not one conversation's view of it.

Status snapshots of every attached session change together: every change of
a shared actor, and every attach and release (the reference count is part of
each status, :class:`~wave_actors.SharedUse`), is told to each session using it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable
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
from wave_actors._parameters import Plugins
from wave_actors._reconfigure import ReconfigureResult, plan_reconfigure
from wave_actors._roster.group import ActorGroup
from wave_actors._status import ServerStatus, SharedUse

__all__ = ["Attached", "ProjectScope"]

logger = logging.getLogger(__name__)


class Attached(Protocol):
    """What a scope needs of a session attached to it: its view of the project's servers."""

    @property
    def closed(self) -> bool:
        """The session let go of the project."""
        ...

    @property
    def names(self) -> Collection[str]:
        """The servers the session uses now."""
        ...

    def take(self, name: str, actor: ServerActor) -> None:
        """The session uses ``name`` from now on."""
        ...

    def drop(self, name: str) -> None:
        """The session no longer uses ``name``."""
        ...

    def changed(self) -> None:
        """Something the session sees changed."""
        ...

    async def load(self, plugins: Plugins | None) -> LoadedConfig:
        """Load the session's configuration again, with new plugin sources if given."""
        ...


@final
class ProjectScope:
    """The shared connections of one workdir: one actor per server, owned by the scope's nursery (R-SCOPE-1).

    Made by :class:`~wave_actors._roster.projects.ProjectScopes`; not part of the public API.

    :param workdir: the resolved workdir (the scope's key).
    :param nursery: the scope's nursery: every shared actor's task, transport and process lives in it.
    :param options: how the shared servers are dialed and kept up (the host's session options).
    :param project: idle timeout, ready budget, dead threshold.
    :param tool_cache: the workdir's tool snapshots, read when the scope was made.
    :param cache_file: where the tool snapshot cache is written (R-CACHE-1).
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
    ) -> None:
        self.workdir = workdir
        self.project = project
        self._nursery = nursery
        self.group = ActorGroup(
            workdir,
            nursery=nursery,
            options=options,
            tool_cache=tool_cache,
            cache_file=cache_file,
            on_change=self._changed,
        )
        self._users: dict[str, dict[Attached, None]] = {}  # name -> attached sessions, in attach order
        self._attached: dict[Attached, None] = {}
        self._idle: dict[str, tuple[trio.CancelScope, float]] = {}  # name -> (timer, deadline)
        self._reconciling = trio.Lock()
        self._empty = trio.Event()
        self.closing = False

    # What sessions see.

    def sharing(self, name: str) -> SharedUse:
        """How the connection to ``name`` is shared now."""
        idle = self._idle.get(name)
        return SharedUse(len(self._users.get(name, ())), idle[1] if idle is not None else None)

    def servers(self) -> list[ServerStatus]:
        """Every server the project holds a connection (or a registration) for, sorted by name.

        Unlike a session's view, this includes servers no session uses any
        more, while their idle timer runs (:attr:`SharedUse.idle_deadline`).
        """
        actors = list(self.group.actors.values())
        shared = {actor.name: self.sharing(actor.name) for actor in actors}
        snapshot = build_snapshot(
            0, ((actor.config, actor.state) for actor in actors), cache=self.group.tool_cache.cache, shared=shared
        )
        return list(snapshot.servers)

    def _changed(self, names: Collection[str]) -> None:
        """The group changed: tell every session using one of ``names``; a name withdrawn from the group leaves them."""
        told: dict[Attached, None] = {}
        for name in names:
            users = self._users.get(name, {})
            told.update(users)
            if name not in self.group.actors and name in self._users:
                del self._users[name]
                self._cancel_idle_timer(name)
                for session in users:
                    session.drop(name)
        for session in told:
            session.changed()

    # Attaching and releasing.

    def reserve(self, session: Attached) -> None:
        """Count a session that is about to attach: the scope does not end while it is being made."""
        self._attached[session] = None

    async def attach(self, session: Attached, loaded: LoadedConfig) -> None:
        """Attach a new session to the servers of its configuration (R-SCOPE-1).

        A server still being closed (idle, or removed) is waited for first, so
        there is never a second connection to it (R-SCOPE-5); the attach
        itself runs without a checkpoint, so a session that closes meanwhile
        is never attached.
        """
        await self.group.wait_retired(loaded.servers)
        if session.closed:
            return
        mine = {name: config for name, config in self.group.configs().items() if name in loaded.servers}
        plan = plan_reconfigure(mine, loaded.servers)
        for name in plan.changed:
            logger.info("project %s: server %r changed on disk; reloading it in place", self.workdir, name)
        self.group.apply_soon(plan, loaded.servers)
        now = time.time()
        for name in plan.kept:
            actor = self.group.actors[name]
            if dead(actor.state, now=now, dead_after=self.project.dead_after):
                logger.info("project %s: server %r is dead (%s); rebuilding it", self.workdir, name, actor.state.error)
                actor.post(Reconnect())
        for name in loaded.servers:
            self._add_user(session, name)
        self._tell(loaded.servers)

    def _add_user(self, session: Attached, name: str) -> None:
        session.take(name, self.group.actors[name])
        self._users.setdefault(name, {})[session] = None
        self._cancel_idle_timer(name)

    def _remove_user(self, session: Attached, name: str, *, from_session: bool = True) -> None:
        if from_session:
            session.drop(name)
        users = self._users.get(name)
        if users is None:
            return
        users.pop(session, None)
        if not users and name not in self._idle:
            self._start_idle_timer(name)

    def detach(self, session: Attached) -> None:
        """Release every reference of a closing session; the last reference to a server starts its idle timer."""
        self._attached.pop(session, None)
        names = list(session.names)
        for name in names:
            # The closed session keeps listing its servers (as disconnected), like a session-mode one.
            self._remove_user(session, name, from_session=False)
        self._tell(names)
        self._check_empty()

    def _tell(self, names: Iterable[str]) -> None:
        """Tell every session that uses one of ``names`` that its view changed (reference counts included)."""
        told: dict[Attached, None] = {}
        for name in names:
            told.update(self._users.get(name, {}))
        for session in told:
            session.changed()

    # The idle timer.

    def _start_idle_timer(self, name: str) -> None:
        timeout = self.project.idle_timeout
        if timeout == 0:
            return  # never close: the connection waits for the next session, or the host's end
        timer = trio.CancelScope()
        deadline = trio.current_time() + timeout
        self._idle[name] = (timer, deadline)
        self._nursery.start_soon(self._close_when_idle, name, timer, deadline, name=f"wave_actors.idle:{name}")

    def _cancel_idle_timer(self, name: str) -> None:
        timer = self._idle.pop(name, None)
        if timer is not None:
            timer[0].cancel()

    async def _close_when_idle(self, name: str, timer: trio.CancelScope, deadline: float) -> None:
        with timer:
            await trio.sleep_until(deadline)
        if timer.cancelled_caught or self._users.get(name) or self._idle.get(name, (None,))[0] is not timer:
            return
        del self._idle[name]
        logger.info("project %s: server %r unused for %g s; closing it", self.workdir, name, self.project.idle_timeout)
        try:
            await self.group.retire(name)
        finally:
            self._check_empty()

    # Reconciling.

    async def reconcile(self, plugins: Plugins | None = None) -> dict[Attached, ReconfigureResult]:
        """Load every attached session's configuration again and apply it to the project (R-SCOPE-3).

        One reconcile at a time per project. Returns, per session, what changed for it.

        :param plugins: new plugin sources for every attached session; ``None`` keeps each session's own.
        """
        async with self._reconciling:
            sessions = [session for session in self._attached if not session.closed]
            loads: dict[Attached, LoadedConfig] = {}

            async def load(session: Attached) -> None:
                loads[session] = await session.load(plugins)

            async with trio.open_nursery() as nursery:
                for session in sessions:
                    nursery.start_soon(load, session)
            sessions = [session for session in sessions if not session.closed]
            wanted: dict[str, ServerConfig] = {}
            for session in sessions:
                wanted.update(loads[session].servers)  # the most recent load wins a name the sessions disagree on
            before = {session: set(session.names) for session in sessions}
            plan = plan_reconfigure(self.group.configs(), wanted)
            try:
                await self.group.apply(plan, wanted)
            finally:
                self._check_empty()
            # Membership: what each session configures now.
            for session in sessions:
                if session.closed:
                    continue
                configured = loads[session].servers
                for name in [name for name in session.names if name not in configured]:
                    self._remove_user(session, name)
                for name in configured:
                    if name not in session.names:
                        self._add_user(session, name)
            self._tell(wanted)
            for session in sessions:
                session.changed()
            self._check_empty()
            changed = set(plan.changed)
            return {
                session: ReconfigureResult(
                    added=tuple(name for name in loads[session].servers if name not in before[session]),
                    removed=tuple(sorted(before[session] - set(loads[session].servers))),
                    changed=tuple(
                        name for name in loads[session].servers if name in changed and name in before[session]
                    ),
                    diagnostics=loads[session].diagnostics,
                )
                for session in sessions
            }

    # The scope's own end.

    def _check_empty(self) -> None:
        if not self._attached and not self.group.actors and not self.group.retiring:
            self._empty.set()

    def close(self) -> None:
        """Cancel every shared connection (the host closes): each is reclaimed as the scope's nursery exits."""
        self.closing = True
        for timer, _ in self._idle.values():
            timer.cancel()
        self._nursery.cancel_scope.cancel()

    async def wait_empty(self) -> None:
        """Return once no session is attached and no connection is left (every idle timer fired)."""
        await self._empty.wait()
