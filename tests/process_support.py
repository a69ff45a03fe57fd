"""The fault servers a test started, from the process census, what they were asked and told, pid reuse on demand,
and the most tasks and memory this host process used meanwhile.

Shared by the test folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import psutil
import trio

from wave_actors.testing import FAULT_SERVER_PATH, count_tasks, process_census


def held_descriptors() -> set[tuple[str, str]]:
    """This process's open descriptors, each with what it is, but for files another thread reads for a moment.

    The cgroup primer's thread reads ``/proc/<pid>/cgroup`` and writes
    ``cgroup.procs`` beside a dial, so a bare count may be one higher or lower
    by chance; pipes, pidfds, epolls and sockets are what a dial could leave.
    """
    held: set[tuple[str, str]] = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, or one closed since
            continue
        if not target.startswith(("/proc/", "/sys/fs/cgroup/")):
            held.add((name, target))
    return held


def _command(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []  # gone since the census


def server_processes(marker: str | None = None) -> list[psutil.Process]:
    """Live fault servers started by this test process (only those whose argv has ``marker``, if given).

    The runtime spawns every stdio server as a child of this process, so the
    descendants are enough; grandchildren run another program and never count.
    """
    found: list[psutil.Process] = []
    for process in process_census():
        command = _command(process)
        if str(FAULT_SERVER_PATH) in command and (marker is None or marker in command):
            found.append(process)
    return found


def plant_stale_cache_entry(pid: int) -> None:
    """Make ``psutil.process_iter()``'s cache hold, for ``pid``, a process that had it before.

    What a host that has run long enough for pids to wrap around meets: a
    cached ``Process`` of a dead process whose pid now names a family member.
    The stale object answers ``is_running()`` false and refuses ``kill()``.
    """
    stale = psutil.Process(pid)
    stale._ident = (pid, stale._ident[1] - 60.0)  # type: ignore[attr-defined]  # psutil's identity: (pid, start time)
    psutil._pmap[pid] = stale  # type: ignore[attr-defined]  # process_iter()'s cache
    assert not stale.is_running()
    psutil._pids_reused.discard(pid)  # type: ignore[attr-defined]  # as if nobody had looked since the reuse


def requests_cancelled(log: Path) -> list[object]:
    """The request ids a fault server was told were cancelled, in order, from its cancel log (``cancel_log=...``)."""
    return [json.loads(line)["id"] for line in log.read_text().splitlines()] if log.exists() else []


def calls_received(log: Path) -> list[dict[str, object]]:
    """Every ``tools/call`` a fault server received, ``{"id", "tool", "pid", "time"}``, from its call log."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def tools_called(log: Path) -> list[str]:
    """The tools a fault server was asked to call, in order, from its call log (``fault_server_entry(call_log=...)``)."""
    return [str(call["tool"]) for call in calls_received(log)]


@attrs.define
class HostPeaks:
    """The most trio tasks and resident memory this process had while :meth:`sample` ran, and where they started.

    Start :meth:`sample` in a nursery around what is measured, and cancel it after.
    """

    tasks_before: int = attrs.field(factory=count_tasks)
    rss_before: int = attrs.field(factory=lambda: psutil.Process().memory_info().rss)
    tasks: int = 0
    rss: int = 0

    @property
    def added_tasks(self) -> int:
        return max(self.tasks, self.tasks_before) - self.tasks_before

    @property
    def added_rss(self) -> int:
        """Bytes of resident memory added at the peak."""
        return max(self.rss, self.rss_before) - self.rss_before

    async def sample(self, interval: float = 0.002) -> None:
        me = psutil.Process()
        while True:
            self.tasks = max(self.tasks, count_tasks())
            self.rss = max(self.rss, me.memory_info().rss)
            await trio.sleep(interval)
