"""The tool snapshot cache on disk: one file per snapshot, a directory per workdir (R-CACHE-1, R-CACHE-3..6).

The layout::

    <home>/mcp-tools-cache/                   the cache: a directory of ours, 0700
        <workdir key>/                        one per workdir: 32 hex digits of its BLAKE2b
            <entry key>.json                  one per (server, fingerprint): 32 hex digits too

and each entry file::

    {"format": 2, "server": "files", "fingerprint": "1daac43bdf002ce1",
     "workdir": "/home/me/project", "last_connected": 1767225600.0,
     "tools": [{"name": "search", "description": "...", "input_schema": {...}, "read_only_hint": true}],
     "warnings": ["tool 'broken' skipped: ..."]}

It holds names, fingerprints, workdirs and what servers said about their
tools, including the tools a listing skipped as invalid (``warnings``): no
``env`` value, no header, no URL (R-CACHE-5, R-CFG-12).

Bounded by design (R-CACHE-6). A session reads the files of its own
configured servers, and nothing else: what other projects cached never costs
it a byte. One file is at most :data:`MAX_ENTRY_BYTES`; a snapshot that would
be bigger is not written (the session still shows it), so no parse or encode
holds the GIL (and every other session's event loop) for long: ``json``
keeps it for the whole of one document, in a worker thread too. A write
replaces whole files atomically, so writers need no lock and never drop each
other's snapshots: two hosts writing the same snapshot leave one of the two,
whole. The cache as a whole stays under :data:`MAX_TOTAL_BYTES` and
:data:`MAX_ENTRIES`: past either, a write removes the workdirs written least
recently, never the writer's own.

Reading never fails (R-CACHE-3): a missing entry, one that is not a regular
file of ours, too big, not UTF-8, not JSON, of another format, of the wrong
shape, or of another key is no entry, logged at debug level. Sessions of one
workdir may share what they read (``read_cache(..., shared=True)``), keyed by
each file's content hash.

Never through a link, never into anything not ours (R-CACHE-7): the cache
directory, a workdir's directory and an entry are used only when they are a
real directory or a regular file owned by this user (never followed through
a symbolic link). A cache directory that is anything else, or the former
single file ``mcp-tools-cache.json`` (or its ``.lock``) that is a symbolic
link or anything but a regular file of ours, means the cache is off, said
once per process in a warning: linking the file to ``/dev/null`` was how one
switched the cache off, and still is (so is making ``mcp-tools-cache``
anything but a directory).

The former single file is read once (R-CACHE-8): the first write of a
process that finds it (a regular file of ours) moves its snapshots into the
layout, never over a newer one, one entry at a time so that no parse holds
the GIL for long, then removes it and its lock file.

:func:`read_cache` and :func:`update_cache` are synchronous, for worker
threads, and import neither ``mcp`` nor ``trio``. Their callers:
:mod:`wave_actors._parameters` and ``wave-actors servers`` read,
:class:`~wave_actors._cache.writer.ToolCacheWriter` writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Final

from wave_actors._cache.codec import FORMAT, MAX_ENTRY_BYTES, UnusableEntry, decode_entry, encode_entry, server_of
from wave_actors._cache.model import EMPTY_CACHE, CachedServer, ToolCache
from wave_actors._config.atomic import replace_atomically, temporary_prefix
from wave_actors._config.sources import default_home, file_kind

__all__ = [
    "CACHE_DIRECTORY_NAME",
    "FORMAT",
    "LEGACY_FILE_NAME",
    "MAX_ENTRIES",
    "MAX_ENTRY_BYTES",
    "MAX_TOTAL_BYTES",
    "cache_directory",
    "entry_path",
    "read_cache",
    "update_cache",
    "workdir_directory",
]

logger = logging.getLogger(__name__)

CACHE_DIRECTORY_NAME: Final = "mcp-tools-cache"
"""The cache's directory, in the wave home directory (R-CACHE-1)."""

LEGACY_FILE_NAME: Final = "mcp-tools-cache.json"
"""The single file the cache once was, beside it: read once, or the cache's off switch (R-CACHE-7, R-CACHE-8)."""


MAX_TOTAL_BYTES: Final = 64 * 1024 * 1024
"""Past this many bytes of entries, a write removes the workdirs written least recently."""

