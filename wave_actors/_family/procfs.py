"""What wave-actors reads from ``/proc`` (Linux): a process's ``stat``, its environment, its children.

The one reader, for everything that looks at processes: the stdio
transport's process table (:mod:`wave_actors._transport.proctree`), the
watchdog's host side and subreaper mode (:mod:`wave_actors._watchdog`), the
watchdog program itself, and the process census of ``wave_actors.testing``.

Standard library only, and cheap to import: the watchdog program
(:mod:`wave_actors._watchdog.program`) runs with ``python -I -S`` and loads
this module without the rest of the package.

Files are read with plain descriptors: a scan of the process table reads
two per process, and a file object costs a third of the scan. A reader
returns ``None`` (or nothing) for a process that is gone or not ours to read,
and on a platform without ``/proc`` (:func:`read_pid_max`: the kernel's
default); :func:`boot_ticks` is for Linux only.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Final, final

__all__ = [
    "CLOCK_TICKS",
    "LINUX",
    "ProcessStat",
    "boot_ticks",
    "children_listed",
    "read_children",
    "read_environment_variable",
    "read_forks",
    "read_pid_max",
    "read_pids",
    "read_stat",
    "session_still_started_by",
]

LINUX: Final = sys.platform.startswith("linux")
"""Whether this platform has Linux's ``/proc`` (and ``prctl``)."""

CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if LINUX else 100
"""Clock ticks per second: the unit of :attr:`ProcessStat.start`."""

_PROC: Final = "/proc"
_DEFAULT_PID_MAX: Final = 32768


@final
class ProcessStat:
    """The fields of ``/proc/PID/stat`` that tell a process apart and place it.

    A plain class with slots, not ``attrs`` nor a ``NamedTuple``: the watchdog
    program imports this module with the standard library only, and building
    a ``NamedTuple`` class would cost it a millisecond of its start-up.
    Nothing changes one once it is read.

    :param state: one letter; ``Z`` for a zombie (``X``: dead, about to vanish).
    :param ppid: its parent.
    :param sid: its session.
    :param start: when it started, in clock ticks since boot: with the pid,
        a process's identity (a pid alone may be reused).
    """

    __slots__ = ("ppid", "sid", "start", "state")

    def __init__(self, state: str, ppid: int, sid: int, start: int) -> None:
        self.state: Final = state
        self.ppid: Final = ppid
        self.sid: Final = sid
        self.start: Final = start

    def __repr__(self) -> str:
        return f"ProcessStat(state={self.state!r}, ppid={self.ppid}, sid={self.sid}, start={self.start})"

    @property
    def zombie(self) -> bool:
        """Whether it has exited and waits for its parent to collect the status."""
        return self.state in ("Z", "X")


def _read(path: str, *, whole: bool = False) -> bytes | None:
    """A file of ``/proc`` (its first 4 KiB unless ``whole``), or ``None`` if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
        if whole and data:
            chunks = [data]
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def read_pids() -> list[int]:
    """The pid of every process there is now (threads not included); empty without ``/proc``."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit()]


def read_stat(pid: int) -> ProcessStat | None:
    """``/proc/PID/stat``, or ``None`` if there is no such process (or no ``/proc``)."""
    data = _read(f"{_PROC}/{pid}/stat")
    if data is None:
        return None
    # The command name is in parentheses and may hold anything, parentheses and spaces included.
    close = data.rfind(b")")
    if close < 0:
        return None
    fields = data[close + 2 :].split()
    try:
        return ProcessStat(fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def session_still_started_by(leader: int, start: int) -> bool:
    """Whether session id ``leader`` still names the session of the process that was ``leader`` at ``start``.

    A server starts a session of its own, whose id is its pid; its members
    keep that id after it dies. The kernel never hands a pid out again while
    a session or process group of that id has a member, so if no process has
    the pid now, or the one that has it is still the leader (same start time),
    every member of a session ``leader`` belongs to that leader's family. If
    another process has the pid, the leader and all of its session are gone,
    and a session of that id is the newcomer's: nothing of ours.

    :param leader: the leader's pid (a server's).
    :param start: its start time (:attr:`ProcessStat.start`).
    """
    stat = read_stat(leader)
    return stat is None or stat.start == start


def read_environment_variable(pid: int, name: str) -> str | None:
    """The value of ``name`` in the environment ``pid`` started with, or ``None``.

    ``None`` too when the process is gone, a zombie (its environment is gone
    with its memory), or another user's: not ours to read.
    """
    environ = _read(f"{_PROC}/{pid}/environ", whole=True)
    if not environ:
        return None
    data = b"\0" + environ
    key = b"\0" + name.encode() + b"="
    found = data.find(key)
    if found < 0:
        return None
    return data[found + len(key) :].split(b"\0", 1)[0].decode(errors="replace")


def read_children(pid: int) -> list[int]:
    """The children of ``pid``, whichever of its threads forked them (``/proc/PID/task/TID/children``).

    Empty when the process is gone, and where the kernel was built without
    ``CONFIG_PROC_CHILDREN`` (most are built with it; see :func:`children_listed`).
    """
    try:
        threads = os.listdir(f"{_PROC}/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for thread in threads:
        listed = _read(f"{_PROC}/{pid}/task/{thread}/children", whole=True)
        if listed is not None:  # None: the thread ended
            found.extend(int(child) for child in listed.split())
    return found


def children_listed() -> bool:
    """Whether this kernel lists a thread's children in ``/proc`` (``CONFIG_PROC_CHILDREN``)."""
    return LINUX and os.path.exists(f"{_PROC}/self/task/{os.getpid()}/children")


def read_forks() -> int | None:
    """How many processes and threads the kernel has started since boot (``processes`` in ``/proc/stat``)."""
    data = _read(f"{_PROC}/stat", whole=True)
    if data is None:
        return None
    found = data.find(b"\nprocesses ")
    if found < 0:
        return None
    try:
        return int(data[found + 11 : data.find(b"\n", found + 1)])
    except ValueError:
        return None


def read_pid_max() -> int:
    """The largest pid plus one (``/proc/sys/kernel/pid_max``); pids come back only after all of them."""
    data = _read(f"{_PROC}/sys/kernel/pid_max")
    try:
        return int(data or _DEFAULT_PID_MAX)
    except ValueError:
        return _DEFAULT_PID_MAX


def boot_ticks() -> int:
    """Now, in clock ticks since boot: the clock of :attr:`ProcessStat.start`."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS)
