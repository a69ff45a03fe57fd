"""Finding a server's process family: the walk before any signal, the scan after, pid reuse (R-KILL-1).

The server here is a small Python program that starts a member the way a
real server might, prints the member's pid, and exits on stdin EOF; each
member hides from one or two of the three marks (descendant, session, tag).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import attrs
import psutil
import pytest
import trio

from wave_actors import Graces
from wave_actors._family.procfs import read_forks, read_pid_max, read_stat
from wave_actors._family.tag import FAMILY_VARIABLE, family_tag
from wave_actors._transport import proctree
from wave_actors._transport.reclamation import reclaim
from wave_actors.testing import is_alive, kill_processes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")

GRACES = Graces(eof=2.0, term=1.0, kill=1.0)

# The internals under test, named once.
descendants_linux = proctree._descendants_linux  # pyright: ignore[reportPrivateUsage]
open_scanned = proctree._open  # pyright: ignore[reportPrivateUsage]
Row = proctree._Row  # pyright: ignore[reportPrivateUsage]
scan = proctree._scan_linux  # pyright: ignore[reportPrivateUsage]
Snapshot = proctree._Snapshot  # pyright: ignore[reportPrivateUsage]

# Sleeps until killed; it never reads anything, so only a signal ends it.
SLEEPER = "import signal\nwhile True: signal.pause()"
# The same, saying so on stdout once it runs (its environment is then its own, not its parent's).
READY_SLEEPER = "import signal\nprint('ready', flush=True)\nwhile True: signal.pause()"

SERVER = textwrap.dedent(
    """
    import os, subprocess, sys
    how = sys.argv[1]
    sleeper = [sys.executable, "-I", "-S", "-c", {sleeper!r}]
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if how == "setsid-no-tag":
        # A new session and a scrubbed environment: only its parent links it to the server.
        child = subprocess.Popen(sleeper, env={{}}, start_new_session=True, **quiet)
        pid = child.pid
    else:
        # Double-forked into a new session: an orphan before the server closes; only its tag is left.
        read, write = os.pipe()
        middle = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c",
             "import subprocess, sys, os; c = subprocess.Popen(sys.argv[1:], start_new_session=True, "
             "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "os.write(" + str(write) + ", str(c.pid).encode())", *sleeper],
            pass_fds=(write,), **quiet,
        )
        middle.wait()
        os.close(write)
        pid = int(os.read(read, 64))
    print(pid, flush=True)
    sys.stdin.read()
    """
).format(sleeper=SLEEPER)


def stat_start(pid: int) -> int:
    stat = read_stat(pid)
    assert stat is not None
    return stat.start


async def start(how: str) -> tuple[trio.Process, str, int]:
    """The server, its tag, and the pid of the member it started."""
    tag = family_tag()
    process = await trio.lowlevel.open_process(
        [sys.executable, "-I", "-S", "-c", SERVER, how],
        stdin=-1,
        stdout=-1,
        env={**os.environ, FAMILY_VARIABLE: tag},
        start_new_session=True,
    )
    assert process.stdout is not None
    line = b""
    with trio.fail_after(10):
        while not line.endswith(b"\n"):
            line += await process.stdout.receive_some(64)
    return process, tag, int(line)


async def close_stdin_of(process: trio.Process) -> None:
    assert process.stdin is not None
    await process.stdin.aclose()


async def reclaim_politely(process: trio.Process, tag: str, member: int) -> tuple[list[int], bool]:
    """What ``reclaim`` returned, and whether ``member`` outlived it (then it is killed here: the census may miss it)."""
    survivor = psutil.Process(member)
    try:
        left = await reclaim(process, tag=tag, graces=GRACES, close_stdin=lambda: close_stdin_of(process))
    finally:
        assert process.stdout is not None
        await process.stdout.aclose()
    outlived = is_alive(survivor)
    if outlived:
        kill_processes([survivor])
    return left, outlived


async def test_a_setsid_child_without_the_tag_is_found_before_the_server_exits() -> None:
    # R-KILL-1: once the server exits on EOF, nothing links this child to it but the walk taken before.
    process, tag, member = await start("setsid-no-tag")
    assert os.getsid(member) == member and FAMILY_VARIABLE not in psutil.Process(member).environ()
    assert member in dict(descendants_linux(process.pid, stat_start(process.pid)))
    assert await reclaim_politely(process, tag, member) == ([], False)
    assert process.returncode == 0  # it exited on EOF: the member was found before, not by a signal's timing


async def test_a_double_forked_orphan_is_found_by_its_tag() -> None:
    # R-KILL-1: re-parented before reclamation began, in a session of its own: only the scan's tag mark finds it.
    process, tag, member = await start("double-fork")
    assert psutil.Process(member).ppid() != process.pid and os.getsid(member) == member
    assert member not in dict(descendants_linux(process.pid, stat_start(process.pid)))
    assert await reclaim_politely(process, tag, member) == ([], False)


async def test_a_scanned_pid_that_now_names_another_process_is_not_opened() -> None:
    # A recycled pid is never signalled: the start time must match the scan's.
    process = await trio.lowlevel.open_process([sys.executable, "-I", "-S", "-c", SLEEPER])
    try:
        stat = read_stat(process.pid)
        assert stat is not None
        opened = open_scanned(process.pid, stat.start)
        assert opened is not None and opened.pid == process.pid
        assert open_scanned(process.pid, stat.start - 1) is None
    finally:
        process.kill()
        await process.wait()
    assert read_stat(process.pid) is None  # reaped: gone from /proc


async def tagged_sleeper() -> tuple[trio.Process, str]:
    """A sleeping child carrying a fresh tag, once it runs."""
    tag = family_tag()
    process = await trio.lowlevel.open_process(
        [sys.executable, "-I", "-S", "-c", READY_SLEEPER], stdout=-1, env={**os.environ, FAMILY_VARIABLE: tag}
    )
    assert process.stdout is not None
    with trio.fail_after(10):
        assert await process.stdout.receive_some(16) == b"ready\n"
    return process, tag


async def stop(process: trio.Process) -> None:
    process.kill()
    await process.wait()
    assert process.stdout is not None
    await process.stdout.aclose()


async def test_a_later_scan_reads_the_processes_started_since_the_previous_one() -> None:
    pid_max = read_pid_max()
    before = scan(None, pid_max)
    process, tag = await tagged_sleeper()
    try:
        assert process.pid not in before.rows
        assert scan(before, pid_max).rows[process.pid].tag == tag
    finally:
        await stop(process)


async def test_a_row_is_read_again_when_its_pid_may_have_come_back_or_it_was_read_too_young() -> None:
    # A pid comes back only after the whole pid space: the fork count decides whether a row still holds.
    pid_max = read_pid_max()
    process, tag = await tagged_sleeper()
    try:
        row = scan(None, pid_max).rows[process.pid]
        assert row.tag == tag
        stale = Row(process.pid, row.start - 100, row.ppid, row.sid, "another family's")
        forks = read_forks()
        assert forks is not None
        # Few forks since: the same pid is the same process, and its row is kept as read.
        assert scan(Snapshot({process.pid: stale}, forks), pid_max).rows[process.pid] == stale
        # As many forks as the pid space since (or an unknown count): read again, environment included.
        for count in (forks - pid_max, None):
            fresh = scan(Snapshot({process.pid: stale}, count), pid_max).rows[process.pid]
            assert (fresh.start, fresh.tag) == (row.start, tag)
        # Read while too young to trust: read again, whatever the count.
        young = attrs.evolve(stale, start=row.start, tag=None, settled=False)
        assert scan(Snapshot({process.pid: young}, forks), pid_max).rows[process.pid].tag == tag
    finally:
        await stop(process)


PID_REUSE_PROGRAM = os.path.join(os.path.dirname(__file__), "pid_reuse_program.py")


def test_a_server_pid_reused_by_an_unrelated_session_is_never_signalled() -> None:
    # R-KILL-1: once the server is waited for, its pid may name another process, and its session id
    # another session; a reclaim that still counted them would kill an unrelated session.
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a pid namespace whose next pid can be chosen")
    completed = subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", sys.executable, PID_REUSE_PROGRAM],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if completed.returncode != 0 and "unshare" in completed.stderr:
        pytest.skip(f"no pid namespace here: {completed.stderr.strip()}")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.splitlines()[-1])
    assert report == {"reused": True, "leader_alive": True, "child_alive": True}
