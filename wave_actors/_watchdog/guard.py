"""What a host opens to guard its server families against its own death, and what it reports (R-KILL-6, R-KILL-7, R-KILL-10).

:func:`open_orphan_guard` is entered by :meth:`wave_actors.Host.open` around
the host's own nursery, so it opens before the first session and closes
after the last one has been destroyed: by then every family has been
reclaimed and the watchdog is released, never left behind. It also holds,
where the host may make cgroups, the placement of every server family in a
cgroup of its own (:mod:`wave_actors._family.cgroup`).

:func:`default_protection` says what a host opened with the defaults would
report, without opening one: ``wave-actors servers`` prints it for the
commands that dial.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Final

import attrs
import trio

from wave_actors._family import cgroup
from wave_actors._family.descriptors import FileDescriptors, file_descriptors
from wave_actors._family.parent_death import parent_death_signal_available
from wave_actors._family.procfs import LINUX
from wave_actors._family.registry import registry
from wave_actors._watchdog.client import Watchdog
from wave_actors._watchdog.subreaper import keep_reaping

__all__ = ["OrphanGuard", "OrphanProtection", "default_protection", "open_orphan_guard"]

logger = logging.getLogger(__name__)

_CLOSE_LIMIT: Final = 10.0


@attrs.frozen
class OrphanProtection:
    """What keeps a host's server families from outliving the host process (R-KILL-6, R-KILL-7).

    Closing the host always reclaims every family; these cover a host that
    dies without closing (SIGKILL, a crash, the OOM killer). All are Linux
    only: elsewhere every field is off.

    :param watchdog: the host keeps a watchdog process, which reclaims every
        family within 2 s of the host's death.
    :param watchdog_pid: the running watchdog's pid; ``None`` while it starts,
        while a dead one is being replaced, or without a watchdog.
    :param watchdog_replacements: how many watchdogs died (were killed) while
        the host ran and were replaced.
    :param subreaper: the host is a child subreaper: orphaned members of its
        families are re-parented to it, and it collects their exit status.
    :param parent_death_signal: servers are started with a parent-death
        signal (SIGTERM when the host dies).
    :param cgroups: every server family runs in a cgroup of its own, which
        holds whatever it starts however it detaches, and is ended with
        ``cgroup.kill`` when the family is reclaimed, by the host or by its
        watchdog (R-KILL-10). ``False``: families are found by their tag,
        session and tree, and a process that leaves all three (a
        double-forked ``setsid`` daemon with an empty environment) escapes.
    :param file_descriptors: the process's file descriptors when this was
        read: in use, the limit, and room for how many more stdio servers
        (:class:`~wave_actors.FileDescriptors`). A dial that finds none left
        fails with an error naming the limit; the library never raises it.
    """

    watchdog: bool
    watchdog_pid: int | None
    watchdog_replacements: int
    subreaper: bool
    parent_death_signal: bool
    cgroups: bool = False
    file_descriptors: FileDescriptors | None = None


def _cgroups_possible() -> tuple[bool, str]:
    """Whether this process could place families in cgroups now, and why not (blocking: a probe)."""
    if not parent_death_signal_available():
        return False, "servers are spawned without the library's own spawner here"
    directory, reason = cgroup.probe()
    return directory is not None, reason


def default_protection() -> OrphanProtection:
    """What a host opened with ``Host.open()``'s defaults would report, read from the platform alone (R-KILL-7).

    The defaults are a watchdog, which :func:`open_orphan_guard` starts on
    Linux only, no subreaper mode, and cgroups where the process may make
    them (a probe: a directory made and removed in its cgroup); servers get
    the parent-death signal wherever the spawn can ask for it. Starts nothing
    (no watchdog runs, so its pid is ``None``, and no process is spawned) and
    imports nothing the package has not.
    """
    return OrphanProtection(
        watchdog=LINUX,
        watchdog_pid=None,
        watchdog_replacements=0,
        subreaper=False,
        parent_death_signal=parent_death_signal_available(),
        cgroups=_cgroups_possible()[0],
        file_descriptors=file_descriptors(),
    )


class OrphanGuard:
    """The running defences of one host."""

    def __init__(self, watchdog: Watchdog | None, subreaper: bool, cgroups: bool) -> None:
        self._watchdog = watchdog
        self._subreaper = subreaper
        self._cgroups = cgroups

    def protection(self) -> OrphanProtection:
        """What is active now."""
        watchdog = self._watchdog
        return OrphanProtection(
            watchdog=watchdog is not None,
            watchdog_pid=watchdog.pid if watchdog is not None else None,
            watchdog_replacements=watchdog.replacements if watchdog is not None else 0,
            subreaper=self._subreaper,
            parent_death_signal=parent_death_signal_available(),
            cgroups=self._cgroups,
            file_descriptors=file_descriptors(),
        )


def _acquire_cgroups() -> bool:
    """Hold cgroup placement for the host, if it can be had (blocking)."""
    possible, reason = _cgroups_possible()
    if possible:
        directory, reason = cgroup.acquire()
        if directory is not None:
            return True
    logger.info("server families are found by their tag, session and tree, not by cgroup: %s", reason)
    return False


@asynccontextmanager
async def open_orphan_guard(
    *, watchdog: bool, subreaper: bool, cgroups: bool = True
) -> AsyncGenerator[OrphanGuard, None]:
    """Start the defences asked for, for the duration of the block.

    Leave the block only once every family the host started has been
    reclaimed: the watchdog is then released and waited for, and the
    process's cgroup directory removed when no other host holds it.

    :param watchdog: keep a watchdog process (Linux; ignored elsewhere, with an info log).
    :param subreaper: become a child subreaper (Linux; ignored elsewhere).
    :param cgroups: place every server family in a cgroup of its own where
        the process may make cgroups (probed; otherwise, and elsewhere than
        Linux, families are found by tag, with an info log saying why).
    """
    if (watchdog or subreaper) and not LINUX:
        logger.info("the watchdog and subreaper mode need Linux; families are reclaimed when the host closes")
        watchdog = subreaper = False
    contained = cgroups and LINUX and await trio.to_thread.run_sync(_acquire_cgroups)
    # Like the watchdog, reaping goes on while the host's teardown (cancelled by whatever
    # ended the host) reclaims the families: only the end of the block stops it.
    reaper_scope = trio.CancelScope(shield=True)

    async def reap(*, task_status: trio.TaskStatus[bool] = trio.TASK_STATUS_IGNORED) -> None:
        with reaper_scope:
            await keep_reaping(registry, task_status=task_status)

    try:
        async with trio.open_nursery() as nursery:
            keeper: Watchdog | None = None
            reaping = False
            try:
                # Both tasks shield themselves, and trio leaves a task that says "started"
                # inside an already cancelled start() where it is, waiting for it to end:
                # a cancellation here would wait forever for a task only the finally below
                # ends. So the starts are shielded (each a spawn or a prctl, bounded); a
                # cancellation is seen at the next checkpoint, with both in the nursery.
                with trio.CancelScope(shield=True):
                    if watchdog:
                        keeper = Watchdog(registry)
                        await nursery.start(keeper.keep)
                    if subreaper:
                        reaping = await nursery.start(reap)
                await trio.lowlevel.checkpoint_if_cancelled()
                yield OrphanGuard(keeper, reaping, contained)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_LIMIT):
                    if keeper is not None:
                        await keeper.close()
                reaper_scope.cancel()
                nursery.cancel_scope.cancel()
    finally:
        if contained:
            cgroup.release()
