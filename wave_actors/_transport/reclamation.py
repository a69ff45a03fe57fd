"""Reclaiming a server's whole process family: stdin EOF, SIGTERM, SIGKILL (R-KILL-1, R-KILL-2).

:func:`reclaim` ends a stdio server and every member of its family, found by
:mod:`.proctree`: before any signal (and before stdin closes) the server's
subtree, whose links its death would break; after each stage a scan of the
whole process table, which finds every member alive by any mark, including
those that forked meanwhile.

The stages: stdin EOF and a grace for the server to exit by itself, SIGTERM
to every member still alive and a grace, SIGKILL (each grace from
:class:`~wave_actors._family.graces.Graces`). All of it runs in a shielded
cancel scope with an overall bound, so a cancelled caller can neither skip
reclamation nor be held by it for longer than the graces add up to; and
whatever happens inside, every member ever found is sent SIGKILL before
:func:`reclaim` returns, so no family is abandoned unsignalled.

A family in a cgroup of its own (R-KILL-10, :mod:`wave_actors._family.cgroup`)
is found by the cgroup alone, which holds every process the server ever
started, however it detached: no walk, no scan of the process table. Its
stages are the same, and end with ``cgroup.kill``, which ends at once every
process still in it, one forked a moment ago included.

In subreaper mode (``Host.open(subreaper=True)``, R-KILL-6) orphaned members
are re-parented to the host itself; once killed, their exit status is
collected here, so they do not linger as zombies.

The only caller is the stdio transport (:mod:`.stdio`), from the ``finally``
of its connection.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import psutil
import trio

from wave_actors._family.cgroup import cgroup_populated, kill_cgroup
from wave_actors._family.graces import Graces
from wave_actors._transport.proctree import find_contained, find_descendants, find_family, process_start

__all__ = ["reclaim"]

logger = logging.getLogger(__name__)

_FIRST_POLL_INTERVAL: Final = 0.001
_POLL_INTERVAL: Final = 0.01
_ROUNDS: Final = 3


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


async def _wait_gone(
    processes: list[psutil.Process], limit: float, reap: Callable[[], object], cgroup: str | None = None
) -> list[psutil.Process]:
    """Wait until none of ``processes`` is alive (and ``cgroup``, if given, is empty) or ``limit`` passes.

    :returns: the survivors among ``processes``.
    """
    interval = _FIRST_POLL_INTERVAL
    with trio.move_on_after(limit):
        while True:
            reap()
            processes = [process for process in processes if _alive(process)]
            if not processes and (cgroup is None or not cgroup_populated(cgroup)):
                return []
            # Most processes die within a millisecond of a signal: look soon, then less often.
            await trio.sleep(interval)
            interval = min(interval * 2, _POLL_INTERVAL)
    reap()
    return [process for process in processes if _alive(process)]


async def reclaim(
    process: trio.Process,
    *,
    tag: str | None,
    graces: Graces,
    close_stdin: Callable[[], Awaitable[None]] | None,
    start: float | None = None,
    cgroup: str | None = None,
) -> list[int]:
    """End ``process`` and its whole family; return the pids that survived.

    Runs shielded and bounded by ``graces.total``: call it from a ``finally``.
    If the bound runs out (a machine too loaded to scan in time), every member
    found so far is sent SIGKILL before returning: none is left unsignalled.

    :param process: the server, a child of this process.
    :param tag: its :data:`~wave_actors._family.tag.FAMILY_VARIABLE` value.
    :param graces: how long each stage waits.
    :param close_stdin: closes the server's stdin (the polite stage); ``None``
        skips straight to SIGTERM, as for a dial that was cancelled and has no
        session to end politely.
    :param start: the server's start time (:func:`~.proctree.process_start`,
        read at the spawn). Unknown, it is read now if the server has not been
        waited for; once it has, its pid may name another process already,
        and only the tag finds the family.
    :param cgroup: the family's cgroup, if it has one: then it alone says who
        the members are, and ``cgroup.kill`` ends them.
    :returns: pids still alive at the end (normally none).
    """
    if start is None and process.returncode is None:
        start = process_start(process.pid)  # not waited for: the pid is still our child's
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
                if cgroup is None:
                    await _stages(process, start, tag, graces, close_stdin, known, reap)
                else:
                    await _contained_stages(process, start, cgroup, graces, close_stdin, known, reap)
            if bound.cancelled_caught:
                logger.warning(
                    "reclaiming pid %d ran past %.1f s; sending SIGKILL to the %d member(s) found",
                    process.pid,
                    graces.total,
                    len(known),
                )
        finally:
            # Whatever happened above, nothing found is left unsignalled.
            if cgroup is not None and cgroup_populated(cgroup):
                kill_cgroup(cgroup)
                await _wait_gone([], graces.kill, reap, cgroup)
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
    start: float | None,
    tag: str | None,
    graces: Graces,
    close_stdin: Callable[[], Awaitable[None]] | None,
    known: dict[int, psutil.Process],
    reap: Callable[[], object],
) -> None:
    """EOF, SIGTERM, SIGKILL, recording every member found into ``known``."""

    def record(members: list[psutil.Process]) -> list[psutil.Process]:
        for member in members:
            known.setdefault(member.pid, member)
        return list(known.values())

    async def rescan() -> list[psutil.Process]:
        return record(await find_family(process.pid, start, tag))

    # Before any signal: the server's children re-parent once it dies, and
    # then only the other two marks find them.
    record(await find_descendants(process.pid, start, tag))
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


async def _contained_stages(
    process: trio.Process,
    start: float | None,
    cgroup: str,
    graces: Graces,
    close_stdin: Callable[[], Awaitable[None]] | None,
    known: dict[int, psutil.Process],
    reap: Callable[[], object],
) -> None:
    """EOF, SIGTERM to every process in the family's cgroup, ``cgroup.kill``, recording members into ``known``.

    The server itself counts whether or not it is in the cgroup yet: spawned a
    moment ago, it may not have entered it (nor started anything) when a
    cancelled dial reclaims it.
    """
    if close_stdin is not None:
        await close_stdin()
        with trio.move_on_after(graces.eof):
            await process.wait()
    reap()
    members = find_contained(cgroup, process.pid, start)
    for member in members:
        known.setdefault(member.pid, member)
    survivors = [member for member in members if _alive(member)]
    if survivors:
        _signal_all(survivors, signal.SIGTERM)
        survivors = await _wait_gone(survivors, graces.term, reap, cgroup)
    if survivors or cgroup_populated(cgroup):  # one that ignored SIGTERM, or forked after the listing
        logger.info("cgroup %s outlived SIGTERM; ending it with cgroup.kill", cgroup)
        kill_cgroup(cgroup)
        _signal_all(survivors, signal.SIGKILL)
        await _wait_gone(survivors, graces.kill, reap, cgroup)


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
