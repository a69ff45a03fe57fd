"""The ``prctl`` call (Linux), for the parent-death signal and subreaper mode (R-KILL-6, R-KILL-7).

Loaded once, in the parent: a forked child about to exec must not load
libraries. Elsewhere :data:`PRCTL_AVAILABLE` is false and :func:`prctl`
returns ``-1``; the callers keep today's behaviour there.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Final, cast

from wave_actors._family.procfs import LINUX

__all__ = [
    "PRCTL_AVAILABLE",
    "PR_GET_CHILD_SUBREAPER",
    "PR_SET_CHILD_SUBREAPER",
    "PR_SET_PDEATHSIG",
    "prctl",
]

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


_PRCTL: Final = _load_prctl()
PRCTL_AVAILABLE: Final = _PRCTL is not None
"""Whether the parent-death signal and subreaper mode can work here (Linux with ``prctl``)."""


def prctl(option: int, argument: int = 0, pointer: ctypes.c_int | None = None) -> int:
    """Call ``prctl(option, argument)`` (or with ``pointer`` for a ``GET`` option); ``-1`` when unavailable.

    Safe to call in a forked child before exec: no allocation beyond the call itself.
    """
    if _PRCTL is None:
        return -1
    second = ctypes.addressof(pointer) if pointer is not None else argument
    return int(_PRCTL(option, second, 0, 0, 0))
