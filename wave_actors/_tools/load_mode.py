"""Which load mode a user's turn uses: the user's preference, then a global default, then working set (R-WS-1).

A host keeps the preference and the default wherever it keeps settings (a
database, a file, an admin page) and hands :class:`LoadModeResolver` two
lookups, sync or async. Resolution never fails a turn: a lookup that raises,
or answers something that is not a load mode, falls back to
:attr:`LoadMode.WORKING_SET` with one warning in the log (the same problem
is not logged again). A lookup that answers ``None`` has no opinion: the next
one is asked.

Each user's answer is kept for a short time (``ttl``, default 5 s, measured
on trio's clock) so that a host resolving every turn does not query its
settings every turn; a changed preference is seen within ``ttl``. A session
with no enabled server needs no mode at all: given its snapshot, the
resolver answers without asking anyone (and the section and gateway tools
are empty anyway, so switching modes changes nothing for it).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Final, TypeAlias, cast

import trio

from wave_actors._status import SessionSnapshot
from wave_actors._tools.declarations import LoadMode

__all__ = ["DEFAULT_LOAD_MODE_TTL", "LoadModeResolver", "parse_load_mode"]

logger = logging.getLogger(__name__)

DEFAULT_LOAD_MODE_TTL: Final = 5.0
"""Seconds a resolved mode is kept per user."""

_MAX_CACHED: Final = 4096
_MAX_WARNED: Final = 256

LoadModeAnswer: TypeAlias = "LoadMode | str | None"
LoadModeLookup: TypeAlias = "Callable[..., LoadModeAnswer | Awaitable[LoadModeAnswer]]"
"""A host's lookup: returns a :class:`LoadMode`, its value as text, or ``None`` (no opinion); may be async."""


def parse_load_mode(value: object) -> LoadMode | None:
    """``value`` as a load mode: a :class:`LoadMode`, or text such as ``"working_set"``, ``"WORKING_SET"``,
    ``"working-set"`` or ``"full"``; ``None`` when it is none of them.

    :param value: what a lookup answered.
    """
    if isinstance(value, LoadMode):
        return value
    if isinstance(value, str):
        try:
            return LoadMode(value.strip().lower().replace("-", "_"))
        except ValueError:
            return None
    return None


class LoadModeResolver:
    """Resolves a user's :class:`LoadMode`: preference → global default → working set (R-WS-1).

    ::

        resolver = LoadModeResolver(
            user_preference=lambda user: settings.get(f"mcp.load_mode.{user}"),
            global_default=lambda: settings.get("mcp.load_mode"),
        )
        mode = await resolver.resolve(user_id, snapshot=session.snapshot())
        declarations = session.tool_declarations(mode)

    :param user_preference: called with the user key; ``None`` to have no per-user setting.
    :param global_default: called with no argument; ``None`` to have no global setting.
    :param ttl: seconds each user's answer is kept; ``0`` asks every time.
    :raises ValueError: ``ttl`` is negative.
    """

    def __init__(
        self,
        user_preference: LoadModeLookup | None = None,
        global_default: LoadModeLookup | None = None,
        *,
        ttl: float = DEFAULT_LOAD_MODE_TTL,
    ) -> None:
        if not ttl >= 0:
            raise ValueError(f"LoadModeResolver: ttl must be zero or more seconds, not {ttl!r}")
        self._user_preference = user_preference
        self._global_default = global_default
        self._ttl = ttl
        self._cache: dict[Hashable, tuple[LoadMode, float]] = {}
        self._warned: set[str] = set()

    async def resolve(self, user: Hashable | None = None, *, snapshot: SessionSnapshot | None = None) -> LoadMode:
        """The load mode for ``user``'s next turn; never raises for what a lookup did.

        Must run under trio (the cache is timed on its clock).

        :param user: the user key the preference lookup takes; ``None`` skips
            the preference (e.g. an anonymous session).
        :param snapshot: the session's snapshot; when it has no enabled server,
            :attr:`LoadMode.WORKING_SET` is answered without any lookup.
        """
        if snapshot is not None and not any(status.enabled for status in snapshot.servers):
            return LoadMode.WORKING_SET
        now = trio.current_time()
        cached = self._cache.get(user)
        if cached is not None and cached[1] > now:
            return cached[0]
        mode = await self._lookup(user)
        if self._ttl > 0:
            if len(self._cache) >= _MAX_CACHED:
                self._cache = {key: value for key, value in self._cache.items() if value[1] > now}
            if len(self._cache) < _MAX_CACHED:
                self._cache[user] = (mode, now + self._ttl)
        return mode

    def forget(self, user: Hashable | None = None) -> None:
        """Drop ``user``'s kept answer, e.g. right after the user changed the preference.

        :param user: the user key.
        """
        self._cache.pop(user, None)

    async def _lookup(self, user: Hashable | None) -> LoadMode:
        if user is not None and self._user_preference is not None:
            answer = await self._ask("user preference", self._user_preference, user)
            if answer is not None:
                return answer
        if self._global_default is not None:
            answer = await self._ask("global default", self._global_default)
            if answer is not None:
                return answer
        return LoadMode.WORKING_SET

    async def _ask(self, which: str, lookup: LoadModeLookup, *arguments: Hashable) -> LoadMode | None:
        """The lookup's mode, ``None`` for no opinion; ``WORKING_SET`` (and one warning) when it fails."""
        try:
            answer: object = lookup(*arguments)
            if inspect.isawaitable(answer):
                answer = await cast("Awaitable[object]", answer)
        except Exception as error:  # any failure of the host's lookup falls back (R-WS-1)
            self._warn(f"the {which} lookup failed ({type(error).__name__}: {error})")
            return LoadMode.WORKING_SET
        if answer is None:
            return None
        mode = parse_load_mode(answer)
        if mode is None:
            shown = repr(answer) if len(repr(answer)) <= 60 else repr(answer)[:57] + "..."
            self._warn(f"the {which} lookup answered {shown}, which is not a load mode (working_set or full)")
            return LoadMode.WORKING_SET
        return mode

    def _warn(self, problem: str) -> None:
        if problem in self._warned:
            logger.debug("%s; using working_set", problem)
            return
        if len(self._warned) < _MAX_WARNED:
            self._warned.add(problem)
        logger.warning("%s; using working_set until it answers a load mode", problem)
