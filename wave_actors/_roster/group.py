"""An actor group: the servers of one owner, a session or a project, and everything done to them as a set.

Both owners of servers (:mod:`~wave_actors._roster.owned`, a session's own,
and :mod:`~wave_actors._roster.project`, a project's shared ones) keep their
actors in an :class:`ActorGroup`, and the group is the only place that

- builds a :class:`~wave_actors._actor.actor.ServerActor` and the tool
  snapshot cache's writer (R-CACHE-1);
- applies a reconfigure plan (:mod:`wave_actors._reconfigure`): a session's
  first configuration (:meth:`ActorGroup.apply_soon`) and ``reconfigure``
  (:meth:`ActorGroup.apply`), and a project's ``reconcile``, which decides
  under a lock and so starts what takes effect at once
  (:meth:`ActorGroup.start`) apart from registering the added servers
  (:meth:`ActorGroup.register`) (R-STORE-5, R-SCOPE-3);
- picks the servers whose lazy dial is due (R-DIAL-2);
- keeps the tool names of the servers it retired (the last
  :data:`RETIRED_KEPT` of them: a project's group lives as long as the host,
  through any number of configuration changes), beside the names each live
  server's state machine keeps, so a call by a name that is not listed now is
  answered with why (R-TOOL-1, R-CACHE-2).

The group never waits on its owner and never tells a session anything by
itself: every change is reported through ``on_change`` with the keys it
concerns, and the owner decides who is told.

A group keys its servers by what its owner names them by: a session's own
group by server name, a project's by shared connection
(:class:`~wave_actors._roster.slots.Slot`: a name and a serial number),
since a project may hold two connections under one name, for sessions that
loaded different entries (R-SCOPE-1).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, Generic, TypeVar, cast, final

import trio

from wave_actors._actor.actor import ServerActor
from wave_actors._cache import ToolCache, ToolCacheWriter
from wave_actors._catalog import KnownTool, Standing
from wave_actors._config import ServerConfig
from wave_actors._options import SessionOptions
from wave_actors._reconfigure import ReconfigurePlan
from wave_actors._tools import assign_names

__all__ = ["ActorGroup"]

Key = TypeVar("Key", bound=Hashable)

RETIRED_KEPT: Final = 64
"""The retired servers whose tool names a group remembers, to say why a call by one is refused; the oldest goes first."""


@final
class ActorGroup(Generic[Key]):
    """The servers of one owner, by key; every actor's task runs in the owner's nursery.

    :param workdir: the resolved workdir: the cache's key, and where stdio servers without ``cwd`` run.
    :param nursery: the owner's nursery (a session's, or a project scope's).
    :param options: how the servers are dialed and kept up.
    :param tool_cache: the workdir's tool snapshots, read when the owner was made.
    :param cache_file: where the tool snapshot cache is written (R-CACHE-1).
    :param on_change: called synchronously with the keys of the servers that
        changed: a state, an entry, or membership (added, or withdrawn on retire).
    """

    __slots__ = (
        "_actors",
        "_nursery",
        "_on_actor_change",
        "_on_change",
        "_options",
        "_removed",
        "_retiring",
        "_workdir_path",
        "tool_cache",
    )

    def __init__(
        self,
        workdir: str,
        *,
        nursery: trio.Nursery,
        options: SessionOptions,
        tool_cache: ToolCache,
        cache_file: Path,
        on_change: Callable[[Collection[Key]], None],
    ) -> None:
        self._workdir_path = Path(
            workdir
        )  # one for every actor: an idle session's servers are a few hundred bytes each
        self._nursery = nursery
        self._options = options
        self._on_change = on_change
        self._on_actor_change = self._changed  # one bound method for every actor, not one each
        self._actors: dict[Key, ServerActor] = {}
        self._retiring: dict[Key, tuple[str, trio.Event]] = {}  # key -> (name, set once its connection is gone)
        self._removed: dict[str, frozenset[str]] = {}  # server name -> every raw tool name it listed, once retired
        # One writer per group: the snapshots are the same whichever session saw them (R-CACHE-1).
        self.tool_cache = ToolCacheWriter(
            cache_file,
            workdir,
            tool_cache,
            nursery=nursery,
            configured=lambda: [(actor.config.name, actor.config.fingerprint) for actor in self._actors.values()],
        )

    @property
    def actors(self) -> Mapping[Key, ServerActor]:
        """The group's servers by key (read-only)."""
        return MappingProxyType(self._actors)

    @property
    def retiring(self) -> bool:
        """Whether a withdrawn server's connection is still being closed."""
        return bool(self._retiring)

    def configs(self) -> dict[Key, ServerConfig]:
        """Every server's current entry, for :func:`~wave_actors._reconfigure.plan_reconfigure`."""
        return {key: actor.config for key, actor in self._actors.items()}

    def due(self, keys: Iterable[Key]) -> list[ServerActor]:
        """The servers among ``keys`` whose lazy dial is due (R-DIAL-2, R-DIAL-4, R-DIAL-6)."""
        return [actor for key in keys if (actor := self._actors.get(key)) is not None and actor.lazy_dial_due()]

    # Applying a plan.

    def apply_soon(self, plan: ReconfigurePlan[Key], wanted: Mapping[Key, ServerConfig]) -> None:
        """Apply what of ``plan`` takes effect at once, without a checkpoint: a session's first configuration.

        Kept servers take their new settings, changed ones reload (posted: the
        re-dial is not waited for), added ones are registered ``disconnected``.
        A plan that removes anything needs :meth:`apply`.

        :raises ValueError: ``plan`` removes servers.
        """
        if plan.removed:
            raise ValueError(f"apply_soon cannot retire {plan.removed!r}; use apply()")
        self.start(plan, wanted)
        self.register(plan.added, wanted)

    async def apply(self, plan: ReconfigurePlan[Key], wanted: Mapping[Key, ServerConfig]) -> None:
        """Apply ``plan`` and wait for it: a session's reconfigure (R-STORE-5).

        Removed servers are withdrawn at once and retired (accepted calls
        finish within their timeout, then the transport closes); changed ones
        reload in place and are re-dialed if they ran; kept ones take their
        new settings; added ones are registered ``disconnected``, once any old
        connection under their name is gone (an earlier reconfigure, cancelled,
        may have left one closing).

        Cancelled half-way, what was withdrawn stays withdrawn: a retired actor
        never serves again, and its name is free for the next configuration.
        """
        for done in self.start(plan, wanted):
            await done.wait()
        await self.wait_retired({wanted[key].name for key in plan.added})
        self.register(plan.added, wanted)

    def start(self, plan: ReconfigurePlan[Key], wanted: Mapping[Key, ServerConfig]) -> list[trio.Event]:
        """Start, without a checkpoint, what of ``plan`` takes effect at once: everything but the added servers.

        Removed servers are withdrawn now and retired in the owner's nursery;
        changed ones take their new entry now and reload (the re-dial is
        posted); kept ones take their new settings.

        :returns: one event per retire and reload, set once it is done.
        """
        done: list[trio.Event] = []
        for key in plan.removed:
            actor = self._withdraw(key)
            if actor is not None:
                done.append(self._retiring[key][1])
                self._nursery.start_soon(self._retire, key, actor)
        for key in plan.changed:
            reloaded = trio.Event()
            self._actors[key].reload_soon(wanted[key], reloaded)
            done.append(reloaded)
        for key in plan.kept:
            self._actors[key].update_settings(wanted[key])
        return done

    def register(self, keys: Iterable[Key], wanted: Mapping[Key, ServerConfig]) -> None:
        """Register the servers of ``keys`` ``disconnected`` (or ``disabled``); a key the group has is left alone."""
        added = [key for key in keys if key not in self._actors]
        for key in added:
            config = wanted[key]
            self._removed.pop(config.name, None)
            self._actors[key] = ServerActor(
                config,
                workdir=self._workdir_path,
                options=self._options,
                nursery=self._nursery,
                key=key,
                on_change=self._on_actor_change,
            )
        if added:
            self._on_change(added)

    async def retire(self, key: Key) -> None:
        """Withdraw ``key`` at once, then close its connection; until it is gone, an add of its name waits.

        Does nothing for a key the group does not have.
        """
        actor = self._withdraw(key)
        if actor is not None:
            await self._retire(key, actor)

    def _withdraw(self, key: Key) -> ServerActor | None:
        actor = self._actors.pop(key, None)
        if actor is None:
            return None
        state = actor.state
        self._removed.pop(actor.config.name, None)  # the newest retirement goes last
        self._removed[actor.config.name] = state.listed | state.withdrawn
        while len(self._removed) > RETIRED_KEPT:
            del self._removed[next(iter(self._removed))]
        self._retiring[key] = (actor.config.name, trio.Event())
        self._on_change((key,))
        return actor

    async def _retire(self, key: Key, actor: ServerActor) -> None:
        try:
            await actor.retire()
        finally:
            _, gone = self._retiring.pop(key)
            gone.set()

    def retiring_names(self) -> set[str]:
        """The names of the servers whose connection is still being closed."""
        return {name for name, _ in self._retiring.values()}

    async def wait_retired(self, names: Collection[str]) -> None:
        """Return once no server named in ``names`` has a connection still being closed (R-SCOPE-5, R-RACE-6)."""
        while waiting := [gone for name, gone in self._retiring.values() if name in names]:
            await waiting[0].wait()

    def refuse_commands(self) -> None:
        """Every actor releases its callers and refuses commands: the owner is closing."""
        for actor in self._actors.values():
            actor.refuse_commands()

    # Changes.

    def _changed(self, changed: Hashable) -> None:
        key = cast(Key, changed)  # the key this group gave the actor
        if self._actors.get(key) is None:
            return  # a withdrawn actor finishing its retire: nobody sees it any more
        self.tool_cache.observe((actor.config, actor.state) for actor in self._actors.values())
        self._on_change((key,))

    # Known names.

    def known_tool(self, name: str, servers: Collection[Key]) -> KnownTool | None:
        """What the group knows of a model-visible tool name among ``servers`` (and those it retired).

        Asked only for a name the current snapshot does not list: a call by
        it is either unavailable (its server's newest live listing has it)
        or refused with the reason (withdrawn, removed, only cached). Nothing
        here is recorded by looking: ``listed`` and ``withdrawn`` are the
        state machine's, changed only where a listing arrives, and a retired
        server's names are kept when it is withdrawn.

        :param name: the model-visible name.
        :param servers: the keys of the servers the asking session sees.
        """
        standing: dict[tuple[str, str], Standing] = {}
        cache = self.tool_cache.cache
        for key in servers:
            actor = self._actors.get(key)
            if actor is None:
                continue
            state, config = actor.state, actor.config
            server = config.name
            cached = cache.lookup(server, config.fingerprint)
            for tool in () if cached is None else cached.tools:
                standing[(server, tool.name)] = Standing.CACHED
            for tool in state.withdrawn:
                standing[(server, tool)] = Standing.WITHDRAWN
            for tool in state.listed:
                standing[(server, tool)] = Standing.LISTED
        for server, tools in self._removed.items():
            for tool in tools:
                standing.setdefault((server, tool), Standing.REMOVED)
        for pair, assigned in assign_names(standing).items():
            if assigned == name:
                return KnownTool(pair[0], pair[1], standing[pair])
        return None
