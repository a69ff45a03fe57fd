"""When the host process dies, its server families die with it (R-KILL-6, R-KILL-7).

Each test runs a real host process (``host_program.py``) whose servers are
real fault servers, then kills, stops or signals that host and watches the
families through their environment mark. Linux only: elsewhere the watchdog,
the parent-death signal and subreaper mode are off, and families are
reclaimed when the host closes, as before.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
import trio
from host_death_support import gone, host_process
from polling import poll_until

from wave_actors.testing import is_alive

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="host-death defences are Linux only"),
    pytest.mark.timeout(30),
]

# R-KILL-7: no family outlives its host by more than this.
DEATH_LIMIT = 2.0


async def test_a_host_killed_with_sigkill_leaves_no_server_family_after_2_s(tmp_path: Path) -> None:
    # R-KILL-7: 5 sessions x 3 servers, each with a grandchild and a setsid grandchild.
    with host_process(tmp_path, "--sessions", "5", "--servers", "3", "--grandchildren") as host:
        ready = await host.read_status()
        assert ready["watchdog"] and ready["watchdog_pid"] is not None  # on by default
        assert len(host.families()) == 45
        killed = time.monotonic()
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone")
        assert time.monotonic() - killed < DEATH_LIMIT
        # Its work done, the watchdog exits too.
        await poll_until(lambda: gone(ready["watchdog_pid"]), limit=5.0, what="the watchdog exited")


async def test_a_stopped_host_killed_later_leaves_no_server_family_after_2_s(tmp_path: Path) -> None:
    # R-KILL-7: a stopped host is not dead: its families wait; once it is killed, they go.
    with host_process(tmp_path, "--sessions", "5", "--servers", "3", "--grandchildren") as host:
        await host.read_status()
        os.kill(host.pid, signal.SIGSTOP)
        assert len(host.families()) == 45
        killed = time.monotonic()
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone")
        assert time.monotonic() - killed < DEATH_LIMIT


async def test_a_forked_child_of_the_host_does_not_hide_its_death_from_the_watchdog(tmp_path: Path) -> None:
    # R-KILL-7: a child forked by the host (a multiprocessing worker) lets go of the watchdog's socket.
    with host_process(tmp_path, "--servers", "2", "--grandchildren", "--fork-child") as host:
        forked = (await host.read_status())["forked_child"]
        try:
            os.kill(host.pid, signal.SIGKILL)
            await poll_until(
                lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone"
            )
        finally:
            os.kill(forked, signal.SIGKILL)


async def test_sigterm_to_a_host_in_reclaim_on_signals_reclaims_everything_before_it_exits(tmp_path: Path) -> None:
    # R-KILL-7: no watchdog here, so only the signal helper can reclaim the setsid grandchildren.
    with host_process(tmp_path, "--servers", "2", "--grandchildren", "--signals", "--no-watchdog") as host:
        ready = await host.read_status()
        assert not ready["watchdog"]
        assert len(host.families()) == 6
        os.kill(host.pid, signal.SIGTERM)
        assert await host.wait_exit(10.0) == 128 + signal.SIGTERM
        assert host.families() == []  # already when it exited, not some time later


async def test_a_signal_releases_the_watchdog_only_after_the_host_reclaimed_everything(tmp_path: Path) -> None:
    # R-KILL-7: the teardown runs inside the cancelled block, but the watchdog keeps guarding until
    # the end, and is then released: it never takes the host's orderly exit for its death.
    with host_process(tmp_path, "--servers", "2", "--grandchildren", "--signals") as host:
        watchdog = (await host.read_status())["watchdog_pid"]
        os.kill(host.pid, signal.SIGINT)
        assert await host.wait_exit(10.0) == 128 + signal.SIGINT
        assert host.families() == []
        assert gone(watchdog)
        assert "is gone; reclaimed" not in await host.stderr()


async def test_a_killed_watchdog_is_replaced_and_the_replacement_guards_every_family(tmp_path: Path) -> None:
    # R-KILL-7: the host notices its watchdog's death, starts another and tells it what is alive.
    with host_process(tmp_path, "--sessions", "2", "--servers", "2", "--grandchildren") as host:
        first = (await host.read_status())["watchdog_pid"]
        os.kill(first, signal.SIGKILL)
        await poll_until(lambda: gone(first), limit=5.0, what="the watchdog exited")
        replaced: dict[str, object] = {}

        async def new_watchdog() -> bool:
            replaced.update(await host.status())
            return replaced.get("watchdog_replacements") == 1 and replaced.get("watchdog_pid") not in (None, first)

        await poll_until(new_watchdog, limit=5.0, what="a new watchdog", interval=0.02)
        assert len(host.families()) == 12  # a killed watchdog reclaims nothing: the host lives
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone")
        second = replaced["watchdog_pid"]
        assert isinstance(second, int)
        await poll_until(lambda: gone(second), limit=5.0, what="the watchdog exited")


# The back-off the keeper once waited before replacing a watchdog that died young.
OLD_BACK_OFF = 0.1


async def test_a_host_killed_right_after_its_watchdog_leaves_no_server_family(tmp_path: Path) -> None:
    # R-KILL-7: the watchdog is killed first, the host a moment later, well within the back-off the
    # keeper once waited. The replacement starts at once: from its fork on it guards every family.
    with host_process(tmp_path, "--sessions", "2", "--servers", "2", "--grandchildren") as host:
        first = (await host.read_status())["watchdog_pid"]
        assert len(host.families()) == 12
        os.kill(first, signal.SIGKILL)
        with trio.move_on_after(OLD_BACK_OFF * 0.6):  # the host is killed once its new watchdog is up, or now

            async def replaced() -> bool:
                return (await host.status())["watchdog_pid"] not in (None, first)

            await poll_until(replaced, limit=OLD_BACK_OFF, what="a new watchdog", interval=0.002)
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone")


async def test_a_host_that_closes_normally_leaves_neither_servers_nor_watchdog(tmp_path: Path) -> None:
    # R-KILL-4, R-KILL-7: the watchdog is released and waited for; it never outlives its work.
    with host_process(tmp_path, "--servers", "2", "--grandchildren") as host:
        watchdog = (await host.read_status())["watchdog_pid"]
        assert host.process.stdin is not None
        host.process.stdin.close()
        assert await host.wait_exit(3.0) == 0  # promptly: the watchdog exits when released
        assert host.families() == []
        assert gone(watchdog)


async def test_without_a_watchdog_the_parent_death_signal_still_ends_the_servers(tmp_path: Path) -> None:
    # R-KILL-7: servers that ignore stdin EOF end on SIGTERM when their host dies.
    with host_process(tmp_path, "--servers", "2", "--ignore-eof", "--no-watchdog") as host:
        ready = await host.read_status()
        assert ready["parent_death_signal"] and not ready["watchdog"]
        assert len(host.families()) == 2
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family of the host gone")


def worker_threads(pid: int) -> list[str]:
    """The names of trio's worker threads in process ``pid``."""
    names = []
    for thread in Path(f"/proc/{pid}/task").iterdir():
        try:
            names.append((thread / "comm").read_text().strip())
        except OSError:
            continue  # ended meanwhile
    return [name for name in names if name.startswith("Trio thread")]


