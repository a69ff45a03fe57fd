"""Attributing and classifying the processes a benchmark started; finding them is the census's job.

Importing this module gives the current process a fresh :data:`RUN_VARIABLE`
value (a worker started with :data:`INHERIT_VARIABLE` keeps its parent's).
Every process started afterwards inherits it -- MCP servers (the library and
the SDK both pass the parent environment on), their children, ``setsid`` and
double-forked grandchildren -- so :func:`leftovers`, the
:func:`~wave_actors.testing.process_census` of this run's mark, finds what
this run started even after it re-parented to init, and never a process of
another run on the same machine. :func:`wave_actors.testing.kill_processes`
kills them.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Final

import psutil

from benchmarks import sampler
from wave_actors.testing import FAULT_SERVER_PATH, process_census

RUN_VARIABLE: Final = "WAVE_BENCH_RUN"
"""Environment variable tagging every process started by this benchmark process."""

INHERIT_VARIABLE: Final = "WAVE_BENCH_RUN_INHERIT"
"""Set to ``1`` in a worker's environment to make it keep its parent's run mark."""

RUN_MARK: Final = (
    os.environ[RUN_VARIABLE]
    if os.environ.get(INHERIT_VARIABLE) == "1" and os.environ.get(RUN_VARIABLE)
    else uuid.uuid4().hex
)
os.environ[RUN_VARIABLE] = RUN_MARK
os.environ.pop(INHERIT_VARIABLE, None)

_FAULT_SERVER: Final = str(FAULT_SERVER_PATH)


def leftovers() -> list[psutil.Process]:
    """Every live process this run started: descendants, plus anything carrying this run's mark.

    The library tags each server family with
    :data:`~wave_actors.testing.FAMILY_VARIABLE`; other runs on the machine do
    too, so the run mark is what attributes a re-parented family member to
    *this* run.
    """
    return process_census(RUN_VARIABLE, RUN_MARK)


def kind(process: psutil.Process) -> str:
    """``server``, ``grandchild``, ``setsid grandchild`` or ``other``, from argv and session."""
    try:
        cmdline = process.cmdline()
        if _FAULT_SERVER in cmdline:
            return "server"
        if "-c" in cmdline and any("signal.pause()" in argument for argument in cmdline):
            return "setsid grandchild" if os.getsid(process.pid) == process.pid else "grandchild"
    except (psutil.Error, OSError):
        pass
    return "other"


def kinds(processes: Iterable[psutil.Process]) -> Counter[str]:
    """How many processes of each :func:`kind`."""
    return Counter(kind(process) for process in processes)


def servers_by_marker(prefix: str) -> Counter[str]:
    """Live fault servers among this process's children, counted by their argv argument starting with ``prefix``.

    The library spawns every stdio server as a direct child of this process;
    grandchildren do not carry the marker in argv, so only servers count.
    """
    return sampler.count_markers(os.getpid(), _FAULT_SERVER, prefix)
