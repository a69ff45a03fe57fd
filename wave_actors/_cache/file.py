"""The tool snapshot cache file: its place, its format, reading it and writing it (R-CACHE-1, R-CACHE-3..5).

The file::

    {"format": 1, "servers": [{"server": "files", "fingerprint": "1daac43bdf002ce1",
                               "workdir": "/home/me/project", "last_connected": 1767225600.0,
                               "tools": [{"name": "search", "description": "...",
                                          "input_schema": {...}, "read_only_hint": true}],
                               "warnings": ["tool 'broken' skipped: ..."]}]}

It holds names, fingerprints, workdirs and what servers said about their
tools, including the tools a listing skipped as invalid (``warnings``; an
entry written without them has none): no ``env`` value, no header, no URL
(R-CACHE-5, R-CFG-12).

Reading never fails (R-CACHE-3): a missing file, one that is not a regular
file, too big, not UTF-8, not JSON or of the wrong shape is an empty cache,
logged at debug level; an entry of the wrong shape is skipped alone. The
next write replaces whatever was there. Sessions of one workdir may share
what they read (``read_cache(..., shared=True)``), keyed by the content's
hash.

Writing (R-CACHE-4) is a read-modify-write under an exclusive lock on
``mcp-tools-cache.json.lock`` (see :mod:`wave_actors._config.atomic` for why
``flock``), ending in an atomic replacement, so two processes sharing the file
never drop each other's entries and a writer killed mid-write leaves the old
file readable. A write prunes only entries of its own workdir whose server
and fingerprint are no longer configured: a host serving several projects
never deletes another project's snapshots.

:func:`read_cache` and :func:`update_cache` are synchronous, for worker
threads, and import neither ``mcp`` nor ``trio``. Their callers:
:mod:`wave_actors._parameters` and ``wave-actors servers`` read,
:class:`~wave_actors._cache.writer.ToolCacheWriter` writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, cast

from wave_actors._cache.model import EMPTY_CACHE, CachedServer, ToolCache
from wave_actors._config.atomic import exclusive_lock, remove_stale_temporaries, replace_atomically
from wave_actors._config.sources import UnreadableFile, default_home, read_file_bytes
from wave_actors._listing import ServerTool

__all__ = ["CACHE_FILE_NAME", "FORMAT", "LOCK_TIMEOUT", "MAX_CACHE_BYTES", "cache_file", "read_cache", "update_cache"]

logger = logging.getLogger(__name__)

CACHE_FILE_NAME: Final = "mcp-tools-cache.json"
"""The cache file, in the wave home directory (R-CACHE-1)."""

FORMAT: Final = 1
"""The file format written; a file of another format is an empty cache."""

MAX_CACHE_BYTES: Final = 32 * 1024 * 1024
"""The largest cache file read. Tool schemas make a cache far bigger than a
configuration file (a server with a hundred tools lists a few hundred KB), so
the limit is not :data:`~wave_actors._config.MAX_FILE_BYTES`."""

LOCK_TIMEOUT: Final = 10.0
"""Seconds :func:`update_cache` waits by default for another writer's lock before it gives up."""

_OPEN_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)


def cache_file(home: Path | str | None) -> Path:
    """``<home>/mcp-tools-cache.json``; ``None`` means ``~/.wave`` (R-CACHE-1)."""
    return (default_home() if home is None else Path(home).expanduser()) / CACHE_FILE_NAME


