"""Reclaiming a server's whole process family (R-KILL-1, R-KILL-2).

A stdio MCP server is rarely one process: ``npx`` starts node, node starts
workers, a Python launcher starts the real interpreter. Closing the pipes of
the first one is not enough; its children survive and re-parent to init the
moment it dies. So the family is *snapshotted before any signal*, and found by
three independent marks, any one of which suffices:

- descendants of the server's pid (``psutil`` children, recursive);
- members of the server's session: servers are started with
  ``start_new_session=True``, so every descendant that did not call
  ``setsid`` shares the server's session id, even after re-parenting;
- on Linux, processes whose environment carries the server's
  :data:`FAMILY_VARIABLE` tag: a ``setsid`` or double-forked grandchild
  escapes the first two but still inherits the environment.

In subreaper mode (``Host.open(subreaper=True)``, R-KILL-6) orphaned members
are re-parented to the host itself; they are found the same way, and once
killed their exit status is collected here, so they do not linger as zombies.

Then the stages run: stdin EOF and a grace for the server to exit by itself,
SIGTERM to every member still alive and a grace, SIGKILL. All of it runs in a
shielded cancel scope with an overall bound, so a cancelled caller can neither
skip reclamation nor be held by it for longer than the graces add up to; and
whatever happens inside, every member ever found is sent SIGKILL before
``reclaim`` returns, so no family is abandoned unsignalled.

Finding a family means reading the whole process table (``/proc``). When many
sessions close at once, every reclaim asks for it several times; a
:class:`_ProcessTable` per trio run shares one scan among all the reclaims
that asked while it was pending, so closing N sessions costs a few scans, not
3N scans of a table that grows with N.

Callers: the stdio transport (:mod:`.stdio`) tags and reclaims its server;
:class:`Graces` is part of the public options (``wave_actors.TransportOptions``);
the demo server (``wave_actors._demo``) reads :data:`FAMILY_VARIABLE`.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Final

import attrs
import psutil
import trio

__all__ = ["FAMILY_VARIABLE", "Graces", "family_tag", "live_processes", "reclaim"]

logger = logging.getLogger(__name__)

FAMILY_VARIABLE: Final = "WAVE_ACTORS_FAMILY"
"""Environment variable that tags every process a stdio server starts."""

_POLL_INTERVAL: Final = 0.01
_ROUNDS: Final = 3


@attrs.frozen
class Graces:
    """How long each reclamation stage waits before escalating (seconds).

    :param eof: after closing stdin, for the server to exit on its own.
    :param term: after SIGTERM, before SIGKILL.
    :param kill: after SIGKILL, for the kernel to finish; only an unkillable
        process (stuck in uninterruptible I/O) runs this out, and is then
        reported and abandoned.
    """

    eof: float = attrs.field(default=2.0, validator=attrs.validators.ge(0))
    term: float = attrs.field(default=2.0, validator=attrs.validators.ge(0))
    kill: float = attrs.field(default=2.0, validator=attrs.validators.ge(0))

    @property
    def total(self) -> float:
        """The longest reclamation can take, plus a little for scanning."""
        return self.eof + self.term + self.kill + 1.0


def family_tag() -> str:
    """A fresh value for :data:`FAMILY_VARIABLE`, unique to one spawn."""
    return uuid.uuid4().hex


@attrs.frozen
class _Row:
    """One live process as one scan saw it."""

    process: psutil.Process
    ppid: int
    sid: int | None
    tag: str | None


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


def _scan() -> dict[int, _Row]:
    """Read the process table (blocking: run it in a thread)."""
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
        rows[process.pid] = _Row(process, ppid, sid, tag)
    return rows


def _family_in(table: Mapping[int, _Row], pid: int, tag: str | None) -> list[psutil.Process]:
    """The family rooted at ``pid`` in one scan: marked members and all their descendants."""
    found = {
        row.process.pid: row.process
        for row in table.values()
        if row.process.pid == pid or row.sid == pid or (tag is not None and row.tag == tag)
    }
    children: dict[int, list[psutil.Process]] = {}
    for row in table.values():
        children.setdefault(row.ppid, []).append(row.process)
    stack = [pid, *found]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.pid not in found:
                found[child.pid] = child
                stack.append(child.pid)
    return list(found.values())


class _ProcessTable:
    """One scan of the process table shared by every reclaim that asked before it started."""

    def __init__(self) -> None:
        self._lock = trio.Lock()
        self._scanning = False
        self._completed = 0
        self._rows: dict[int, _Row] = {}

    async def rows(self) -> dict[int, _Row]:
        """A scan that started after this call (so it sees every process alive now)."""
        # A scan already running may have started before our processes forked.
        needed = self._completed + (2 if self._scanning else 1)
        async with self._lock:
            if self._completed < needed:
                self._scanning = True
                try:
                    self._rows = await trio.to_thread.run_sync(_scan)
                finally:
                    self._scanning = False
                self._completed += 1
            return self._rows


_TABLE: trio.lowlevel.RunVar[_ProcessTable] = trio.lowlevel.RunVar("wave_actors_process_table")


async def _family(pid: int, tag: str | None) -> list[psutil.Process]:
    try:
        table = _TABLE.get()
    except LookupError:
        table = _ProcessTable()
        _TABLE.set(table)
    return _family_in(await table.rows(), pid, tag)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _reap_adopted(members: Iterable[psutil.Process], root: int) -> None:
    """Collect the exit status of members that died as our children (a subreaper host adopts orphans, R-KILL-6).

    Only a zombie whose parent is this process qualifies, and psutil checks
    the creation time, so a pid reused by a child of the host's own is never
    collected here; the root is trio's to wait for.
    """
    me = os.getpid()
    for member in members:
        if member.pid == root:
            continue
        try:
            if member.is_running() and member.status() == psutil.STATUS_ZOMBIE and member.ppid() == me:
                os.waitpid(member.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            continue


def _signal_all(processes: Iterable[psutil.Process], signum: int) -> None:
    for process in processes:
        try:
            # psutil checks the create time first, so a recycled pid is never hit.
            process.send_signal(signum)
        except psutil.Error:
            continue


async def _wait_gone(processes: list[psutil.Process], limit: float, reap: Callable[[], object]) -> list[psutil.Process]:
    """Wait until none of ``processes`` is alive or ``limit`` passes; return the survivors."""
    with trio.move_on_after(limit):
        while True:
            reap()
            processes = [process for process in processes if _alive(process)]
            if not processes:
                return []
            await trio.sleep(_POLL_INTERVAL)
    reap()
    return [process for process in processes if _alive(process)]


async def reclaim(
    process: trio.Process,
    *,
    tag: str | None,
    graces: Graces,
    close_stdin: Callable[[], Awaitable[None]] | None,
) -> list[int]:
    """End ``process`` and its whole family; return the pids that survived.

    Runs shielded and bounded by ``graces.total``: call it from a ``finally``.
    If the bound runs out (a machine too loaded to scan in time), every member
    found so far is sent SIGKILL before returning: none is left unsignalled.

    :param process: the server, a child of this process.
    :param tag: its :data:`FAMILY_VARIABLE` value.
    :param graces: how long each stage waits.
    :param close_stdin: closes the server's stdin (the polite stage); ``None``
        skips straight to SIGTERM, as for a dial that was cancelled and has no
        session to end politely.
    :returns: pids still alive at the end (normally none).
    """
    known: dict[int, psutil.Process] = {}
    leftovers: list[psutil.Process] = []

    def reap() -> object:
        return process.poll()

    with trio.CancelScope(shield=True):
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            with trio.move_on_after(graces.total):
                await _reclaim_windows(process, close_stdin, graces)
            return [] if process.poll() is not None else [process.pid]
        try:
            with trio.move_on_after(graces.total) as bound:
                await _stages(process, tag, graces, close_stdin, known, reap)
            if bound.cancelled_caught:
                logger.warning(
                    "reclaiming pid %d ran past %.1f s; sending SIGKILL to the %d member(s) found",
                    process.pid,
                    graces.total,
                    len(known),
                )
        finally:
            # Whatever happened above, nothing found is left unsignalled.
            leftovers = [member for member in known.values() if _alive(member)]
            if leftovers:
                _signal_all(leftovers, signal.SIGKILL)
                leftovers = await _wait_gone(leftovers, graces.kill, reap)
            _reap_adopted(known.values(), process.pid)
    if leftovers:
        logger.warning("pids %s survived SIGKILL; abandoning them", [member.pid for member in leftovers])
    return [member.pid for member in leftovers]


async def _stages(
    process: trio.Process,
    tag: str | None,
    graces: Graces,
    close_stdin: Callable[[], Awaitable[None]] | None,
    known: dict[int, psutil.Process],
    reap: Callable[[], object],
) -> None:
    """EOF, SIGTERM, SIGKILL, recording every member found into ``known``."""

    async def rescan() -> list[psutil.Process]:
        for member in await _family(process.pid, tag):
            known.setdefault(member.pid, member)
        return list(known.values())

    await rescan()  # before any signal: children re-parent once the server dies
    if close_stdin is not None:
        await close_stdin()
        with trio.move_on_after(graces.eof):
            await process.wait()
    # A member may fork between a scan and the signal that would have caught
    # it; once the server is dead nothing new appears, so a few rounds settle it.
    for _ in range(_ROUNDS):
        survivors = await _wait_gone(await rescan(), 0, reap)
        if not survivors:
            return
        _signal_all(survivors, signal.SIGTERM)
        survivors = await _wait_gone(survivors, graces.term, reap)
        if survivors:
            logger.info("pids %s ignored SIGTERM; sending SIGKILL", [member.pid for member in survivors])
            _signal_all(survivors, signal.SIGKILL)
            survivors = await _wait_gone(survivors, graces.kill, reap)
        if survivors:
            return  # unkillable; reported by the caller


async def _reclaim_windows(
    process: trio.Process, close_stdin: Callable[[], Awaitable[None]] | None, graces: Graces
) -> None:  # pragma: no cover - exercised on Windows only
    if close_stdin is not None:
        await close_stdin()
        with trio.move_on_after(graces.eof):
            await process.wait()
    # taskkill /T walks the tree by parent pid: it must run while the server is alive.
    await trio.run_process(
        ["taskkill", "/PID", str(process.pid), "/T", "/F"], check=False, capture_stdout=True, capture_stderr=True
    )
    with trio.move_on_after(graces.kill):
        await process.wait()
