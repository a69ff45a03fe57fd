"""What the host-death defences need from Linux: ``prctl`` and a few lines of ``/proc``.

Everything here is a no-op or ``None`` elsewhere: the callers check
:data:`LINUX` and keep today's behaviour on other platforms (R-KILL-7).

The watchdog program (:mod:`.program`) reads ``/proc`` the same way, with its
own copy of :func:`read_stat`: it runs with the standard library only and
cannot import this module.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Final, cast

import attrs

__all__ = [
    "LINUX",
    "PRCTL_AVAILABLE",
    "ProcessStat",
    "children",
    "family_tag_of",
    "prctl",
    "read_stat",
    "reap_if_adopted",
]

LINUX: Final = sys.platform.startswith("linux")

PR_SET_PDEATHSIG: Final = 1
PR_SET_CHILD_SUBREAPER: Final = 36
PR_GET_CHILD_SUBREAPER: Final = 37


def _load_prctl() -> Callable[..., int] | None:
    if not LINUX:
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    return cast("Callable[..., int]", function)


# Loaded once, in the parent: a forked child about to exec must not load libraries.
_PRCTL: Final = _load_prctl()
PRCTL_AVAILABLE: Final = _PRCTL is not None
"""Whether the watchdog, the parent-death signal and subreaper mode can work here (Linux with ``prctl``)."""


def prctl(option: int, argument: int = 0, pointer: ctypes.c_int | None = None) -> int:
    """Call ``prctl(option, argument)`` (or with ``pointer`` for a ``GET`` option); ``-1`` when unavailable.

    Safe to call in a forked child before exec: no allocation beyond the call itself.
    """
    if _PRCTL is None:
        return -1
    second = ctypes.addressof(pointer) if pointer is not None else argument
    return int(_PRCTL(option, second, 0, 0, 0))


@attrs.frozen
class ProcessStat:
    """The fields of ``/proc/<pid>/stat`` that tell a process apart and place it.

    :param state: one letter; ``Z`` for a zombie.
    :param ppid: its parent.
    :param sid: its session.
    :param start: when it started, in clock ticks since boot: with the pid,
        a process's identity (a pid alone may be reused).
    """

    state: str
    ppid: int
    sid: int
    start: int

    @property
    def zombie(self) -> bool:
        """Whether it has exited and waits for its parent to collect the status."""
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcessStat | None:
    """``/proc/<pid>/stat``, or ``None`` if there is no such process (or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        # The command name is in parentheses and may hold anything, parentheses included.
        fields = data[data.rindex(b")") + 2 :].split()
        return ProcessStat(fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19]))
    except (OSError, ValueError, IndexError):
        return None


def family_tag_of(pid: int, variable: str) -> str | None:
    """The value of ``variable`` in ``pid``'s environment, if we may read it."""
    prefix = variable.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def children() -> list[int]:
    """Every child of this process, whichever of its threads is the parent."""
    found: list[int] = []
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/self/task/{thread}/children", "rb") as handle:
                found.extend(int(pid) for pid in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def reap_if_adopted(pid: int, start: int | None = None) -> bool:
    """Collect ``pid``'s exit status if it is a zombie child of ours (and started at ``start``).

    Only a zombie whose parent is this process can be collected, and nobody
    else can collect it meanwhile, so the pid cannot be reused between the
    check and the ``waitpid``.

    :returns: whether it was reaped.
    """
    stat = read_stat(pid)
    if stat is None or not stat.zombie or stat.ppid != os.getpid() or (start is not None and stat.start != start):
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return True
