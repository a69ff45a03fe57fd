"""The programs a spawn runs besides the server, found only where the system keeps its own (R-KILL-7, R-KILL-10).

A server may be spawned through ``setpriv`` (its parent-death signal) and
``sh`` (entering its family's cgroup). Both see the server's whole command
line and environment, secrets included, so they are never looked up on the
host's ``PATH``: a ``setpriv`` in ``~/.local/bin``,
``node_modules/.bin`` or ``.`` would wrap every server. :func:`trusted_system_program` looks in
:data:`SYSTEM_DIRECTORIES` only, and accepts a file only when it and every
directory on its real path belong to root and cannot be written by anyone
else: only root could have put it there.

Standard library only, like the rest of the leaf.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Final

__all__ = ["SYSTEM_DIRECTORIES", "trusted_system_program"]

SYSTEM_DIRECTORIES: Final = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
"""Where the system's own programs are; nothing of the host's ``PATH``."""


def _root_owned_and_shut(status: os.stat_result) -> bool:
    """Owned by root, and neither its group nor others may change it.

    A sticky directory (``/tmp``) counts as shut: others may add entries to
    it, but never rename or remove one of root's.
    """
    if status.st_uid != 0:
        return False
    return not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (
        stat.S_ISDIR(status.st_mode) and bool(status.st_mode & stat.S_ISVTX)
    )


def _trusted(path: str) -> bool:
    """Whether the file at real path ``path`` and every directory above it are root's alone."""
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or not _root_owned_and_shut(status) or not os.access(path, os.X_OK):
            return False
        directory = os.path.dirname(path)
        while True:
            if not _root_owned_and_shut(os.stat(directory)):
                return False
            parent = os.path.dirname(directory)
            if parent == directory:
                return True
            directory = parent
    except OSError:
        return False


def trusted_system_program(name: str, directories: Sequence[str] = SYSTEM_DIRECTORIES) -> str | None:
    """The real path of the program ``name`` in the first of ``directories`` holding a trusted one, or ``None``.

    Blocking: a few ``stat`` calls. A candidate is followed through its
    symbolic links (``/bin`` is a link to ``/usr/bin`` on many systems), and
    accepted only when the file it ends at is executable and it and every
    directory above it are owned by root and not writable by group or others
    (a sticky directory aside: nobody else can replace root's entries there).

    :param name: the program's file name, no directory.
    :param directories: where to look, in order (absolute paths).
    """
    for directory in directories:
        if not os.path.isabs(directory):
            continue
        real = os.path.realpath(os.path.join(directory, name))
        if _trusted(real):
            return real
    return None
