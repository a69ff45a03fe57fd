"""A session that owns its connections: its servers are an actor group in the session's own nursery.

The default (``ownership="session"``). Every actor's task, every transport
and every process lives in the session's nursery, so closing the session
cancels them all and its nursery's exit waits for their reclamation
(R-RACE-2, R-KILL-4).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Literal, final

import trio
from trio_util import AsyncValue

from wave_actors._actor.actor import ServerActor
from wave_actors._cache import ToolCache
from wave_actors._catalog import KnownTool
from wave_actors._config import LoadedConfig
from wave_actors._parameters import SessionSources
from wave_actors._reconfigure import ReconfigureResult, plan_reconfigure
from wave_actors._roster.group import ActorGroup
from wave_actors._status import SharedUse

__all__ = ["OwnedRoster"]


@final
class OwnedRoster:
    """A :class:`~wave_actors._roster.interface.Roster` whose servers are the session's own.

    :param sources: the session's configuration sources.
    :param nursery: the session's nursery, where the actors run.
    :param tool_cache: the workdir's tool snapshots, read when the session was created.
    :param cache_file: where the tool snapshot cache is written (R-CACHE-1).
    :param workdir: the resolved workdir.
    :param versions: the host's one sequence of snapshot versions (R-HOST-2).
    """

    __slots__ = ("_closed", "_group", "_sources", "_versions", "version")

    def __init__(
        self,
        sources: SessionSources,
        *,
        nursery: trio.Nursery,
        tool_cache: ToolCache,
        cache_file: Path,
        workdir: str,
        versions: Iterator[int],
    ) -> None:
        self._sources = sources
        self._versions = versions
        self._closed = False
        self.version = AsyncValue(next(versions))
        self._group = ActorGroup(
            workdir,
            nursery=nursery,
            options=sources.parameters.options,
            tool_cache=tool_cache,
            cache_file=cache_file,
            on_change=self._changed,
        )

    @property
    def ownership(self) -> Literal["session"]:
        """``"session"``."""
        return "session"

    @property
    def actors(self) -> Mapping[str, ServerActor]:
        """The session's servers."""
        return self._group.actors

    @property
    def tool_cache(self) -> ToolCache:
        """The workdir's snapshots, the session's own latest included."""
        return self._group.tool_cache.cache

    def current_version(self) -> int:
        """:attr:`version`'s value: every change of the session's own servers moves it at once."""
        return self.version.value

    def watching(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to do: :attr:`version` is always current."""
        return contextlib.nullcontext()

    def sharing(self) -> Mapping[str, SharedUse] | None:
        """``None``: nothing is shared."""
        return None

    def waiting(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to bound: the session's actors end with the session, and release their callers as it closes."""
        return contextlib.nullcontext()

    def known_tool(self, name: str) -> KnownTool | None:
        """What the session's servers listed under ``name``, or what only the cache shows."""
        return self._group.known_tool(name, self._group.actors)

    def _changed(self, _: Collection[str]) -> None:
        self.version.value = next(self._versions)

    async def attach(self, loaded: LoadedConfig) -> None:
        """Register every configured server, ``disconnected`` (or ``disabled``); nothing runs yet (R-DIAL-1, R-HOST-3)."""
        self._group.apply_soon(plan_reconfigure({}, loaded.servers), loaded.servers)

    async def prepare_turn(self) -> None:
        """Dial every due server concurrently and wait for every outcome (R-DIAL-2); no checkpoint with none due (R-DIAL-7)."""
        due = self._group.due(self._group.actors)
        if not due or self._closed:
            return
        async with trio.open_nursery() as nursery:
            for actor in due:
                nursery.start_soon(functools.partial(actor.connect, explicit=False))

    async def reconfigure(self) -> ReconfigureResult:
        """Load the sources again and apply the difference to the session's servers (R-STORE-5)."""
        loaded = await self._sources.load()
        plan = plan_reconfigure(self._group.configs(), loaded.servers)
        await self._group.apply(plan, loaded.servers)
        return ReconfigureResult(plan.added, plan.removed, plan.changed, loaded.diagnostics)

    def close(self) -> None:
        """Every actor releases its callers and refuses commands; the session's nursery then reclaims them."""
        if self._closed:
            return
        self._closed = True
        self._group.refuse_commands()
        self._changed(())
