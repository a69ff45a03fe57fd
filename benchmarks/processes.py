"""Finding, attributing and killing the processes a benchmark started.

Importing this module gives the current process a fresh :data:`RUN_VARIABLE`
value (a worker started with :data:`INHERIT_VARIABLE` keeps its parent's). Every process started afterwards inherits it -- MCP servers (the
library and the SDK both pass the parent environment on), their children,
``setsid`` and double-forked grandchildren -- so a process carrying this run's
value was started by this run even after it re-parented to init, and a
process without it (another test run on the same machine, say) is never
counted or killed.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Final

import psutil

from benchmarks import sampler
from wave_actors.testing import FAULT_SERVER_PATH

RUN_VARIABLE: Final = "WAVE_BENCH_RUN"
"""Environment variable tagging every process started by this benchmark process."""

FAMILY_VARIABLE: Final = "WAVE_ACTORS_FAMILY"
"""The library's per-spawn family tag (see ``wave_actors/transport/proctree.py``)."""

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


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def descendants() -> list[psutil.Process]:
    """Live (non-zombie) descendants of this process."""
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    return [child for child in children if _alive(child)]


def _environ(process: psutil.Process) -> dict[str, str]:
    try:
        return process.environ()
    except (psutil.Error, OSError):
        return {}


def marked(variable: str = RUN_VARIABLE, value: str | None = RUN_MARK) -> list[psutil.Process]:
    """Live processes whose environment has ``variable`` (equal to ``value`` unless it is ``None``)."""
    me = os.getpid()
    found: list[psutil.Process] = []
    for process in psutil.process_iter():
        if process.pid == me:
            continue
        environ = _environ(process)
        if variable in environ and (value is None or environ[variable] == value) and _alive(process):
            found.append(process)
    return found


def leftovers() -> list[psutil.Process]:
    """Every live process this run started: descendants, plus anything carrying this run's mark.

    The library tags each server family with ``WAVE_ACTORS_FAMILY``; other
    runs on the machine do too, so the run mark is what attributes a
    re-parented family member to *this* run.
    """
    found = {process.pid: process for process in descendants()}
    for process in marked():
        found.setdefault(process.pid, process)
    return list(found.values())


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


def kill(processes: Iterable[psutil.Process], *, timeout: float = 5.0) -> int:
    """SIGKILL every process and wait (bounded) until each is dead; return how many were signalled.

    Dead means gone or a zombie: an orphan's zombie lasts until init reaps it,
    which in some containers takes a second.
    """
    signalled: list[psutil.Process] = []
    for process in processes:
        try:
            process.send_signal(signal.SIGKILL)
            signalled.append(process)
        except psutil.Error:
            continue
    deadline = time.monotonic() + timeout
    remaining = signalled
    while remaining and time.monotonic() < deadline:
        time.sleep(0.005)
        remaining = [process for process in remaining if _alive(process)]
    return len(signalled)


def servers_by_marker(prefix: str) -> Counter[str]:
    """Live fault servers among this process's children, counted by their argv argument starting with ``prefix``.

    The library spawns every stdio server as a direct child of this process;
    grandchildren do not carry the marker in argv, so only servers count.
    """
    return sampler.count_markers(os.getpid(), _FAULT_SERVER, prefix)