def _lock_file(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


# Reading.


class _Unusable(Exception):
    """The cache file exists but cannot be used; the message says why, for the debug log."""


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when it is missing; never opens anything but a regular file."""
    try:
        return read_file_bytes(path, limit=MAX_CACHE_BYTES, what="the tool snapshot cache")
    except FileNotFoundError:
        return None
    except UnreadableFile as error:
        raise _Unusable(str(error)) from error


def _tool_of(value: object) -> ServerTool | None:
    if not isinstance(value, dict):
        return None
    fields = cast(dict[str, object], value)
    name, description = fields.get("name"), fields.get("description", "")
    schema, read_only = fields.get("input_schema", {}), fields.get("read_only_hint")
    if (
        not isinstance(name, str)
        or not isinstance(description, str)
        or not isinstance(schema, dict)
        or not isinstance(read_only, bool | None)
    ):
        return None
    return ServerTool(name, description, cast(dict[str, Any], schema), read_only)


def _server_of(value: object) -> CachedServer | None:
    if not isinstance(value, dict):
        return None
    fields = cast(dict[str, object], value)
    server, fingerprint, workdir = fields.get("server"), fields.get("fingerprint"), fields.get("workdir")
    last_connected, listed = fields.get("last_connected"), fields.get("tools")
    warnings = fields.get("warnings", [])
    if (
        not isinstance(server, str)
        or not isinstance(fingerprint, str)
        or not isinstance(workdir, str)
        or isinstance(last_connected, bool)
        or not isinstance(last_connected, int | float)
        or not isinstance(listed, list)
        or not isinstance(warnings, list)
        or not all(isinstance(warning, str) for warning in cast(list[object], warnings))
    ):
        return None
    tools = [_tool_of(tool) for tool in cast(list[object], listed)]
    if any(tool is None for tool in tools):
        return None
    return CachedServer(
        server,
        fingerprint,
        workdir,
        float(last_connected),
        tuple(cast(list[ServerTool], tools)),
        tuple(cast(list[str], warnings)),
    )


def _parse(data: bytes) -> list[object]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _Unusable(f"not a JSON document ({type(error).__name__})") from error
    if not isinstance(document, dict):
        raise _Unusable("not a JSON object")
    fields = cast(dict[str, object], document)
    if fields.get("format") != FORMAT:
        raise _Unusable(f"not of format {FORMAT}")
    servers = fields.get("servers")
    if not isinstance(servers, list):
        raise _Unusable('"servers" is not a list')
    return cast(list[object], servers)


# Sessions of one workdir share what they read: a chat bridge holds a session per conversation, all in one
# project, and each holding its own copy of every tool schema would cost memory per idle session (R-HOST-3).
# Keyed by the content's hash, so a changed file is never served stale; a few entries only.
_SHARED: Final[OrderedDict[tuple[bytes, str | None], ToolCache]] = OrderedDict()
_SHARED_LOCK: Final = threading.Lock()
_SHARED_SIZE: Final = 8


def read_cache(path: Path, *, workdir: str | None = None, shared: bool = False) -> ToolCache:
    """Read the cache; never raises (R-CACHE-3).

    :param path: the cache file (:func:`cache_file`).
    :param workdir: keep only the entries of this resolved workdir (a
        session's; fingerprints of other workdirs never match its servers).
        ``None`` keeps every entry.
    :param shared: return the same (immutable) :class:`ToolCache` to every
        reader of the same content and workdir, instead of parsing again.
    :returns: the entries; :data:`EMPTY_CACHE` when the file is missing or
        unusable, without entries of the wrong shape.
    """
    try:
        data = _read_bytes(path)
    except _Unusable as problem:
        logger.debug("tool snapshot cache %s ignored: %s", path, problem)
        return EMPTY_CACHE
    if data is None:
        return EMPTY_CACHE
    if not shared:
        return _cache_of(data, path, workdir)
    key = (hashlib.blake2b(data, digest_size=16).digest(), workdir)
    with _SHARED_LOCK:
        cache = _SHARED.get(key)
        if cache is not None:
            _SHARED.move_to_end(key)
            return cache
    cache = _cache_of(data, path, workdir)
    with _SHARED_LOCK:
        _SHARED[key] = cache
        while len(_SHARED) > _SHARED_SIZE:
            _SHARED.popitem(last=False)
    return cache


def _cache_of(data: bytes, path: Path, workdir: str | None) -> ToolCache:
    try:
        servers = _parse(data)
    except _Unusable as problem:
        logger.debug("tool snapshot cache %s ignored: %s", path, problem)
        return EMPTY_CACHE
    entries: dict[tuple[str, str], CachedServer] = {}
    skipped = 0
    for value in servers:
        entry = _server_of(value)
        if entry is None:
            skipped += 1
        elif workdir is None or entry.workdir == workdir:
            entries[entry.key] = entry
    if skipped:
        logger.debug("tool snapshot cache %s: %d entries of the wrong shape ignored", path, skipped)
    return ToolCache(entries) if entries else EMPTY_CACHE


# Writing.


def _mapping_as_dict(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, object], value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def _encode_entry(entry: CachedServer) -> str | None:
    document = {
        "server": entry.server,
        "fingerprint": entry.fingerprint,
        "workdir": entry.workdir,
        "last_connected": entry.last_connected,
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "read_only_hint": tool.read_only_hint,
            }
            for tool in entry.tools
        ],
        "warnings": list(entry.warnings),
    }
    try:
        # ASCII escapes: a lone surrogate in a server's description must not make the file unwritable.
        return json.dumps(document, separators=(",", ":"), default=_mapping_as_dict, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        logger.debug("tool snapshot of %r not cached: %s", entry.server, error)
        return None


def _encode(entries: Iterable[CachedServer]) -> bytes:
    encoded = [text for entry in entries if (text := _encode_entry(entry)) is not None]
    return f'{{"format":{FORMAT},"servers":[{",".join(encoded)}]}}\n'.encode("ascii")


def update_cache(
    path: Path,
    *,
    workdir: str,
    configured: Collection[tuple[str, str]],
    updates: Iterable[CachedServer],
    lock_timeout: float = LOCK_TIMEOUT,
) -> None:
    """Record ``updates`` and prune ``workdir``'s entries that are no longer configured (R-CACHE-1, R-CACHE-4).

    Under the cache's lock: read the file (an unusable one counts as empty),
    replace the entries of the updates' keys, drop the entries of ``workdir``
    whose ``(server, fingerprint)`` is not in ``configured`` (an update
    included), and replace the file atomically. Entries of other workdirs are
    kept as they are. The home directory is created when missing.

    :param path: the cache file (:func:`cache_file`).
    :param workdir: the writer's resolved workdir.
    :param configured: ``(server, fingerprint)`` of every server the writer has configured now.
    :param updates: the new snapshots, all of ``workdir``.
    :param lock_timeout: seconds to wait for another writer.
    :raises OSError: the lock or the file could not be had or written
        (:class:`~wave_actors._config.atomic.LockTimeout` included); the file is unchanged.
    """
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    keep = set(configured)
    with exclusive_lock(_lock_file(path), timeout=lock_timeout):
        remove_stale_temporaries(path)
        entries = dict(read_cache(path).entries)
        entries.update((update.key, update) for update in updates)
        for key, entry in list(entries.items()):
            if entry.workdir == workdir and key not in keep:
                del entries[key]
        try:
            status = os.stat(path)
        except OSError:
            mode = 0o600  # tool descriptions may say more than their owner wants to share
        else:
            mode = stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else 0o600
            if stat.S_ISDIR(status.st_mode):
                os.rmdir(path)  # an empty directory in the cache's place is repaired too; a full one is an error
        # Not durable: losing the latest snapshot to a power failure costs a redraw, not a whole file.
        replace_atomically(path, _encode(entries.values()), mode=mode, durable=False)
