"""Project scopes: one connection per (workdir, server), shared by the project's sessions (R-SCOPE-1..5).

A session created with ``ownership="project"`` owns no connection. Its host
keeps one :class:`ProjectScope` per workdir, a task in the host's nursery
whose own nursery owns one actor per configured server, and with it every
transport and process; a session attaches to the scope and holds references
(a :class:`ProjectView`), never tasks. So ownership stays structural: the
scope's nursery is what a process lives in, and a destroyed host cancels it.

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
  connection was made) is reloaded, and a dead one (``error``, or connected
  for :attr:`ProjectOptions.dead_after` seconds with no tool) is rebuilt.
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
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, final

import trio

from wave_actors._actor.actor import ServerActor
from wave_actors._actor.machine import Reconnect
from wave_actors._cache import SessionToolCache, ToolCache
from wave_actors._catalog import build_snapshot
from wave_actors._config import LoadedConfig, ServerConfig
from wave_actors._options import ProjectOptions, SessionOptions
from wave_actors._reconfigure import ReconfigureResult, plan_reconfigure
from wave_actors._status import ServerState, ServerStatus, SharedUse

if TYPE_CHECKING:
    from wave_actors._parameters import ServerEntries

__all__ = ["Plugins", "ProjectScope", "ProjectView"]

logger = logging.getLogger(__name__)

Plugins = tuple[tuple[str, "ServerEntries"], ...]


@final
class ProjectView:
    """One session's window on its project's shared connections.

    The scope fills :attr:`actors` (the servers the session's configuration
    names) and calls ``on_change`` whenever what the session would see
    changed. The session reads, and calls commands on, those actors; it never
    starts a task for them.

    The session binds (:meth:`bind`) ``on_change``, called with every change
    it would see, and ``load``, which loads its configuration again (with new
    plugin sources if given, kept for later loads).

    :param scope: the project.
    """

    __slots__ = ("_waits", "actors", "closed", "load", "on_change", "scope")

    def __init__(self, scope: ProjectScope) -> None:
        self.scope = scope
        self.on_change: Callable[[], None] = _nothing
        self.load: Callable[[Plugins | None], Awaitable[LoadedConfig]] = _no_load
        self.actors: dict[str, ServerActor] = {}
        self.closed = False
        self._waits: set[trio.CancelScope] = set()

    def bind(self, *, on_change: Callable[[], None], load: Callable[[Plugins | None], Awaitable[LoadedConfig]]) -> None:
        """Called by the session it belongs to, as it is made."""
        self.on_change = on_change
        self.load = load

    @property
    def ready_budget(self) -> float:
        """Seconds a turn waits for the project's connections still connecting (R-SCOPE-4)."""
        return self.scope.project.ready_budget

    @contextmanager
    def until_detached(self) -> Generator[None]:
        """Stop waiting (without an error) once the session lets go of the project.

        A session's callers wait on shared actors, which the session cannot
        cancel; so each wait is bounded by the session's life this way.
        """
        scope = trio.CancelScope()
        if self.closed:
            scope.cancel()
        self._waits.add(scope)
        try:
            with scope:
                yield
        finally:
            self._waits.discard(scope)

    def detach(self) -> None:
        """The session closes: release every reference and every waiting caller."""
        if self.closed:
            return
        self.closed = True
        for wait in self._waits:
            wait.cancel()
        self.scope.detach(self)

    def sharing(self) -> Mapping[str, SharedUse]:
        """How each of the session's servers is shared, now."""
        return {name: self.scope.sharing(name) for name in self.actors}


