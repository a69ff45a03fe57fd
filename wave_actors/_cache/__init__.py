"""The tool snapshot cache: what each server listed the last time it connected (R-CACHE-1..5).

Lazy dial (R-DIAL-1) means a fresh session has connected nothing, yet a
status display should still show what each server offers. After every
successful connect and every tool refresh, the server's owner (a session, or
a project that shares its connections) records the server's
tools in ``<home>/mcp-tools-cache/``, one file per server name and
fingerprint under a directory per workdir (R-CACHE-1; the fingerprint covers
the connection and the workdir, R-CFG-8).
A session's statuses show those tools for servers that have no live
connection, marked as cached, with the last connect time (R-CACHE-2). They
are for display only: declarations and calls take live tools only (R-TOOL-3).

The package, one concept a module:

* :mod:`~wave_actors._cache.model`: the immutable records
  (:class:`CachedServer`, :class:`ToolCache`; a snapshot's tools are
  :class:`~wave_actors._listing.ServerTool` records);
* :mod:`~wave_actors._cache.codec`: one entry's bytes, its JSON format
  decoded strictly and encoded within a bound;
* :mod:`~wave_actors._cache.file`: the files, reading that
  never fails (R-CACHE-3), atomic writes that need no lock (R-CACHE-4), the
  budget (R-CACHE-6), never a write through a link (R-CACHE-7) and the
  former single file (R-CACHE-8); synchronous, for worker threads, importing
  neither ``mcp`` nor ``trio``;
* :mod:`~wave_actors._cache.writer`: :class:`ToolCacheWriter`, an owner's
  view of the cache and the task in its nursery that writes its snapshots.

Modules outside the package import from here, never from its modules.
"""

from wave_actors._cache.file import (
    CACHE_DIRECTORY_NAME as CACHE_DIRECTORY_NAME,
    cache_directory as cache_directory,
    read_cache as read_cache,
    update_cache as update_cache,
)
from wave_actors._cache.model import (
    EMPTY_CACHE as EMPTY_CACHE,
    CachedServer as CachedServer,
    ToolCache as ToolCache,
)
from wave_actors._cache.writer import ToolCacheWriter as ToolCacheWriter

__all__ = [
    "CACHE_DIRECTORY_NAME",
    "EMPTY_CACHE",
    "CachedServer",
    "ToolCache",
    "ToolCacheWriter",
    "cache_directory",
    "read_cache",
    "update_cache",
]
