"""Replacing a file atomically, and the inter-process lock around read-modify-write (R-CACHE-4, R-STORE-1).

Two things: the configuration store (:mod:`wave_actors._config.store`) uses
both, the tool snapshot cache (:mod:`wave_actors._cache.file`), whose writes
replace whole files and need no lock, the first:

* :func:`replace_atomically` writes new content to a temporary file in the
  target's directory, flushes it to disk, renames it over the target and
  flushes the directory. A reader sees the old file or the new one, never a
  mix; a writer killed at any point (SIGKILL included) leaves the old file
  whole, plus at most a stray temporary file that :func:`remove_stale_temporaries`
  clears later.
* :func:`exclusive_lock` holds an exclusive ``flock`` on a file or directory for
  the span of a read-modify-write, so two writers never both read the same old
  content and drop each other's change.

Why ``fcntl.flock`` (the standard library) and not a locking package, or POSIX
record locks (``fcntl.lockf``):

* the kernel releases a ``flock`` when its holder dies, SIGKILL included, so
  there is no stale lock file to detect or break (a lock file that merely
  *exists* would need exactly that);
* it belongs to the open file, not to the process: two threads of one host
  (two sessions editing a file from worker threads) exclude each other
  too. POSIX record locks are per process and are dropped when the process
  closes *any* descriptor of the file, which a second writer thread does;
* ``flock`` works on a directory descriptor, so a configuration file can be
  locked through its directory without creating a lock file next to a
  project's ``.mcp.json``;
* the locking packages (``filelock``, ``portalocker``) use ``flock`` on POSIX
  themselves; what they add is Windows support, and process reclamation
  (:mod:`wave_actors._transport.reclamation`) is POSIX-first already. On a
  platform without ``fcntl`` the lock is a no-op: writes stay atomic, only
  concurrent writers may lose an update.

Locks are taken without blocking, retried with a short back-off until a
deadline, so a holder that hangs (a stopped process) costs a bounded wait and
an error, never a stuck thread.

Everything here is synchronous and meant for worker threads.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Generator
from pathlib import Path
from typing import Final

__all__ = ["LockTimeout", "exclusive_lock", "remove_stale_temporaries", "replace_atomically", "temporary_prefix"]

if sys.platform != "win32":
    import fcntl

_FIRST_RETRY: Final = 0.0002
_LONGEST_RETRY: Final = 0.002


class LockTimeout(OSError):
    """Another process held the lock past the deadline."""


@contextlib.contextmanager
def exclusive_lock(path: Path, *, timeout: float, directory: bool = False) -> Generator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the ``with`` block.

    :param path: the lock file (created when missing, never removed: removing
        it would let two writers lock two different files) or, with
        ``directory=True``, an existing directory.
    :param timeout: seconds to wait for another holder before giving up.
    :param directory: lock a directory instead of a file.
    :raises LockTimeout: the lock stayed held by someone else for ``timeout`` seconds.
    :raises OSError: the lock file cannot be created or the directory opened.
    """
    if directory:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    else:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        _acquire(descriptor, path, timeout)
        yield  # closing the descriptor releases the lock
    finally:
        os.close(descriptor)


def _acquire(descriptor: int, path: Path, timeout: float) -> None:
    if sys.platform == "win32":  # pragma: no cover - no flock: atomic replacement only
        return
    deadline = time.monotonic() + timeout
    delay = _FIRST_RETRY
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        now = time.monotonic()
        if now >= deadline:
            raise LockTimeout(f"{path} stayed locked by another process for {timeout:g} s")
        time.sleep(min(delay, deadline - now))
        delay = min(delay * 2, _LONGEST_RETRY)


def temporary_prefix(target: Path) -> str:
    """The name prefix of ``target``'s temporary files: ``.<name>.`` (they end in ``.tmp``)."""
    return f".{target.name}."


def remove_stale_temporaries(target: Path) -> None:
    """Remove temporary files that writers of ``target`` left behind when they died mid-write.

    Call it only while holding the lock every writer of ``target`` takes: a
    writer creates, fills and renames its temporary file inside the lock, so
    any temporary file present then belongs to a writer that is gone.
    Failures are ignored (the next writer tries again).

    :param target: the file whose temporaries to remove.
    """
    prefix = temporary_prefix(target)
    with contextlib.suppress(OSError), os.scandir(target.parent) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _create_temporary(target: Path, mode: int | None) -> tuple[int, str]:
    """A new temporary file beside ``target``: its descriptor and path.

    With ``mode`` ``None`` it is created ``0o666`` and the kernel takes the
    process's umask (and a default ACL of the directory) off it, as for any
    new file: reading the umask would mean changing it, for every thread.
    """
    if mode is not None:
        return tempfile.mkstemp(prefix=temporary_prefix(target), suffix=".tmp", dir=target.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    while True:
        path = os.path.join(target.parent, f"{temporary_prefix(target)}{secrets.token_hex(8)}.tmp")
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue


def replace_atomically(
    target: Path, data: bytes, *, mode: int | None, owner: tuple[int, int] | None = None, durable: bool = True
) -> None:
    """Replace ``target``'s content with ``data``: a temporary file, fsync, rename, fsync of the directory.

    On failure the temporary file is removed and ``target`` is as it was.

    :param target: the file (not a symbolic link: the link itself would be replaced).
    :param data: the new content.
    :param mode: the permission bits of the new file; ``None``: those of any
        new file, ``0o666`` less the process's umask.
    :param owner: ``(uid, gid)`` to give the new file, when it replaces one of
        another owner (a file edited by root stays its user's); ignored when
        not permitted.
    :param durable: also flush the directory, so that the rename itself
        survives a power failure; a cache that may lose its latest update can
        skip it (the file is whole either way).
    :raises OSError: the file could not be written; ``target`` is unchanged.
    """
    descriptor, temporary = _create_temporary(target, mode)
    try:
        try:
            if mode is not None:
                os.fchmod(descriptor, mode)
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(descriptor, *owner)
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if not durable:
        return
    # The rename is durable only once the directory is; not every platform can open one.
    with contextlib.suppress(OSError):
        directory = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
