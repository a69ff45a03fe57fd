"""An actor group: the servers of one owner, a session or a project, and everything done to them as a set.

Both owners of servers (:mod:`~wave_actors._roster.owned`, a session's own,
and :mod:`~wave_actors._roster.project`, a project's shared ones) keep their
actors in an :class:`ActorGroup`, and the group is the only place that

- builds a :class:`~wave_actors._actor.actor.ServerActor` and the tool
  snapshot cache's writer (R-CACHE-1);
- applies a reconfigure plan (:mod:`wave_actors._reconfigure`): a session's
  ``reconfigure``, a project's ``reconcile`` and a project's ``attach`` alike
  (R-STORE-5, R-SCOPE-3);
- picks the servers whose lazy dial is due (R-DIAL-2);
- remembers the tool names its servers ever listed, so a call by a name that
  is not listed now is answered with why (R-TOOL-1, R-CACHE-2).

The group never waits on its owner and never tells a session anything by
itself: every change is reported through ``on_change`` with the names it
concerns, and the owner decides who is told.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import final

import trio

from wave_actors._actor.actor import ServerActor
from wave_actors._cache import ToolCache, ToolCacheWriter
from wave_actors._catalog import KnownTool, Standing
from wave_actors._config import ServerConfig
from wave_actors._options import SessionOptions
from wave_actors._reconfigure import ReconfigurePlan
from wave_actors._tools import assign_names

__all__ = ["ActorGroup"]


@final
class ActorGroup:
    """The servers of one owner, by name; every actor's task runs in the owner's nursery.

    :param workdir: the resolved workdir: the cache's key, and where stdio servers without ``cwd`` run.
    :param nursery: the owner's nursery (a session's, or a project scope's).
    :param options: how the servers are dialed and kept up.
    :param tool_cache: the workdir's tool snapshots, read when the owner was made.
    :param cache_file: where the tool snapshot cache is written (R-CACHE-1).
    :param on_change: called synchronously with the names of the servers that
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
        on_change: Callable[[Collection[str]], None],
    ) -> None:
        self._workdir_path = Path(
            workdir
        )  # one for every actor: an idle session's servers are a few hundred bytes each
        self._nursery = nursery
        self._options = options
        self._on_change = on_change
        self._on_actor_change = self._changed  # one bound method for every actor, not one each
        self._actors: dict[str, ServerActor] = {}
        self._retiring: dict[str, trio.Event] = {}  # name -> set once its old connection is gone
        self._removed: dict[str, frozenset[str]] = {}  # name -> every raw tool name it listed, once retired
        # One writer per group: the snapshots are the same whichever session saw them (R-CACHE-1).
        self.tool_cache = ToolCacheWriter(
            cache_file,
            workdir,
            tool_cache,
            nursery=nursery,
            configured=lambda: [(actor.config.name, actor.config.fingerprint) for actor in self._actors.values()],
        )

    @property
    def actors(self) -> Mapping[str, ServerActor]:
        """The group's servers by name (read-only)."""
        return MappingProxyType(self._actors)

    @property
    def retiring(self) -> bool:
        """Whether a withdrawn server's connection is still being closed."""
        return bool(self._retiring)

    def configs(self) -> dict[str, ServerConfig]:
        """Every server's current entry, for :func:`~wave_actors._reconfigure.plan_reconfigure`."""
        return {name: actor.config for name, actor in self._actors.items()}

    def due(self, names: Iterable[str]) -> list[ServerActor]:
        """The servers among ``names`` whose lazy dial is due (R-DIAL-2, R-DIAL-4, R-DIAL-6)."""
        return [actor for name in names if (actor := self._actors.get(name)) is not None and actor.lazy_dial_due()]

    # Applying a plan.

    def apply_soon(self, plan: ReconfigurePlan, wanted: Mapping[str, ServerConfig]) -> None:
        """Apply what of ``plan`` takes effect at once, without a checkpoint: a project's attach.

        Kept servers take their new settings, changed ones reload (posted: the
        re-dial is not waited for), added ones are registered ``disconnected``.
        A plan that removes anything needs :meth:`apply`.

        :raises ValueError: ``plan`` removes servers.
        """
        if plan.removed:
            raise ValueError(f"apply_soon cannot retire {plan.removed!r}; use apply()")
        for name in plan.changed:
            self._actors[name].reload_soon(wanted[name])
        self._register(plan, wanted)

    async def apply(self, plan: ReconfigurePlan, wanted: Mapping[str, ServerConfig]) -> None:
        """Apply ``plan`` and wait for it: a session's reconfigure, a project's reconcile (R-STORE-5, R-SCOPE-3).

        Removed servers are withdrawn at once and retired (accepted calls
        finish within their timeout, then the transport closes); changed ones
        reload in place and are re-dialed if they ran; kept ones take their
        new settings; added ones are registered ``disconnected``, once any old
        connection under their name is gone. A wanted server withdrawn while
        this waited (a project's idle timer fired) is registered again.

        Cancelled half-way, what was withdrawn stays withdrawn: a retired actor
        never serves again, and its name is free for the next configuration.
        """
        for name in plan.kept:
            self._actors[name].update_settings(wanted[name])  # before the first checkpoint: the plan holds
        async with trio.open_nursery() as nursery:
            for name in plan.removed:
                nursery.start_soon(self.retire, name)
            for name in plan.changed:
                nursery.start_soon(self._actors[name].reload, wanted[name])
        # What is wanted and missing now: the added names, and any a project's idle timer withdrew meanwhile.
        await self.wait_retired(wanted)
        self._register_missing(wanted)

    def _register(self, plan: ReconfigurePlan, wanted: Mapping[str, ServerConfig]) -> None:
        for name in plan.kept:
            self._actors[name].update_settings(wanted[name])
        self._register_missing({name: wanted[name] for name in plan.added})

    def _register_missing(self, wanted: Mapping[str, ServerConfig]) -> None:
        added = [name for name in wanted if name not in self._actors]
        for name in added:
            self._removed.pop(name, None)
            config = wanted[name]
            self._actors[name] = ServerActor(
                config,
                workdir=self._workdir_path,
                options=self._options,
                nursery=self._nursery,
                on_change=self._on_actor_change,
            )
        if added:
            self._on_change(added)

    async def retire(self, name: str) -> None:
        """Withdraw ``name`` at once, then close its connection; until it is gone, an add of the name waits.

        Does nothing for a name the group does not have.
        """
        actor = self._actors.pop(name, None)
        if actor is None:
            return
        state = actor.state
        self._removed[name] = state.listed | state.withdrawn
        gone = self._retiring[name] = trio.Event()
        try:
            self._on_change((name,))
            await actor.retire()
        finally:
            del self._retiring[name]
            gone.set()

    async def wait_retired(self, names: Iterable[str]) -> None:
        """Return once none of ``names`` has a connection still being closed (R-SCOPE-5, R-RACE-6)."""
        while waiting := [self._retiring[name] for name in names if name in self._retiring]:
            await waiting[0].wait()

    def refuse_commands(self) -> None:
        """Every actor releases its callers and refuses commands: the owner is closing."""
        for actor in self._actors.values():
            actor.refuse_commands()

    # Changes.

    def _changed(self, name: str) -> None:
        if self._actors.get(name) is None:
            return  # a withdrawn actor finishing its retire: nobody sees it any more
        self.tool_cache.observe((actor.config, actor.state) for actor in self._actors.values())
        self._on_change((name,))

    # Known names.

    def known_tool(self, name: str, servers: Collection[str]) -> KnownTool | None:
        """What the group knows of a model-visible tool name among ``servers`` (and those it retired).

        Asked only for a name the current snapshot does not list: a call by
        it is either unavailable (its server's newest live listing has it)
        or refused with the reason (withdrawn, removed, only cached). Nothing
        here is recorded by looking: ``listed`` and ``withdrawn`` are the
        state machine's, changed only where a listing arrives, and a retired
        server's names are kept when it is withdrawn.

        :param name: the model-visible name.
        :param servers: the servers the asking session sees.
        """
        standing: dict[tuple[str, str], Standing] = {}
        cache = self.tool_cache.cache
        for server in servers:
            actor = self._actors.get(server)
            if actor is None:
                continue
            state, config = actor.state, actor.config
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
