"""What the host-death defences need from Linux: ``prctl``, and collecting an adopted child.

Everything here is a no-op or ``None`` elsewhere: the callers check
:data:`LINUX` and keep today's behaviour on other platforms (R-KILL-7).
``/proc`` is read through the library's one reader,
:mod:`wave_actors._family.procfs`.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Final, cast

from wave_actors._family.procfs import LINUX, read_stat

__all__ = ["LINUX", "PRCTL_AVAILABLE", "prctl", "reap_if_adopted"]

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
