"""Where a host's cgroups go: found from ``/proc``, never assumed (R-KILL-10).

The machines this library runs on mount cgroup v2 in many ways: as the
whole of ``/sys/fs/cgroup`` (systemd's unified layout), as its ``unified``
subdirectory next to v1 controllers (the hybrid layout), inside a cgroup
namespace whose root is not the hierarchy's, or not at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wave_actors._family import cgroup
from wave_actors._family.procfs import read_stat

UNIFIED = "31 23 0:28 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
HYBRID = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)
SYSTEMD = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/host.service\n"


@pytest.mark.parametrize(
    ("cgroups", "mounts", "expected"),
    [
        (SYSTEMD, UNIFIED, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/host.service"),
        ("4:memory:/x\n0::/\n", HYBRID, "/sys/fs/cgroup/unified"),
        ("0::/a/b\n", "9 1 0:5 /a /mnt/cg\\040v2 rw - cgroup2 none rw\n", "/mnt/cg v2/b"),  # a namespace's root
        ("0::/\n", "9 1 0:5 / /srv/optional rw shared:7 - cgroup2 none rw\n", "/srv/optional"),  # optional fields
    ],
    ids=["unified", "hybrid", "mounted-below-its-root", "optional-fields"],
)
def test_the_cgroup_is_found_where_it_is_mounted(cgroups: str, mounts: str, expected: str) -> None:
    assert cgroup.locate_cgroup(cgroups, mounts) == (expected, "")


@pytest.mark.parametrize(
    ("cgroups", "mounts", "reason"),
    [
        ("4:memory:/x\n", HYBRID, "no cgroup v2 hierarchy"),
        ("0::/a\n", "9 1 0:5 /b /mnt rw - cgroup2 none rw\n", "no cgroup2 file system"),
        ("0::/a\n", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", "no cgroup2 file system"),
        ("0::/gone (deleted)\n", UNIFIED, "cannot be placed"),
    ],
    ids=["v1-only", "another-subtree", "not-mounted", "deleted"],
)
def test_a_cgroup_that_cannot_be_found_is_a_reason_never_a_guess(cgroups: str, mounts: str, reason: str) -> None:
    directory, why = cgroup.locate_cgroup(cgroups, mounts)
    assert directory is None and reason in why


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
def test_a_probe_leaves_nothing_behind_and_names_what_is_missing() -> None:
    own, reason = cgroup.own_cgroup()
    directory, why = cgroup.probe()
    assert (directory is None) == bool(why)
    if own is not None:
        assert [name for name in os.listdir(own) if name.startswith(f"wave-actors-probe-{os.getpid()}-")] == []
    if directory is None:
        assert why  # e.g. "no cgroup can be made in ... (Permission denied)"
    else:
        assert directory == own and reason == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
def test_the_first_holder_removes_what_dead_processes_left_and_nothing_of_the_living() -> None:
    # A host killed together with its watchdog leaves its directory behind, empty once its families
    # are gone; the next process that holds placement removes it. A live process's stays.
    own, reason = cgroup.probe()
    if own is None:
        pytest.skip(f"no cgroup can be made for server families here: {reason}")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = read_stat(dead.pid)
    dead.wait()
    assert stat is not None and read_stat(dead.pid) is None
    living = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        lives = read_stat(living.pid)
        assert lives is not None
        left = os.path.join(own, f"wave-actors-{dead.pid}-{stat.start}")
        kept = os.path.join(own, f"wave-actors-{living.pid}-{lives.start}")
        for directory in (left, kept):
            os.makedirs(os.path.join(directory, "family"))
        directory, reason = cgroup.acquire()
        try:
            assert directory is not None, reason
            assert not os.path.exists(left) and os.path.isdir(os.path.join(kept, "family"))
        finally:
            cgroup.release()
        assert directory is not None and not os.path.exists(directory)  # the last holder removes its own
    finally:
        living.kill()
        living.wait()
        for family in (os.path.join(kept, "family"), kept):
            os.rmdir(family)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")
def test_priming_the_migration_lock_moves_nothing() -> None:
    # The write that readies the kernel's migration lock names this process and the cgroup it is in.
    own, reason = cgroup.probe()
    if own is None:
        pytest.skip(f"no cgroup can be made for server families here: {reason}")
    with open("/proc/self/cgroup") as file:
        before = file.read()
    members_before = cgroup.cgroup_members(own)
    assert cgroup.prime_once()
    assert cgroup.prime_once()  # where it is is remembered, and read again
    with open("/proc/self/cgroup") as file:
        assert file.read() == before
    assert os.getpid() in members_before and os.getpid() in cgroup.cgroup_members(own)


def test_priming_where_no_cgroup_can_be_found_is_refused_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroup, "_where_i_am", lambda: None)
    assert not cgroup.prime_once()


def test_priming_refused_by_the_kernel_is_quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A cgroup.procs that cannot be opened, or whose write fails: the server then waits for the lock itself.
    monkeypatch.setattr(cgroup, "_where_i_am", lambda: str(tmp_path / "gone"))
    assert not cgroup.prime_once()
    (tmp_path / "cgroup.procs").mkdir()  # opening a directory for writing fails
    monkeypatch.setattr(cgroup, "_where_i_am", lambda: str(tmp_path))
    assert not cgroup.prime_once()


def test_asks_to_prime_made_while_it_runs_are_one_more_run(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    entered = threading.Event()
    go_on = threading.Event()
    second_done = threading.Event()

    def prime() -> bool:
        runs.append(len(runs))
        if len(runs) == 1:
            entered.set()
            go_on.wait()
        else:
            second_done.set()
        return True

    monkeypatch.setattr(cgroup, "prime_once", prime)
    primer = cgroup._Primer()  # pyright: ignore[reportPrivateUsage]
    primer.ask()
    assert entered.wait(10)
    primer.ask()
    primer.ask()
    go_on.set()
    assert second_done.wait(10)
    assert runs == [0, 1]
