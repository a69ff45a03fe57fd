"""The tool snapshot cache's records: one server's snapshot, the cache (R-CACHE-1, R-CACHE-2).

A snapshot's tools are :class:`~wave_actors._listing.ServerTool` records, the
same the state machine keeps, so nothing converts them field by field.

Immutable values, shared by everything that touches the cache: the file's
reader and writer (:mod:`wave_actors._cache.file`) make and store them, an
owner's view (:mod:`wave_actors._cache.writer`) records them, and the
catalog (:mod:`wave_actors._catalog`) shows them as the tools of servers not
yet dialed. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from wave_actors._frozen import freeze_mapping
from wave_actors._listing import ServerTool

__all__ = ["EMPTY_CACHE", "CachedServer", "ToolCache"]


@attrs.frozen(eq=False)
class CachedServer:
    """One server's tools at its last connect or refresh (R-CACHE-1).

    :param server: the server's name.
    :param fingerprint: its entry's fingerprint then (R-CFG-8).
    :param workdir: the resolved workdir it was loaded for, which pruning goes by (R-CACHE-4).
    :param last_connected: wall-clock time (``time.time()``) of that connect.
    :param tools: what it listed; empty is a snapshot too.
    :param warnings: the tools that listing skipped as invalid, one line each
        saying which and why (``ServerStatus.warnings`` then, R-TOOL-9).
    """

    server: str
    fingerprint: str
    workdir: str
    last_connected: float
    tools: tuple[ServerTool, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """``(server, fingerprint)``, the cache key."""
        return (self.server, self.fingerprint)


@attrs.frozen
class ToolCache:
    """Cached servers by ``(server, fingerprint)``; immutable.

    :param entries: the snapshots.
    """

    entries: Mapping[tuple[str, str], CachedServer] = attrs.field(
        factory=dict[tuple[str, str], CachedServer], converter=freeze_mapping
    )

    def lookup(self, server: str, fingerprint: str) -> CachedServer | None:
        """The snapshot of ``server`` as configured now, or ``None`` (also when the fingerprint differs, R-CACHE-2)."""
        return self.entries.get((server, fingerprint))

    def with_entries(self, updates: Iterable[CachedServer]) -> ToolCache:
        """This cache with ``updates`` replacing the entries of the same keys."""
        entries = dict(self.entries)
        entries.update((update.key, update) for update in updates)
        return ToolCache(entries)


EMPTY_CACHE: Final = ToolCache()
"""The cache of a missing or unusable file."""
