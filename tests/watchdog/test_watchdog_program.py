"""The watchdog program starts with the standard library only (R-KILL-7).

It runs by path with ``python -I -S``: no site-packages, so nothing but the
standard library can be imported, and every millisecond of its start-up is a
moment its host's families are unguarded after a replacement. It reads
``/proc`` with the library's one reader, which it must load without the
package's ``__init__`` (that imports the whole runtime).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO

import psutil
import pytest

from wave_actors._family import cgroup
from wave_actors._family.procfs import read_stat
from wave_actors._family.tag import FAMILY_VARIABLE, family_tag
from wave_actors._watchdog.client import PROGRAM
from wave_actors.testing import is_alive, kill_processes

# Runs the program's module code (not main(), which would detach and wait for a host).
LOADED = "import json, runpy, sys\nrunpy.run_path(sys.argv[1])\nprint(json.dumps(sorted(sys.modules)))\n"


def test_run_by_path_it_loads_the_standard_library_and_the_proc_reader_only() -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LOADED, str(PROGRAM)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    ours = [name for name in loaded if name.split(".")[0] == "wave_actors"]
    assert ours == ["wave_actors", "wave_actors._family", "wave_actors._family.procfs"]
    foreign = [
        name for name in loaded if name.split(".")[0] not in {*sys.stdlib_module_names, "wave_actors", "__main__"}
    ]
    assert foreign == []


# A session leader whose child shares its session; both wait to be killed, and carry no family tag.
SESSION = (
    "import signal, subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import signal\\nwhile True: signal.pause()'])\n"
    "print(child.pid, flush=True)\n"
    "while True: signal.pause()\n"
)


def wait_gone(pid: int, *, timeout: float) -> None:
    """Wait until process ``pid`` (a child or not) has exited, at most ``timeout`` seconds."""
    try:
        psutil.Process(pid).wait(timeout=timeout)
    except (psutil.NoSuchProcess, psutil.TimeoutExpired):
        pass  # gone already, or still there: the caller's assertion says which


def start_watchdog(stderr: IO[bytes]) -> tuple[socket.socket, int]:
    """A watchdog for this process, as the host starts it: our end of its socket, and its pid once it is ready."""
    host_end, watchdog_end = socket.socketpair()
    with watchdog_end:
        subprocess.run(
            [sys.executable, "-I", "-S", str(PROGRAM), "--host", str(os.getpid()), "--variable", FAMILY_VARIABLE],
            stdin=watchdog_end.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            check=True,
            timeout=30,
        )
    host_end.settimeout(30)
    ready = host_end.recv(64).split()
    assert ready[0] == b"ready", ready
    return host_end, int(ready[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watchdog is Linux only")
@pytest.mark.parametrize("reused", [False, True])
def test_a_root_pid_that_names_another_process_now_is_not_its_session(tmp_path: Path, reused: bool) -> None:
    # R-KILL-7: the watchdog knows a root by pid and start time. Once the root is gone and its pid
    # reused by a session leader (here: a start time that is not the leader's), neither the leader
    # nor its session may be taken for the family when the host dies.
    leader = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", SESSION], stdout=subprocess.PIPE, start_new_session=True
    )
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    stat = read_stat(leader.pid)
    assert stat is not None
    start = stat.start - 7 if reused else stat.start
    try:
        with open(tmp_path / "watchdog.log", "wb") as log:
            host_end, watchdog = start_watchdog(log)
        tag = family_tag()
        host_end.sendall(f"begin {tag} 0.1 0.1\nroot {tag} {leader.pid} {start}\n".encode())
        host_end.close()  # the host is dead
        wait_gone(watchdog, timeout=10)
        assert not is_alive(watchdog)
        assert (is_alive(leader.pid), is_alive(child)) == ((True, True) if reused else (False, False))
    finally:
        kill_processes([psutil.Process(pid) for pid in (child, leader.pid) if is_alive(pid)])
        leader.wait()
        leader.stdout.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
def test_at_the_host_death_a_family_in_a_cgroup_is_ended_by_it_and_the_cgroup_removed(tmp_path: Path) -> None:
    # R-KILL-10: a process with no tag, in no session and no tree of a known root, only in the cgroup.
    directory, reason = cgroup.acquire()
    if directory is None:
        pytest.skip(f"no cgroup can be made for server families here: {reason}")
    try:
        tag = family_tag()
        family = cgroup.make_family_cgroup(directory, tag)
        inside = subprocess.Popen(
            ["/bin/sh", "-c", 'echo 0 > "$0" && echo in && exec sleep 60', os.path.join(family, "cgroup.procs")],
            env={},
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert inside.stdout is not None
        assert inside.stdout.readline() == b"in\n"  # it has moved itself into the cgroup
        inside.stdout.close()
        assert cgroup.cgroup_members(family) == [inside.pid]
        with open(tmp_path / "watchdog.log", "wb") as log:
            host_end, watchdog = start_watchdog(log)
        host_end.sendall(f"begin {tag} 0.1 0.1\ncgroup {tag} {family}\n".encode())
        host_end.close()  # the host is dead
        assert inside.wait(timeout=5) in (-signal.SIGTERM, -signal.SIGKILL)  # found by its cgroup alone
        wait_gone(watchdog, timeout=10)
        assert not os.path.exists(family)
        assert "reclaimed 1 process(es) of 1 server family" in (tmp_path / "watchdog.log").read_text()
    finally:
        cgroup.release()