@pytest.mark.timeout(40)
async def test_servers_outlive_the_worker_thread_that_could_have_forked_them(tmp_path: Path) -> None:
    # R-KILL-7: the parent-death signal fires when the *thread* that forked exits. trio forks in
    # worker threads that exit after 10 s idle; our servers are forked by a thread that never does.
    with host_process(tmp_path, "--servers", "2", "--ignore-eof", "--no-watchdog") as host:
        await host.read_status()
        servers = host.families()
        assert len(servers) == 2
        await poll_until(
            lambda: worker_threads(host.pid) == [], limit=20.0, what="the host's trio worker threads gone", interval=0.1
        )
        assert [server for server in servers if not is_alive(server)] == []


async def test_in_subreaper_mode_orphans_come_to_the_host_and_are_reaped(tmp_path: Path) -> None:
    # R-KILL-6: a dead server's children are re-parented to the host, reclaimed by tag, and collected.
    with host_process(tmp_path, "--servers", "1", "--grandchildren", "--subreaper", "--no-watchdog") as host:
        assert (await host.read_status())["subreaper"]
        family = host.families()
        (server,) = [member for member in family if "fault_server.py" in " ".join(member.cmdline())]
        grandchildren = [member for member in family if member.pid != server.pid]
        assert len(grandchildren) == 2
        os.kill(host.pid, signal.SIGSTOP)  # hold its reclamation while we look
        server.kill()

        def adopted() -> bool:
            """every grandchild re-parented to the host"""
            return all(child.ppid() == host.pid for child in grandchildren)

        await poll_until(adopted, limit=5.0, what="every grandchild re-parented to the host")
        os.kill(host.pid, signal.SIGCONT)

        def collected() -> bool:
            """every grandchild gone, not even a zombie"""
            return not any(psutil.pid_exists(child.pid) and child.is_running() for child in grandchildren)

        await poll_until(collected, limit=5.0, what="every grandchild gone, not even a zombie")
        zombies = [child for child in psutil.Process(host.pid).children() if child.status() == psutil.STATUS_ZOMBIE]
        assert zombies == []
