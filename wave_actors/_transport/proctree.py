"""Finding a server's whole process family in the process table (R-KILL-1).

A stdio MCP server is rarely one process: ``npx`` starts node, node starts
workers, a Python launcher starts the real interpreter. Closing the pipes of
the first one is not enough; its children survive and re-parent to init the
moment it dies. A family is found by three independent marks, any one of
which suffices:

- descendants of the server's pid, and of every other member;
- members of the server's session: servers are started with
  ``start_new_session=True``, so every descendant that did not call
  ``setsid`` shares the server's session id, even after re-parenting;
- on Linux, processes whose environment carries the server's
  :data:`~wave_actors._family.tag.FAMILY_VARIABLE` tag: a ``setsid`` or
  double-forked grandchild escapes the first two but still inherits the
  environment.

Only the first mark is lost when the server dies, so before any signal (and
before stdin closes) :func:`find_descendants` walks the server's subtree; on
Linux that reads ``/proc/PID/task/TID/children`` of the members only, a few
files however many processes the machine runs. The other two marks survive
re-parenting: :func:`find_family` scans the whole process table and finds
every member alive by any mark, including those that forked meanwhile.

Finding the other members means reading the whole process table. The first
scan of a trio run reads ``/proc/PID/stat`` and ``/proc/PID/environ`` of every
process (through :mod:`wave_actors._family.procfs`); each later one lists
``/proc`` and reads only the processes the previous scan had not read (or read
before they were a second old): a pid is handed out again only after the
kernel has gone round the whole pid space, which the kernel's count of started
processes rules out (see :func:`_scan_linux`). So a server that exits on stdin
EOF costs the walk, its own exit and a listing of ``/proc``: a few
milliseconds. When many sessions close at once, a :class:`_ProcessTable` per
trio run shares one scan among all the reclaims that asked while it was
pending. A scan that reads only newcomers runs in the trio thread while it
takes under 2 ms (less than waking a worker thread); a whole scan runs in a
worker thread.

Callers: the reclamation stages (:mod:`.reclamation`) find the family here;
the process census (``wave_actors.testing``) lists the table with
:func:`live_processes`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import attrs
import psutil
import trio

from wave_actors._family.cgroup import cgroup_members
from wave_actors._family.procfs import (
    CLOCK_TICKS,
    LINUX,
    boot_ticks,
    children_listed,
    read_children,
    read_environment_variable,
    read_forks,
    read_pid_max,
    read_pids,
    read_stat,
)
from wave_actors._family.tag import FAMILY_VARIABLE

__all__ = ["find_contained", "find_descendants", "find_family", "live_processes", "process_start"]

# A scan of the process table that took less than this runs in the trio thread the next time.
_INLINE_SCAN: Final = 0.002
# A process is read once per trio run, unless it was younger than this when
# read: a fork that has not yet called setsid and exec'd shows its parent's
# session and environment.
_SETTLED_TICKS: Final = CLOCK_TICKS
_CHILDREN_FILES: Final = children_listed()


@attrs.frozen
class _Row:
    """One live process as one scan saw it.

    :param start: when it started, in the platform's own unit (clock ticks
        since boot on Linux): with the pid, it names one process for good.
    :param settled: it was old enough when read for the row to hold (see
        :data:`_SETTLED_TICKS`); an unsettled row is read again by the next scan.
    """

    pid: int
    start: float
    ppid: int
    sid: int | None
    tag: str | None
    settled: bool = True


def live_processes() -> Iterator[psutil.Process]:
    """A fresh :class:`psutil.Process` for every pid in the process table now (blocking).

    Never ``psutil.process_iter()``: it caches one ``Process`` per pid across
    calls, and when that pid has meanwhile been reused by a new process, the
    cached object names the dead one: ``is_running()`` is false and ``kill()``
    refuses, so the newcomer (a family member, in a host that has run long
    enough for pids to wrap around) would be missed by that scan. (psutil
    drops such an entry once something trips over it, so the reclaim rounds
    would find the member a scan later; a census has one scan only.) A fresh
    object costs one read of ``/proc/PID/stat``, which the cache saves only
    for pids it has seen before.
    """
    for pid in psutil.pids():
        try:
            yield psutil.Process(pid)
        except psutil.Error:
            continue  # gone since the listing


@attrs.frozen
class _Snapshot:
    """A scan's rows, and what tells the next scan which of them still hold.

    :param rows: every live process but this one, by pid.
    :param forks: processes and threads the kernel had started when the
        listing was taken (``processes`` in ``/proc/stat``), ``None`` if unknown.
    """

    rows: dict[int, _Row]
    forks: int | None = None


def _scan_linux(previous: _Snapshot | None, pid_max: int) -> _Snapshot:
    """Read the process table from ``/proc`` (blocking).

    One read of ``/proc/PID/stat`` and ``/proc/PID/environ`` per process,
    except for the processes ``previous`` has read already: a pid comes back
    only after the kernel has handed out every other one, so while fewer
    processes and threads than half the pid space were started between the
    two listings, a pid listed by both is the same process, and its row holds
    (a parent read then may have died since: the lineage it records is still
    true). A row read while its process was younger than
    :data:`_SETTLED_TICKS` is read again; the environment of a process whose
    pid did come back is read again too.
    """
    forks = read_forks()
    pids = read_pids()
    after = read_forks()
    trusted = (
        previous is not None
        and previous.forks is not None
        and after is not None
        and after - previous.forks < pid_max // 2
    )
    known = previous.rows if previous is not None else {}
    rows: dict[int, _Row] = {}
    me = os.getpid()
    now = boot_ticks()
    for pid in pids:
        if pid == me:
            continue
        old = known.get(pid)
        if trusted and old is not None and old.settled:
            rows[pid] = old
            continue
        stat = read_stat(pid)
        if stat is None or stat.zombie:
            continue  # gone, or a zombie: nothing left to signal
        same = old is not None and old.start == stat.start and old.settled
        tag = old.tag if same and old is not None else read_environment_variable(pid, FAMILY_VARIABLE)
        rows[pid] = _Row(pid, stat.start, stat.ppid, stat.sid, tag, now - stat.start >= _SETTLED_TICKS)
    return _Snapshot(rows, forks)


def _scan_psutil() -> dict[int, _Row]:  # pragma: no cover - the table of platforms without /proc
    """Read the process table through psutil (blocking)."""
    rows: dict[int, _Row] = {}
    me = os.getpid()
    for process in live_processes():
        try:
            if process.pid == me:
                continue
            with process.oneshot():
                ppid = process.ppid()
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                start = process.create_time()
            sid: int | None = None
            if sys.platform != "win32":
                sid = os.getsid(process.pid)
        except (psutil.Error, OSError):
            continue
        tag: str | None = None
        try:
            tag = process.environ().get(FAMILY_VARIABLE)
        except (psutil.Error, OSError):
            pass  # not ours to read (another user's): still found by parent and session
        rows[process.pid] = _Row(process.pid, start, ppid, sid, tag)
    return rows


def _open(pid: int, start: float) -> psutil.Process | None:
    """A :class:`psutil.Process` for the process a scan saw, or ``None`` if its pid now names another (blocking).

    psutil checks the start time before every signal, so the object never hits
    a recycled pid; checking it once here ties the object to the scanned process.
    """
    try:
        process = psutil.Process(pid)
        if LINUX:
            stat = read_stat(pid)
            return process if stat is not None and stat.start == start else None
        return process if process.create_time() == start else None  # pragma: no cover - no /proc
    except psutil.Error:
        return None


def _family_in(table: Mapping[int, _Row], pid: int, start: float | None, tag: str | None) -> list[_Row]:
    """The family rooted at ``pid`` (started at ``start``) in one scan: marked members and all their descendants.

    ``pid`` stands for the root only while no other process has it: a row of
    that pid with another start time is a newcomer, and so is a session of
    that id (see :func:`~wave_actors._family.procfs.session_still_started_by`);
    neither is ours. A zombie root has no row, and its pid cannot be reused.
    With ``start`` unknown, neither the pid nor the session is trusted: the
    tag alone finds the family.
    """
    holder = table.get(pid)
    ours = start is not None and (holder is None or holder.start == start)
    found = {
        row.pid: row
        for row in table.values()
        if (ours and (row.pid == pid or row.sid == pid)) or (tag is not None and row.tag == tag)
    }
    children: dict[int, list[_Row]] = {}
    for row in table.values():
        children.setdefault(row.ppid, []).append(row)
    stack = [pid, *found] if ours else list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.pid not in found:
                found[child.pid] = child
                stack.append(child.pid)
    return list(found.values())


def _descendants_linux(pid: int, start: int) -> list[tuple[int, int]]:
    """``pid`` (if it is still the process started at ``start``) and its descendants as ``(pid, start)`` (blocking).

    Read from ``/proc/PID/task/TID/children``: a few reads per member,
    whatever the size of the process table.
    """
    root = read_stat(pid)
    if root is None or root.start != start:
        return []  # gone, and its pid maybe someone else's now: nothing to walk
    found: dict[int, int] = {}
    stack = [pid]
    while stack:
        current = stack.pop()
        stat = read_stat(current)
        if stat is None or current in found:
            continue  # gone, or seen through another thread
        found[current] = stat.start
        stack.extend(read_children(current))
    return list(found.items())


class _ProcessTable:
    """One scan of the process table shared by every reclaim that asked before it started."""

    def __init__(self) -> None:
        self._lock = trio.Lock()
        self._scanning = False
        self._completed = 0
        self._snapshot: _Snapshot | None = None
        self._pid_max = read_pid_max() if LINUX else 0
        self._inline = False  # whether the last scan was quick

    async def rows(self) -> dict[int, _Row]:
        """A scan that started after this call (so it sees every process alive now)."""
        # A scan already running may have started before our processes forked.
        needed = self._completed + (2 if self._scanning else 1)
        async with self._lock:
            if self._completed < needed:
                self._scanning = True
                try:
                    # A quick scan costs less than the hop to a worker thread (and than
                    # starting one, after 10 s without a scan); a slow one would hold up the loop.
                    if self._inline and self._rows_hold():
                        self._snapshot = self._scan()
                    else:
                        self._snapshot = await trio.to_thread.run_sync(self._scan)
                finally:
                    self._scanning = False
                self._completed += 1
            assert self._snapshot is not None
            return self._snapshot.rows

    def _rows_hold(self) -> bool:
        """Whether the next scan will read only the processes started since the last one."""
        previous = self._snapshot.forks if self._snapshot is not None else None
        forks = read_forks()
        return previous is not None and forks is not None and forks - previous < self._pid_max // 2

    def _scan(self) -> _Snapshot:
        started = time.perf_counter()
        snapshot = _scan_linux(self._snapshot, self._pid_max) if LINUX else _Snapshot(_scan_psutil())
        self._inline = LINUX and time.perf_counter() - started < _INLINE_SCAN
        return snapshot


_TABLE: trio.lowlevel.RunVar[_ProcessTable] = trio.lowlevel.RunVar("wave_actors_process_table")


def _opened(members: Iterable[tuple[int, float]]) -> list[psutil.Process]:
    return [process for pid, start in members if (process := _open(pid, start)) is not None]


def process_start(pid: int) -> float | None:
    """When ``pid`` started, in the unit of the process table's rows; ``None`` if there is no such process (blocking).

    Call it only while ``pid`` is certainly the process meant (a child not yet
    waited for): from then on the pair names that process for good.
    """
    if LINUX:
        stat = read_stat(pid)
        return None if stat is None else stat.start
    try:  # pragma: no cover - platforms without /proc
        return psutil.Process(pid).create_time()
    except psutil.Error:  # pragma: no cover
        return None


async def find_family(pid: int, start: float | None, tag: str | None) -> list[psutil.Process]:
    """Every member of the family alive now, by all three marks (a scan of the whole table).

    :param pid: the server's pid.
    :param start: its start time (:func:`process_start`); the pid and its
        session count only while they still name that process (pid reuse).
    :param tag: its :data:`~wave_actors._family.tag.FAMILY_VARIABLE` value.
    """
    try:
        table = _TABLE.get()
    except LookupError:
        table = _ProcessTable()
        _TABLE.set(table)
    return _opened((row.pid, row.start) for row in _family_in(await table.rows(), pid, start, tag))


def find_contained(cgroup: str, pid: int, start: float | None) -> list[psutil.Process]:
    """Every process in the family's ``cgroup`` now, however it detached, and the server itself (R-KILL-10).

    The server (``pid``, started at ``start``) counts even outside the
    cgroup: a moment after the spawn it may not have entered it yet. One
    read of ``cgroup.procs`` and of each member's ``stat`` (blocking, but a
    few small files whatever the size of the process table: the trio thread
    reads them).
    """
    members: dict[int, float] = {
        member: stat.start for member in cgroup_members(cgroup) if (stat := read_stat(member)) is not None
    }
    if start is not None:
        members.setdefault(pid, start)
    return _opened(members.items())


async def find_descendants(pid: int, start: float | None, tag: str | None) -> list[psutil.Process]:
    """``pid`` and its descendants now: what its death would hide (re-parented children).

    The other marks (session, tag) survive the server's death, so the scans
    after it find those members; this only reads the server's subtree, so it
    costs a few reads however many processes the machine runs. Without
    ``/proc/PID/task/TID/children``, a whole scan. A ``pid`` that no longer
    names the process started at ``start`` has no descendants of ours.
    """
    if _CHILDREN_FILES:
        if start is None:
            return []
        # Read in the trio thread: a handful of small files costs less than a hop to a worker thread.
        return _opened(_descendants_linux(pid, int(start)))
    return await find_family(pid, start, tag)
