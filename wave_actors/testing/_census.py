"""The process census: every live process a program started, wherever it went (R-KILL-1, R-KILL-4).

A test that starts MCP servers should end with none of them alive, and none of
their children either. The descendants of the current process are easy to
list, but a ``setsid`` or double-forked grandchild is re-parented to init (or
a subreaper) as soon as its parent dies, and leaves the tree. It keeps its
environment, though. So a program marks everything it starts: it sets an
environment variable to a value of its own before starting anything (or
overlays it on a server entry's ``env``), and the census counts every live
process that carries that value, besides the descendants.

The runtime itself stamps :data:`~wave_actors.testing.FAMILY_VARIABLE` on every stdio server it
spawns, with a fresh value per spawn, so ``process_census(FAMILY_VARIABLE)``
finds the server families of every wave-actors program on the machine; a mark
of your own is what attributes a family to *your* program.

Zombies never count: a zombie has exited, and only its exit status waits to be
collected by its parent (an orphan's by init, which some containers do late).

Everything here reads ``/proc`` (environments through the library's one reader,
:mod:`wave_actors._family.procfs`; the rest through psutil) and blocks for a few
milliseconds per few hundred processes: from trio, call it through
``trio.to_thread.run_sync``.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from typing import Final

import psutil

from wave_actors._family.procfs import LINUX, read_environment_variable
from wave_actors._transport.proctree import live_processes

__all__ = [
    "describe",
    "escaped_processes",
    "is_alive",
    "kill_processes",
    "leftover_processes",
    "process_census",
]

# Polling bounds for waits on processes that are not our children (nothing to wait() on).
_POLL_INTERVAL: Final = 0.05
_DESCRIPTION_LIMIT: Final = 200


def is_alive(process: psutil.Process | int) -> bool:
    """Whether ``process`` (a process or a pid) still runs: it exists and is not a zombie.

    :param process: a :class:`psutil.Process` or a pid. A pid may have been
        reused by a new process; a :class:`psutil.Process` remembers its
        creation time and never mistakes a newcomer for the process it named.
    """
    try:
        if isinstance(process, int):
            process = psutil.Process(process)
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _descendants(me: psutil.Process) -> list[psutil.Process]:
    try:
        return me.children(recursive=True)
    except psutil.Error:
        return []


def _carries(process: psutil.Process, mark_variable: str, mark: str | None) -> bool:
    if LINUX:
        value = read_environment_variable(process.pid, mark_variable)  # None: unset, gone, or not ours to read
    else:  # pragma: no cover - platforms without /proc
        try:
            value = process.environ().get(mark_variable)
        except (psutil.Error, OSError):
            return False  # gone, or not ours to read
    return value is not None and (mark is None or value == mark)


def process_census(
    mark_variable: str | None = None, mark: str | None = None, *, descendants: bool = True
) -> list[psutil.Process]:
    """The live processes this program started: its descendants, and every process carrying its mark.

    :param mark_variable: an environment variable; every live process whose
        environment has it counts, wherever it was re-parented. ``None``
        counts descendants only, without reading any environment (much cheaper).
    :param mark: the value ``mark_variable`` must have; ``None`` accepts any value.
    :param descendants: count the live descendants of this process. ``False``
        with a ``mark_variable`` counts marked processes only: one family
        among many that this program started, say.
    :returns: each process once, by pid; never this process, never a zombie.
    :raises ValueError: for a ``mark`` without a ``mark_variable``, or when
        neither descendants nor a mark are asked for.
    """
    if mark is not None and mark_variable is None:
        raise ValueError(f"process_census() got mark={mark!r} without the mark_variable that carries it")
    if not descendants and mark_variable is None:
        raise ValueError("process_census(descendants=False) needs a mark_variable: otherwise it counts nothing")
    me = psutil.Process()
    found: dict[int, psutil.Process] = {}
    if descendants:
        found.update((process.pid, process) for process in _descendants(me))
    if mark_variable is not None:
        for process in live_processes():
            if process.pid != me.pid and process.pid not in found and _carries(process, mark_variable, mark):
                found[process.pid] = process
    return [found[pid] for pid in sorted(found) if is_alive(found[pid])]


def leftover_processes(
    mark_variable: str | None = None, mark: str | None = None, *, descendants: bool = True, settle: float = 5.0
) -> list[psutil.Process]:
    """The :func:`process_census`, once it is empty or ``settle`` seconds have passed.

    A process killed a moment ago may still be running down; the wait absorbs
    that lag and returns as soon as nothing is left, so a clean run costs no
    time. What it returns was still alive after ``settle`` seconds: a leak.

    :param mark_variable: as for :func:`process_census`.
    :param mark: as for :func:`process_census`.
    :param descendants: as for :func:`process_census`.
    :param settle: the longest wait, in seconds.
    :raises ValueError: as :func:`process_census` does.
    """
    deadline = time.monotonic() + settle
    while True:
        alive = process_census(mark_variable, mark, descendants=descendants)
        remaining = deadline - time.monotonic()
        if not alive or remaining <= 0:
            return alive
        psutil.wait_procs(alive, timeout=min(_POLL_INTERVAL, remaining))


def kill_processes(processes: Iterable[psutil.Process], *, timeout: float = 5.0) -> list[psutil.Process]:
    """SIGKILL every process at once, then wait until each is dead; the ones that are not.

    Dead means gone or a zombie: an orphan's zombie lasts until init reaps it,
    which no one here can hurry.

    :param processes: what to kill; those already gone are skipped.
    :param timeout: the longest wait for them to die, in seconds.
    :returns: the processes still alive after ``timeout`` (stuck in
        uninterruptible I/O, or not ours to signal); normally none.
    """
    signalled: list[psutil.Process] = []
    for process in processes:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            continue
        except psutil.Error:
            pass  # not ours to signal: still waited for, and reported if it survives
        signalled.append(process)
    deadline = time.monotonic() + timeout
    remaining = [process for process in signalled if is_alive(process)]
    while remaining and (left := deadline - time.monotonic()) > 0:
        psutil.wait_procs(remaining, timeout=min(_POLL_INTERVAL, left))
        remaining = [process for process in remaining if is_alive(process)]
    return remaining


def describe(process: psutil.Process) -> str:
    """``pid N: its command line`` (cut at 200 characters), for a report of leftovers."""
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return f"pid {process.pid} (gone)"
    if len(command) > _DESCRIPTION_LIMIT:
        command = command[: _DESCRIPTION_LIMIT - 3] + "..."
    return f"pid {process.pid}: {command}" if command else f"pid {process.pid}"


def escaped_processes(label: str) -> list[psutil.Process]:
    """The live daemons a fault server started with ``fault_server_entry(escaping_grandchild=label)``, wherever they are.

    They carry no environment, so no mark finds them: this looks for a
    program given by ``-c`` whose command line ends with ``label`` (the fault
    server itself has the label among its arguments too, but runs a file).
    A test that starts one should kill what this finds, whatever happened:
    the census cannot see it.

    :param label: the label given to ``fault_server_entry``.
    :returns: each live daemon once, never a zombie.
    """
    found: list[psutil.Process] = []
    for process in live_processes():
        try:
            command = process.cmdline()
            if command[-1:] == [label] and "-c" in command and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found
