"""A session that shares its project's connections: a view onto the project's scope (``ownership="project"``).

The actors are the scope's (:mod:`wave_actors._roster.project`); the session
holds references to the connections of the entries it loaded (its own name ->
connection mapping: another session may use another connection under the
same name), and starts no task for them. Its callers' waits on a shared actor are bounded by the session's life
(:meth:`SharedRoster.waiting`), since the actor outlives it. A turn posts the
due dials to the project and waits at most the ready budget (R-SCOPE-4).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from types import MappingProxyType
from typing import Literal, final

import trio
from trio_util import AsyncValue

from wave_actors._actor.actor import ServerActor
from wave_actors._actor.machine import settled
from wave_actors._actor.messages import Connect
from wave_actors._cache import ToolCache
from wave_actors._catalog import KnownTool
from wave_actors._config import LoadedConfig
from wave_actors._parameters import SessionSources
from wave_actors._reconfigure import ReconfigureResult
from wave_actors._roster.project import ProjectScope
from wave_actors._roster.slots import Slot
from wave_actors._status import SharedUse

__all__ = ["SharedRoster"]


@final
class SharedRoster:
    """A :class:`~wave_actors._roster.interface.Roster` onto a project scope's shared servers (R-SCOPE-1).

    Made by :meth:`ProjectScopes.reserve <wave_actors._roster.projects.ProjectScopes.reserve>`,
    which counts it as attached from then on, so the scope stays.

    :param scope: the project.
    :param sources: the session's configuration sources.
    :param versions: the host's one sequence of snapshot versions (R-HOST-2).
    """

    __slots__ = ("_actors", "_closed", "_scope", "_slots", "_sources", "_versions", "_waits", "version")

    def __init__(self, scope: ProjectScope, sources: SessionSources, versions: Iterator[int]) -> None:
        self._scope = scope
        self._sources = sources
        self._versions = versions
        self._slots: dict[str, Slot] = {}
        self._actors: dict[str, ServerActor] = {}
        self._closed = False
        self._waits: set[trio.CancelScope] = set()
        self.version = AsyncValue(next(versions))

    @property
    def ownership(self) -> Literal["project"]:
        """``"project"``."""
        return "project"

    @property
    def closed(self) -> bool:
        """The session let go of the project."""
        return self._closed

    @property
    def actors(self) -> Mapping[str, ServerActor]:
        """The project's connections of the entries the session loaded, by name."""
        return MappingProxyType(self._actors)

    @property
    def slots(self) -> Mapping[str, Slot]:
        """The connection the session uses under each name, now (for the scope)."""
        return MappingProxyType(self._slots)

    @property
    def sources(self) -> SessionSources:
        """Where the session's configuration comes from (for the scope's reconcile)."""
        return self._sources

    @property
    def tool_cache(self) -> ToolCache:
        """The project's snapshots: the same whichever session saw them (R-CACHE-1)."""
        return self._scope.group.tool_cache.cache

    def current_version(self) -> int:
        """The newest of the session's own version and its connections' stamps; only its own once it let go."""
        own = self.version.value
        if self._closed:
            return own
        return max(own, self._scope.stamp(self._slots.values()))

    def watching(self) -> AbstractContextManager[None]:
        """Keep :attr:`version` current while a caller waits on it: each change of a connection wakes it."""
        return self._scope.listen(self)

    def sharing(self) -> Mapping[str, SharedUse] | None:
        """How each of the session's servers is shared now; ``None`` once the session let go."""
        if self._closed:
            return None
        return {name: self._scope.sharing(slot) for name, slot in self._slots.items()}

    @contextmanager
    def waiting(self) -> Generator[None]:
        """Stop waiting (without an error) once the session lets go of the project."""
        scope = trio.CancelScope()
        if self._closed:
            scope.cancel()
        self._waits.add(scope)
        try:
            with scope:
                yield
        finally:
            self._waits.discard(scope)

    def known_tool(self, name: str) -> KnownTool | None:
        """What the project's connections that the session uses listed under ``name``, or what only the cache shows."""
        return self._scope.group.known_tool(name, self._slots.values())

    # What the scope calls.

    def take(self, name: str, slot: Slot, actor: ServerActor) -> None:
        """The session uses the connection ``slot`` under ``name`` from now on."""
        self._slots[name] = slot
        self._actors[name] = actor

    def drop(self, name: str) -> None:
        """The session no longer uses ``name``."""
        self._slots.pop(name, None)
        self._actors.pop(name, None)

    def changed(self) -> None:
        """Something the session sees changed: a new version."""
        self.version.value = next(self._versions)

    # What the session calls.

    async def attach(self, loaded: LoadedConfig) -> None:
        """Attach to the project's servers of ``loaded``; a server still being closed is waited for (R-SCOPE-5)."""
        await self._scope.attach(self, loaded)

    async def prepare_turn(self) -> None:
        """Post the due dials to the project, then wait at most the ready budget for what is still connecting (R-SCOPE-4)."""
        if self._closed:
            return
        due = self._scope.group.due(self._slots.values())
        for actor in due:
            actor.post(Connect(explicit=False))
        waiting = due + [actor for actor in self._actors.values() if not settled(actor.state) and actor not in due]
        budget = self._scope.project.ready_budget
        if not waiting or budget == 0:
            return

        def ready(_: int) -> bool:
            # A posted dial is due until the actor takes it, then connecting until it settles.
            return self._closed or all(settled(actor.state) and not actor.lazy_dial_due() for actor in waiting)

        with trio.move_on_after(budget), self.watching():
            await self.version.wait_value(ready)

    async def reconfigure(self) -> ReconfigureResult:
        """Reconcile the whole project, this session's new sources included: the connections are shared (R-SCOPE-3)."""
        results = await self._scope.reconcile()
        return results.get(self) or ReconfigureResult((), (), (), self._sources.diagnostics)

    def close(self) -> None:
        """Release every reference and every waiting caller; the closed session keeps listing its servers."""
        if self._closed:
            return
        self._closed = True
        for wait in self._waits:
            wait.cancel()
        self._scope.detach(self)
        self.changed()
