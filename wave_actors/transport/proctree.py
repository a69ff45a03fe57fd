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

Then the stages run: stdin EOF and a grace for the server to exit by itself,
SIGTERM to every member still alive and a grace, SIGKILL. All of it runs in a
shielded cancel scope with an overall bound, so a cancelled caller can neither
skip reclamation nor be held by it for longer than the graces add up to.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import attrs
import psutil
import trio

__all__ = ["FAMILY_VARIABLE", "Graces", "family_tag", "reclaim", "snapshot_family"]

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


def snapshot_family(pid: int, tag: str | None = None) -> list[psutil.Process]:
    """Every live process of the family rooted at ``pid``, the root included.

    Blocking (it reads ``/proc``); call it through ``trio.to_thread``.

    :param pid: the server's pid, which is also its session id.
    :param tag: the server's :data:`FAMILY_VARIABLE` value, if it was tagged.
    """
    family: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        family[pid] = root
        for child in root.children(recursive=True):
            family[child.pid] = child
    except psutil.Error:
        pass
    if sys.platform != "win32":
        me = os.getpid()
        for process in psutil.process_iter():
            if process.pid in family or process.pid == me:
                continue
            try:
                if os.getsid(process.pid) == pid:
                    family[process.pid] = process
                elif tag is not None and process.environ().get(FAMILY_VARIABLE) == tag:
                    family[process.pid] = process
            except (psutil.Error, OSError):
                continue
    return [process for process in family.values() if _alive(process)]


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _merge(*groups: Iterable[psutil.Process]) -> list[psutil.Process]:
    return list({process.pid: process for group in groups for process in group}.values())


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
    family: list[psutil.Process] | None = None,
) -> list[int]:
    """End ``process`` and its whole family; return the pids that survived.

    Runs shielded and bounded by ``graces.total``: call it from a ``finally``.

    :param process: the server, a child of this process.
    :param tag: its :data:`FAMILY_VARIABLE` value.
    :param graces: how long each stage waits.
    :param close_stdin: closes the server's stdin (the polite stage); ``None``
        skips straight to SIGTERM, as for a dial that was cancelled and has no
        session to end politely.
    :param family: a snapshot taken earlier, merged with a fresh one (members
        that re-parented since are then still known).
    :returns: pids still alive after SIGKILL and its grace (normally none).
    """
    with trio.CancelScope(shield=True), trio.move_on_after(graces.total) as bound:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            await _reclaim_windows(process, close_stdin, graces)
            return []
        members = _merge(family or [], await trio.to_thread.run_sync(snapshot_family, process.pid, tag))

        def reap() -> object:
            return process.poll()

        if close_stdin is not None:
            await close_stdin()
            with trio.move_on_after(graces.eof):
                await process.wait()
        survivors: list[psutil.Process] = []
        # A member may fork between a snapshot and the signal that would have
        # caught it; once the parent is dead nothing new can appear, so a few
        # rounds settle it.
        for _ in range(_ROUNDS):
            # Children re-parent when the server exits; the tag and session still find them.
            members = _merge(members, await trio.to_thread.run_sync(snapshot_family, process.pid, tag))
            survivors = await _wait_gone(members, 0, reap)
            if not survivors:
                break
            _signal_all(survivors, signal.SIGTERM)
            survivors = await _wait_gone(survivors, graces.term, reap)
            if survivors:
                logger.info("pids %s ignored SIGTERM; sending SIGKILL", [s.pid for s in survivors])
                _signal_all(survivors, signal.SIGKILL)
                survivors = await _wait_gone(survivors, graces.kill, reap)
            if survivors:
                logger.warning("pids %s survived SIGKILL; abandoning them", [s.pid for s in survivors])
                break
            members = []
        return [survivor.pid for survivor in survivors]
    if bound.cancelled_caught:
        logger.warning("reclaiming pid %d ran past %.1f s; abandoning it", process.pid, graces.total)
    return [process.pid] if process.poll() is None else []


async def _reclaim_windows(
    process: trio.Process, close_stdin: Callable[[], Awaitable[None]] | None, graces: Graces
) -> None:  # pragma: no cover - exercised on Windows only
    if close_stdin is not None:
        await close_stdin()
        with trio.move_on_after(graces.eof):
            await process.wait()
    # taskkill /T walks the tree by parent pid: it must run while the server is alive.
    await trio.run_process(["taskkill", "/PID", str(process.pid), "/T", "/F"], check=False, capture_stdout=True, capture_stderr=True)
    with trio.move_on_after(graces.kill):
        await process.wait()
