"""The tool snapshot cache: what each server listed the last time it connected (R-CACHE-1..5).

Lazy dial (R-DIAL-1) means a fresh session has connected nothing, yet a
status display should still show what each server offers. After every
successful connect and every tool refresh, a session records the server's
tools in ``<home>/mcp-tools-cache.json``, keyed by server name and fingerprint
(R-CACHE-1; the fingerprint covers the connection and the workdir, R-CFG-8).
A session's statuses show those tools for servers that have no live
connection, marked as cached, with the last connect time (R-CACHE-2). They
are for display only: declarations and calls take live tools only (R-TOOL-3).

The package, one concept a module:

* :mod:`~wave_actors._cache.model`: the immutable records
  (:class:`CachedServer`, :class:`ToolCache`; a snapshot's tools are
  :class:`~wave_actors._listing.ServerTool` records);
* :mod:`~wave_actors._cache.file`: the file, its format, reading that never
  fails (R-CACHE-3) and the locked, atomic read-modify-write (R-CACHE-4);
  synchronous, for worker threads, importing neither ``mcp`` nor ``trio``;
* :mod:`~wave_actors._cache.session`: :class:`SessionToolCache`, a session's
  view of the cache and the task in its nursery that writes its snapshots.

Callers import from here: :mod:`wave_actors._session` (the view and writer),
:mod:`wave_actors._parameters` (reading at session creation),
:mod:`wave_actors._catalog` (showing cached tools) and ``wave-actors
servers`` (:mod:`wave_actors._cli.servers`, reading without a session).
"""

from wave_actors._cache.file import (
    CACHE_FILE_NAME as CACHE_FILE_NAME,
    cache_file as cache_file,
    read_cache as read_cache,
    update_cache as update_cache,
)
from wave_actors._cache.model import (
    EMPTY_CACHE as EMPTY_CACHE,
    CachedServer as CachedServer,
    ToolCache as ToolCache,
)
from wave_actors._cache.session import SessionToolCache as SessionToolCache

__all__ = [
    "CACHE_FILE_NAME",
    "EMPTY_CACHE",
    "CachedServer",
    "SessionToolCache",
    "ToolCache",
    "cache_file",
    "read_cache",
    "update_cache",
]