MAX_ENTRIES: Final = 4096
"""Past this many entries, a write removes the workdirs written least recently."""

_LEGACY_LIMIT: Final = 32 * 1024 * 1024
_LEGACY_FORMAT: Final = 1
_STALE_TEMPORARY: Final = 60.0  # seconds: a writer's temporary file older than this was left by a dead one
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
)
_KEY_LENGTH: Final = 32


def cache_directory(home: Path | str | None) -> Path:
    """``<home>/mcp-tools-cache``; ``None`` means ``~/.wave`` (R-CACHE-1)."""
    return (default_home() if home is None else Path(home).expanduser()) / CACHE_DIRECTORY_NAME


def _key(*parts: str) -> str:
    data = "\0".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=_KEY_LENGTH // 2).hexdigest()


def workdir_directory(directory: Path, workdir: str) -> Path:
    """Where the snapshots of ``workdir`` live in the cache ``directory``."""
    return directory / _key(workdir)


def entry_path(directory: Path, workdir: str, server: str, fingerprint: str) -> Path:
    """The file of the snapshot of ``server`` as ``fingerprint`` configures it, for ``workdir``."""
    return workdir_directory(directory, workdir) / f"{_key(server, fingerprint)}.json"


# What is ours, and when the cache is off.


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(path: Path, reason: str) -> None:
    with _warned_lock:
        if (str(path), reason) in _warned:
            return
        _warned.add((str(path), reason))
    logger.warning("tool snapshot cache off: %s %s; nothing is read from it or written through it", path, reason)


def _not_ours(path: Path, *, directory: bool) -> str | None:
    """Why ``path`` is not a real directory (or regular file) owned by this user; ``None`` if it is, or is missing."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot be examined ({error.strerror or error})"
    wanted = stat.S_ISDIR if directory else stat.S_ISREG
    if not wanted(status.st_mode):
        return f"is {file_kind(status.st_mode)}, not a {'directory' if directory else 'regular file'}"
    if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        return f"belongs to user {status.st_uid}, not to this one"
    return None


def _off(directory: Path) -> bool:
    """Whether the cache is off: its directory, or the former file or its lock, is not ours (R-CACHE-7)."""
    legacy = directory.with_name(LEGACY_FILE_NAME)
    for path, is_directory in ((directory, True), (legacy, False), (legacy.with_name(legacy.name + ".lock"), False)):
        reason = _not_ours(path, directory=is_directory)
        if reason is not None:
            _warn_once(path, reason)
            return True
    return False


# Reading.


def _read_entry_bytes(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when it is missing; never opens anything but a regular file of ours."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UnusableEntry(
            f"cannot be opened ({error.strerror or error}; a symbolic link is never followed)"
        ) from error
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnusableEntry(f"is {file_kind(status.st_mode)}, not a regular file")
        if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
            raise UnusableEntry(f"belongs to user {status.st_uid}")
        if status.st_size > MAX_ENTRY_BYTES:
            raise UnusableEntry(f"is {status.st_size} bytes, over {MAX_ENTRY_BYTES}")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(descriptor, MAX_ENTRY_BYTES + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ENTRY_BYTES:
                raise UnusableEntry(f"grew over {MAX_ENTRY_BYTES} bytes")
        return b"".join(chunks)
    except OSError as error:
        raise UnusableEntry(f"cannot be read ({error.strerror or error})") from error
    finally:
        os.close(descriptor)


# Sessions of one workdir share what they read: a chat bridge holds a session per conversation, all in one
# project, and each holding its own copy of every tool schema would cost memory per idle session (R-HOST-3).
# Keyed by the content's hash, so a changed file is never served stale; a few dozen entries only.
_SHARED: Final[OrderedDict[bytes, CachedServer]] = OrderedDict()
_SHARED_LOCK: Final = threading.Lock()
_SHARED_SIZE: Final = 64


def _shared_entry(data: bytes, workdir: str, key: tuple[str, str]) -> CachedServer:
    digest = hashlib.blake2b(b"\0".join([data, workdir.encode("utf-8", "surrogatepass")]), digest_size=16).digest()
    with _SHARED_LOCK:
        entry = _SHARED.get(digest)
        if entry is not None and entry.key == key:
            _SHARED.move_to_end(digest)
            return entry
    entry = decode_entry(data, workdir, key)
    with _SHARED_LOCK:
        _SHARED[digest] = entry
        while len(_SHARED) > _SHARED_SIZE:
            _SHARED.popitem(last=False)
    return entry


def read_cache(directory: Path, *, workdir: str, keys: Iterable[tuple[str, str]], shared: bool = False) -> ToolCache:
    """Read the snapshots of ``keys`` for ``workdir``; never raises (R-CACHE-3).

    :param directory: the cache (:func:`cache_directory`).
    :param workdir: the reader's resolved workdir.
    :param keys: ``(server, fingerprint)`` of the servers the reader has
        configured: the only files read (R-CACHE-6).
    :param shared: return the same (immutable) snapshot to every reader of
        the same file content, instead of parsing it again.
    :returns: the snapshots found; :data:`EMPTY_CACHE` when none is, or the
        cache is off.
    """
    if _off(directory):
        return EMPTY_CACHE
    home = workdir_directory(directory, workdir)
    reason = _not_ours(home, directory=True)
    if reason is not None:
        _warn_once(home, reason)
        return EMPTY_CACHE
    entries: dict[tuple[str, str], CachedServer] = {}
    for key in dict.fromkeys(keys):
        path = entry_path(directory, workdir, *key)
        try:
            data = _read_entry_bytes(path)
            if data is None:
                continue
            entries[key] = _shared_entry(data, workdir, key) if shared else decode_entry(data, workdir, key)
        except UnusableEntry as problem:
            logger.debug("tool snapshot cache: %s (%r) ignored: it %s", path, key[0], problem)
    return ToolCache(entries) if entries else EMPTY_CACHE


# Writing.


def _own_directory(path: Path) -> None:
    """Make ``path`` a directory of ours (0700) if missing; refuse it when it is anything else.

    :raises OSError: it cannot be made, or is not a real directory of this user's.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    reason = _not_ours(path, directory=True)
    if reason is not None:
        _warn_once(path, reason)
        raise NotADirectoryError(f"{path} {reason}")