@final
class ProjectScope:
    """The shared connections of one workdir: one actor per server, owned by the scope's nursery (R-SCOPE-1).

    Made by :class:`ProjectScopes`; not part of the public API.

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
        self._options = options
        self._actors: dict[str, ServerActor] = {}
        self._users: dict[str, dict[ProjectView, None]] = {}  # name -> attached views, in attach order
        self._views: dict[ProjectView, None] = {}
        self._idle: dict[str, tuple[trio.CancelScope, float]] = {}  # name -> (timer, deadline)
        self._retiring: dict[str, trio.Event] = {}  # name -> set once its old connection is gone
        self._reconciling = trio.Lock()
        self._empty = trio.Event()
        self.closing = False
        # One writer for the project: the snapshots are the same whichever session saw them (R-CACHE-1).
        self.tool_cache = SessionToolCache(
            cache_file,
            workdir,
            tool_cache,
            nursery=nursery,
            configured=lambda: [(actor.config.name, actor.config.fingerprint) for actor in self._actors.values()],
        )

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
        actors = list(self._actors.values())
        shared = {actor.name: self.sharing(actor.name) for actor in actors}
        snapshot = build_snapshot(
            0, ((actor.config, actor.state) for actor in actors), cache=self.tool_cache.cache, shared=shared
        )
        return list(snapshot.servers)

    def _changed(self, name: str) -> None:
        for view in tuple(self._users.get(name, ())):
            view.on_change()

    # Attaching and releasing.

    def reserve(self, view: ProjectView) -> None:
        """Count a session that is about to attach: the scope does not end while it is being made."""
        self._views[view] = None

    async def attach(self, view: ProjectView, loaded: LoadedConfig) -> None:
        """Attach a new session to the servers of its configuration (R-SCOPE-1).

        A server still being closed (idle, or removed) is waited for first, so
        there is never a second connection to it (R-SCOPE-5); the attach
        itself runs without a checkpoint, so a session that closes meanwhile
        is never attached.
        """
        await self._wait_retired(loaded.servers)
        if view.closed:
            return
        touched: list[str] = []
        for name, config in loaded.servers.items():
            actor = self._actors.get(name)
            if actor is None:
                actor = self._new_actor(config)
            else:
                self._refresh(actor, config)
            self._add_user(view, name, actor)
            touched.append(name)
        self._tell(touched)

    def _refresh(self, actor: ServerActor, config: ServerConfig) -> None:
        """An attach's look at a shared server: a stale entry reloads, a dead connection is rebuilt."""
        old = actor.config
        if old.fingerprint != config.fingerprint or old.enabled != config.enabled:
            logger.info("project %s: server %r changed on disk; reloading it in place", self.workdir, actor.name)
            actor.reload_soon(config)
        elif self._dead(actor):
            logger.info(
                "project %s: server %r is dead (%s); rebuilding it", self.workdir, actor.name, actor.state.error
            )
            actor.update_settings(config)
            actor.post(Reconnect())
        elif old != config:
            actor.update_settings(config)

    def _dead(self, actor: ServerActor) -> bool:
        state = actor.state
        if state.state is ServerState.ERROR:
            return True
        return (
            state.state is ServerState.CONNECTED
            and not state.tools
            and state.last_connected is not None
            and time.time() - state.last_connected > self.project.dead_after
        )

    def _new_actor(self, config: ServerConfig) -> ServerActor:
        name = config.name
        actor = ServerActor(
            config,
            workdir=Path(self.workdir),
            options=self._options,
            nursery=self._nursery,
            on_change=lambda: self._changed(name),
        )
        self._actors[name] = actor
        self._users[name] = {}
        return actor

    def _add_user(self, view: ProjectView, name: str, actor: ServerActor) -> None:
        view.actors[name] = actor
        self._users[name][view] = None
        timer = self._idle.pop(name, None)
        if timer is not None:
            timer[0].cancel()

    def _remove_user(self, view: ProjectView, name: str, *, from_view: bool = True) -> None:
        if from_view:
            view.actors.pop(name, None)
        users = self._users.get(name)
        if users is None:
            return
        users.pop(view, None)
        if not users and name not in self._idle:
            self._start_idle_timer(name)

    def detach(self, view: ProjectView) -> None:
        """Release every reference of a closing session; the last reference to a server starts its idle timer."""
        self._views.pop(view, None)
        names = list(view.actors)
        for name in names:
            # The closed session keeps listing its servers (as disconnected), like a session-mode one.
            self._remove_user(view, name, from_view=False)
        self._tell(names)
        self._check_empty()

    def _tell(self, names: Iterable[str]) -> None:
        """Tell every session that uses one of ``names`` that its view changed (reference counts included)."""
        told: dict[ProjectView, None] = {}
        for name in names:
            told.update(self._users.get(name, {}))
        for view in told:
            view.on_change()

    # The idle timer.

    def _start_idle_timer(self, name: str) -> None:
        timeout = self.project.idle_timeout
        if timeout == 0:
            return  # never close: the connection waits for the next session, or the host's end
        timer = trio.CancelScope()
        deadline = trio.current_time() + timeout
        self._idle[name] = (timer, deadline)
        self._nursery.start_soon(self._close_when_idle, name, timer, deadline, name=f"wave_actors.idle:{name}")

    async def _close_when_idle(self, name: str, timer: trio.CancelScope, deadline: float) -> None:
        with timer:
            await trio.sleep_until(deadline)
        if timer.cancelled_caught or self._users.get(name) or self._idle.get(name, (None,))[0] is not timer:
            return
        del self._idle[name]
        logger.info("project %s: server %r unused for %g s; closing it", self.workdir, name, self.project.idle_timeout)
        await self._retire(name)

    # Retiring.

    async def _retire(self, name: str) -> None:
        """Forget ``name`` at once (withdrawn from every session), then close its connection; the name waits for it."""
        actor = self._actors.pop(name, None)
        if actor is None:
            return
        views = list(self._users.pop(name, {}))
        for view in views:
            view.actors.pop(name, None)
        timer = self._idle.pop(name, None)
        if timer is not None:
            timer[0].cancel()
        for view in views:
            view.on_change()
        gone = self._retiring[name] = trio.Event()
        try:
            await actor.retire()
        finally:
            del self._retiring[name]
            gone.set()
            self._check_empty()

    async def _wait_retired(self, names: Iterable[str]) -> None:
        """Return once none of ``names`` has a connection still being closed."""
        while waiting := [self._retiring[name] for name in names if name in self._retiring]:
            await waiting[0].wait()

    # Reconciling.

    async def reconcile(self, plugins: Plugins | None = None) -> dict[ProjectView, ReconfigureResult]:
        """Load every attached session's configuration again and apply it to the project (R-SCOPE-3).

        One reconcile at a time per project. Returns, per session, what changed for it.

        :param plugins: new plugin sources for every attached session; ``None`` keeps each session's own.
        """
        async with self._reconciling:
            views = [view for view in self._views if not view.closed]
            loads: dict[ProjectView, LoadedConfig] = {}

            async def load(view: ProjectView) -> None:
                loads[view] = await view.load(plugins)

            async with trio.open_nursery() as nursery:
                for view in views:
                    nursery.start_soon(load, view)
            views = [view for view in views if not view.closed]
            wanted: dict[str, ServerConfig] = {}
            for view in views:
                wanted.update(loads[view].servers)  # the most recent load wins a name the sessions disagree on
            before = {view: set(view.actors) for view in views}
            plan = plan_reconfigure({name: actor.config for name, actor in self._actors.items()}, wanted)
            async with trio.open_nursery() as nursery:
                for name in plan.removed:
                    nursery.start_soon(self._retire, name)
                for name in plan.changed:
                    nursery.start_soon(self._actors[name].reload, wanted[name])
                for name in plan.kept:
                    self._actors[name].update_settings(wanted[name])
            # Membership, once every removed connection is gone: what each session configures now.
            await self._wait_retired(wanted)
            for view in views:
                if view.closed:
                    continue
                configured = loads[view].servers
                for name in [name for name in view.actors if name not in configured]:
                    self._remove_user(view, name)
                for name, config in configured.items():
                    actor = self._actors.get(name)
                    if actor is None:
                        actor = self._new_actor(wanted.get(name, config))
                    if name not in view.actors:
                        self._add_user(view, name, actor)
            self._tell(wanted)
            for view in views:
                view.on_change()
            self._check_empty()
            changed = set(plan.changed)
            return {
                view: ReconfigureResult(
                    added=tuple(name for name in loads[view].servers if name not in before[view]),
                    removed=tuple(sorted(before[view] - set(loads[view].servers))),
                    changed=tuple(name for name in loads[view].servers if name in changed and name in before[view]),
                    diagnostics=loads[view].diagnostics,
                )
                for view in views
            }

    # The scope's own end.

    def _check_empty(self) -> None:
        if not self._views and not self._actors and not self._retiring:
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


def _nothing() -> None:
    return None


async def _no_load(_: Plugins | None) -> LoadedConfig:
    raise AssertionError("a project view is loaded only once its session has bound it")
