"""A host's project scopes, one per resolved workdir, each a task in the host's nursery (R-SCOPE-1, R-SCOPE-5).

:class:`ProjectScopes` starts a workdir's :class:`~wave_actors._roster.project.ProjectScope`
when its first project-mode session is made, hands each new session a
:class:`~wave_actors._roster.shared.SharedRoster` onto it, ends a scope once
nothing is left in it (no session, no connection),
and cancels every scope when the host closes. Never two scopes for one
workdir: a scope that is starting or ending is waited for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import final

import trio

from wave_actors._cache import ToolCache
from wave_actors._errors import WaveActorsError
from wave_actors._options import ProjectOptions, SessionOptions
from wave_actors._parameters import SessionSources
from wave_actors._roster.project import ProjectScope
from wave_actors._roster.shared import SharedRoster

__all__ = ["ProjectScopes"]


@final
class ProjectScopes:
    """A host's project scopes, by resolved workdir; each runs as a task in the host's nursery.

    :param nursery: the host's nursery.
    :param options: the host's session options, for every shared server.
    :param project: the host's project options.
    :param cache_file: the tool snapshot cache file.
    :param versions: the host's one sequence of snapshot versions (R-HOST-2).
    """

    def __init__(
        self,
        *,
        nursery: trio.Nursery,
        options: SessionOptions,
        project: ProjectOptions,
        cache_file: Path,
        versions: Iterator[int],
    ) -> None:
        self._nursery = nursery
        self._versions = versions
        self._options = options
        self._project = project
        self._cache_file = cache_file
        self._scopes: dict[str, ProjectScope] = {}
        self._starting: dict[str, trio.Event] = {}
        self._ended: dict[str, trio.Event] = {}
        self._closing = False

    @property
    def project(self) -> ProjectOptions:
        """The host's project options."""
        return self._project

    def get(self, workdir: str) -> ProjectScope | None:
        """The live scope of a resolved workdir, if any."""
        scope = self._scopes.get(workdir)
        return scope if scope is not None and not scope.closing else None

    def workdirs(self) -> list[str]:
        """The resolved workdirs with a live scope."""
        return [workdir for workdir, scope in self._scopes.items() if not scope.closing]

    async def scope_for(self, workdir: str, tool_cache: ToolCache) -> ProjectScope:
        """The workdir's scope, started if it has none (one per workdir, whatever the concurrency).

        :param workdir: the resolved workdir.
        :param tool_cache: the workdir's tool snapshots, for a new scope.
        """
        while True:
            if self._closing:
                raise WaveActorsError("the host is closing; no new sessions")
            scope = self._scopes.get(workdir)
            if scope is not None and not scope.closing:
                return scope
            pending = self._starting.get(workdir)
            if pending is None:
                pending = self._ended.get(workdir)
            if pending is not None:
                await pending.wait()  # a scope that is ending finishes first: never two connections to one server
                continue
            started = self._starting[workdir] = trio.Event()
            try:
                scope = await self._nursery.start(self._run, workdir, tool_cache)
            finally:
                del self._starting[workdir]
                started.set()
            return scope

    async def reserve(self, workdir: str, tool_cache: ToolCache, sources: SessionSources) -> SharedRoster:
        """A new session's roster onto the workdir's scope, counted as attached from now on (so the scope stays).

        :param workdir: the resolved workdir.
        :param tool_cache: the workdir's tool snapshots, for a new scope.
        :param sources: the session's configuration sources.
        """
        scope = await self.scope_for(workdir, tool_cache)
        roster = SharedRoster(scope, sources, self._versions)
        scope.reserve(roster)  # no checkpoint since scope_for looked: the scope cannot have begun to end
        return roster

    async def _run(
        self,
        workdir: str,
        tool_cache: ToolCache,
        *,
        task_status: trio.TaskStatus[ProjectScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        ended = trio.Event()
        scope: ProjectScope | None = None
        try:
            async with trio.open_nursery() as nursery:
                scope = ProjectScope(
                    workdir,
                    nursery=nursery,
                    options=self._options,
                    project=self._project,
                    tool_cache=tool_cache,
                    cache_file=self._cache_file,
                    versions=self._versions,
                )
                self._scopes[workdir] = scope
                task_status.started(scope)
                await scope.wait_empty()
                scope.closing = True
                self._ended[workdir] = ended
                nursery.cancel_scope.cancel()
        finally:
            if scope is not None and self._scopes.get(workdir) is scope:
                del self._scopes[workdir]
            if self._ended.get(workdir) is ended:
                del self._ended[workdir]
            ended.set()

    def close(self) -> None:
        """The host closes: cancel every scope; the host's nursery then waits for their reclamation."""
        self._closing = True
        for scope in self._scopes.values():
            scope.close()
