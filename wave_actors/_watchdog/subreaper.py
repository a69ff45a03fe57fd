"""Subreaper mode: orphans of our servers' families come to the host, which reaps them (R-KILL-6).

With ``PR_SET_CHILD_SUBREAPER``, a process whose parent dies is re-parented
to its nearest subreaper ancestor instead of init. A server that
double-forks, or dies leaving children, then hands them to the host: they
stay in the host's tree, reclaimable by tag as before (R-KILL-1), and when
they exit, their exit status is ours to collect.

Collecting it must never steal a child the host application started and
waits for itself, nor a server that trio waits for. So only *adopted family
members* are reaped: children of ours that are not a server (a family's root)
and that either carry the tag of a live family (read while they are alive:
a zombie's environment is gone) or belong to a server's session.
:func:`~wave_actors._transport.reclamation.reclaim` collects the members it
killed; :func:`keep_reaping` collects those that exit by themselves, once a
second. The watchdog's client collects a watchdog re-parented to the host
the same way (:func:`reap_if_adopted`).

The mode is process-wide: the first host that asks turns it on, the last one
to close turns it off again (unless the process was a subreaper before).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Final

import trio

from wave_actors._family.prctl import PR_GET_CHILD_SUBREAPER, PR_SET_CHILD_SUBREAPER, prctl
from wave_actors._family.procfs import read_children, read_environment_variable, read_stat, session_still_started_by
from wave_actors._family.registry import FamilyRegistry
from wave_actors._family.tag import FAMILY_VARIABLE

__all__ = ["keep_reaping", "reap_adopted", "reap_if_adopted", "subreaper_active"]

logger = logging.getLogger(__name__)

REAP_INTERVAL: Final = 1.0
"""Seconds between two looks for adopted members that exited by themselves."""

_lock = threading.Lock()
_users = 0
_set_by_us = False


def _acquire() -> bool:
    """Become a subreaper (counted); whether the process is one now."""
    global _users, _set_by_us
    with _lock:
        if _users == 0:
            before = ctypes.c_int(0)
            prctl(PR_GET_CHILD_SUBREAPER, pointer=before)
            if not before.value:
                if prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
                    return False
                _set_by_us = True
        _users += 1
        return True


def _release() -> None:
    global _users, _set_by_us
    with _lock:
        _users -= 1
        if _users == 0 and _set_by_us:
            prctl(PR_SET_CHILD_SUBREAPER, 0)
            _set_by_us = False


def _forget_in_child() -> None:
    """After ``os.fork()``, in the child: the kernel does not pass subreaper mode on to it."""
    global _lock, _users, _set_by_us
    _lock = threading.Lock()
    _users = 0
    _set_by_us = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def reap_if_adopted(pid: int, start: int | None = None) -> bool:
    """Collect ``pid``'s exit status if it is a zombie child of ours (and started at ``start``).

    Only a zombie whose parent is this process can be collected, and nobody
    else can collect it meanwhile, so the pid cannot be reused between the
    check and the ``waitpid``.

    :returns: whether it was reaped.
    """
    stat = read_stat(pid)
    if stat is None or not stat.zombie or stat.ppid != os.getpid() or (start is not None and stat.start != start):
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def reap_adopted(registry: FamilyRegistry, adopted: dict[int, int]) -> int:
    """One look at our children: remember adopted members, collect those that exited.

    :param registry: the live families.
    :param adopted: pid -> start time of the adopted members seen alive; updated.
    :returns: how many were collected.
    """
    families = registry.families()
    roots = {family.root for family in families if family.root is not None}
    # A session id counts only while the root's pid is free or still the root's (pid reuse).
    sessions = {
        family.root
        for family in families
        if family.root is not None and family.start is not None and session_still_started_by(family.root, family.start)
    }
    tags = {family.tag for family in families}
    present = set(read_children(os.getpid()))
    for pid in [pid for pid in adopted if pid not in present]:
        del adopted[pid]
    reaped = 0
    for pid in present - roots:
        stat = read_stat(pid)
        if stat is None:
            continue
        if stat.zombie:
            if (adopted.get(pid) == stat.start or stat.sid in sessions) and reap_if_adopted(pid, stat.start):
                reaped += 1
            adopted.pop(pid, None)
        elif pid not in adopted and (stat.sid in sessions or read_environment_variable(pid, FAMILY_VARIABLE) in tags):
            adopted[pid] = stat.start
    return reaped


async def keep_reaping(
    registry: FamilyRegistry, *, task_status: trio.TaskStatus[bool] = trio.TASK_STATUS_IGNORED
) -> None:
    """Be a subreaper until cancelled, collecting adopted members; started with whether the mode is on.

    :param registry: the live families.
    """
    if not _acquire():
        logger.warning("cannot become a child subreaper; orphans of server families go to init as before")
        task_status.started(False)
        return
    try:
        task_status.started(True)
        adopted: dict[int, int] = {}
        while True:
            await trio.sleep(REAP_INTERVAL)
            reap_adopted(registry, adopted)
    finally:
        _release()


def subreaper_active() -> bool:
    """Whether some host of this process keeps subreaper mode on."""
    with _lock:
        return _users > 0