def _write_entry(directory: Path, workdir: str, entry: CachedServer, data: bytes, *, replace: bool = True) -> None:
    """Write one entry file atomically; ``replace=False`` never replaces one that exists (a migration)."""
    home = workdir_directory(directory, workdir)
    target = entry_path(directory, workdir, *entry.key)
    for attempt in range(2):  # the workdir's directory may be removed by another writer's budget meanwhile
        _own_directory(home)
        try:
            if replace:
                # Not durable: losing the latest snapshot to a power failure costs a redraw, not a whole file.
                replace_atomically(target, data, mode=0o600, durable=False)
            else:
                _write_new(target, data)
            return
        except FileNotFoundError:
            if attempt:
                raise


def _write_new(target: Path, data: bytes) -> None:
    """Write ``target`` only if it does not exist (a hard link of a complete temporary file: never half a file)."""
    temporary = target.with_name(f"{temporary_prefix(target)}{os.urandom(8).hex()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)
        with contextlib.suppress(FileExistsError):
            os.link(temporary, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _prune(home: Path, keep: Collection[str]) -> None:
    """Remove the entries of ``home`` (one workdir's) not named in ``keep``, and dead writers' temporary files."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(home) as found:
        for item in found:
            try:
                unwanted = item.name.endswith(".json") and item.name not in keep
                abandoned = (
                    item.name.endswith(".tmp") and now - item.stat(follow_symlinks=False).st_mtime > _STALE_TEMPORARY
                )
                if unwanted or abandoned:
                    os.unlink(item.path)
            except OSError:
                continue


def _workdirs(directory: Path) -> Iterator[tuple[str, float, int, int]]:
    """``(name, last written, bytes, entries)`` of every workdir directory of the cache."""
    with contextlib.suppress(OSError), os.scandir(directory) as found:
        for item in found:
            if len(item.name) != _KEY_LENGTH or not item.is_dir(follow_symlinks=False):
                continue
            size = count = 0
            try:
                with os.scandir(item.path) as entries:
                    for entry in entries:
                        if entry.name.endswith(".json"):
                            size += entry.stat(follow_symlinks=False).st_size
                            count += 1
                written = item.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            yield item.name, written, size, count


def _remove_workdir(path: str) -> None:
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _within_budget(directory: Path, writer: str) -> None:
    """Remove the workdirs written least recently, never ``writer``'s, until the cache is within its budget."""
    workdirs = sorted(_workdirs(directory), key=lambda found: found[1])
    size = sum(found[2] for found in workdirs)
    count = sum(found[3] for found in workdirs)
    for name, _, bytes_, entries in workdirs:
        if size <= MAX_TOTAL_BYTES and count <= MAX_ENTRIES:
            return
        if name == writer:
            continue
        _remove_workdir(os.path.join(directory, name))
        size -= bytes_
        count -= entries
        logger.debug("tool snapshot cache: the snapshots of a workdir written least recently removed (%s)", name)


def update_cache(
    directory: Path,
    *,
    workdir: str,
    configured: Collection[tuple[str, str]],
    updates: Iterable[CachedServer],
) -> None:
    """Record ``updates`` and prune ``workdir``'s entries that are no longer configured (R-CACHE-1, R-CACHE-4).

    Each update replaces its entry file atomically; then the entries of
    ``workdir`` whose ``(server, fingerprint)`` is not in ``configured`` (an
    update included) are removed, and, past the cache's budget, the
    workdirs written least recently (R-CACHE-6). Entries of other workdirs
    are otherwise left as they are. The cache directory (and the home
    directory) are made when missing. Nothing happens when the cache is off
    (R-CACHE-7). The first write of a process moves the former single file's
    snapshots in (R-CACHE-8).

    :param directory: the cache (:func:`cache_directory`).
    :param workdir: the writer's resolved workdir.
    :param configured: ``(server, fingerprint)`` of every server the writer has configured now.
    :param updates: the new snapshots, all of ``workdir``.
    :raises OSError: a file could not be written; the entries written before it stay.
    """
    if _off(directory):
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    _own_directory(directory)
    _move_in_the_former_file(directory)
    keep = set(configured)
    for update in updates:
        if update.key not in keep:
            continue
        data = encode_entry(update)
        if data is not None:
            _write_entry(directory, workdir, update, data)
    _prune(workdir_directory(directory, workdir), {entry_path(directory, workdir, *key).name for key in keep})
    _within_budget(directory, workdir_directory(directory, workdir).name)


# The former single file (R-CACHE-8).


_looked_at: set[str] = set()  # the caches whose former file this process has looked for
_looking_lock = threading.Lock()


def _legacy_entries(data: bytes) -> Iterator[object]:
    """The server objects of the former file, one parse each: the GIL is let go between two."""
    text = data.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    start = text.find('"servers"')
    start = text.find("[", start) if start >= 0 else -1
    if start < 0 or f'"format":{_LEGACY_FORMAT}' not in text[: start + 1].replace(" ", ""):
        return
    index = start + 1
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            return
        try:
            value, index = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            return
        yield value
        time.sleep(0)  # let the event loops of this process run between two entries


def _move_in_the_former_file(directory: Path) -> None:
    """Move the former single file's snapshots into the layout, then remove it; looked for once per process."""
    with _looking_lock:
        if str(directory) in _looked_at:
            return
        _looked_at.add(str(directory))
    legacy = directory.with_name(LEGACY_FILE_NAME)
    try:
        descriptor = os.open(legacy, _OPEN_FLAGS)
    except OSError:
        return  # missing (the usual case), or not ours to read: the cache is off then anyway
    try:
        status = os.fstat(descriptor)
        chunks: list[bytes] = []
        if stat.S_ISREG(status.st_mode) and status.st_size <= _LEGACY_LIMIT:
            while chunk := os.read(descriptor, 1 << 20):
                chunks.append(chunk)
        else:
            logger.info("tool snapshot cache: the former file %s is too big to read; removed", legacy)
    except OSError:
        return
    finally:
        os.close(descriptor)
    moved = 0
    for value in _legacy_entries(b"".join(chunks)):
        entry = server_of(value)
        data = encode_entry(entry) if entry is not None else None
        if entry is None or data is None:
            continue
        with contextlib.suppress(OSError):
            _write_entry(directory, entry.workdir, entry, data, replace=False)  # a newer snapshot stays
            moved += 1
    for path in (legacy, legacy.with_name(legacy.name + ".lock")):
        with contextlib.suppress(OSError):
            os.unlink(path)
    logger.info("tool snapshot cache: %d snapshot(s) of the former file %s moved to %s", moved, legacy, directory)
