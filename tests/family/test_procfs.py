"""The one reader of ``/proc``: a process's stat, its environment, its children (R-KILL-1).

The process table, the watchdog, subreaper mode and the census all see
processes through it, so what it gets wrong every one of them gets wrong.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from wave_actors._family import procfs

pytestmark = pytest.mark.skipif(not procfs.LINUX, reason="/proc is Linux's")

# Says it runs, once its environment is its own, then sleeps until killed.
READY_SLEEPER = "import signal\nprint('ready', flush=True)\nwhile True: signal.pause()"


async def started(argv: list[str], env: dict[str, str] | None = None) -> trio.Process:
    process = await trio.lowlevel.open_process(argv, stdout=-1, env=env)
    assert process.stdout is not None
    with trio.fail_after(10):
        assert await process.stdout.receive_some(16) == b"ready\n"
    return process


async def stopped(process: trio.Process) -> None:
    process.kill()
    await process.wait()
    assert process.stdout is not None
    await process.stdout.aclose()


@pytest.fixture
async def sleeper() -> AsyncIterator[trio.Process]:
    process = await started(
        [sys.executable, "-I", "-S", "-c", READY_SLEEPER],
        env={"FIRST": "1", "WAVE_X_TAG": "suffix", "WAVE_X": "a=b", "EMPTY": ""},
    )
    try:
        yield process
    finally:
        await stopped(process)


def test_the_stat_of_this_process_places_it() -> None:
    stat = procfs.read_stat(os.getpid())
    assert stat is not None
    assert (stat.state, stat.ppid, stat.sid) == ("R", os.getppid(), os.getsid(0))
    assert 0 < stat.start <= procfs.boot_ticks()
    assert not stat.zombie


async def test_a_command_name_with_parentheses_and_spaces_does_not_shift_the_fields(tmp_path: Path) -> None:
    # The name is the one field that may hold anything: ") 1 2 (" must not be read as fields.
    name = tmp_path / "a) Z 1 (b"
    name.symlink_to(sys.executable)
    process = await started([str(name), "-I", "-S", "-c", READY_SLEEPER])
    try:
        stat = procfs.read_stat(process.pid)
        assert stat is not None
        assert (stat.ppid, stat.sid, stat.zombie) == (os.getpid(), os.getsid(0), False)
    finally:
        await stopped(process)


async def test_an_exited_child_is_a_zombie_until_collected_then_gone() -> None:
    process = await trio.lowlevel.open_process([sys.executable, "-I", "-S", "-c", "pass"])
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet collected
    stat = procfs.read_stat(process.pid)
    assert stat is not None and stat.zombie
    assert procfs.read_environment_variable(process.pid, "PATH") is None  # a zombie's environment is gone
    await process.wait()
    assert procfs.read_stat(process.pid) is None


async def test_a_variable_is_read_by_its_whole_name(sleeper: trio.Process) -> None:
    read = procfs.read_environment_variable
    assert read(sleeper.pid, "FIRST") == "1"  # the first entry has no separator before it
    assert read(sleeper.pid, "WAVE_X") == "a=b"  # not WAVE_X_TAG, whose name it begins
    assert read(sleeper.pid, "EMPTY") == ""
    assert read(sleeper.pid, "X") is None
    assert read(sleeper.pid, "TAG") is None


def test_another_users_environment_is_not_ours_to_read() -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every environment")
    assert procfs.read_environment_variable(1, "PATH") is None


async def test_children_are_listed_and_the_pid_table_holds_them(sleeper: trio.Process) -> None:
    assert procfs.children_listed()
    assert sleeper.pid in procfs.read_children(os.getpid())
    assert procfs.read_children(sleeper.pid) == []
    assert {os.getpid(), sleeper.pid} <= set(procfs.read_pids())


def test_the_fork_count_grows_and_pid_max_bounds_every_pid() -> None:
    before = procfs.read_forks()
    assert before is not None
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
    after = procfs.read_forks()
    assert after is not None and after > before
    assert max(procfs.read_pids()) < procfs.read_pid_max()
