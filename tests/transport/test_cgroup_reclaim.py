"""A cgroup per server family: nothing a server starts escapes its reclamation (R-KILL-10).

The attack is a daemon that detaches as daemons do: a double fork, ``setsid``
and an empty environment (``fault_server_entry(escaping_grandchild=LABEL)``).
It leaves the server's tree, its session and its tag: the three marks the
library found families by. It cannot leave the cgroup it was born in.

These tests make cgroups, so they need a machine where this process may
(root, or a cgroup v2 hierarchy delegated to it): elsewhere they skip and say
why. The escaping daemon is invisible to the suite's leak check (it carries
no environment), so every test kills what its label finds, whatever happened.
The host's death with such a family is ``tests/host_death``'s.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from polling import poll_until
from presets import FAST_SESSION

from wave_actors import Graces, Host
from wave_actors._family import cgroup
from wave_actors._transport.reclamation import reclaim
from wave_actors.testing import escaped_processes, fault_server_entry, kill_processes

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's"),
    pytest.mark.timeout(30),
]


@pytest.fixture
def own_cgroup() -> str:
    """This process's cgroup directory, where hosts make theirs; skips where no cgroup can be made."""
    directory, reason = cgroup.probe()
    if directory is None:
        pytest.skip(f"no cgroup can be made for server families here: {reason}")
    return directory


@pytest.fixture
def label() -> Iterator[str]:
    """A fresh label for escaping daemons; whatever carries it at the end is killed."""
    mark = f"escaping-{uuid.uuid4().hex}"
    yield mark
    kill_processes(escaped_processes(mark))


def host_directories(own: str, pid: int) -> list[str]:
    """The cgroup directories process ``pid`` holds in ``own``."""
    return [name for name in os.listdir(own) if name.startswith(f"wave-actors-{pid}-")]


def family_cgroups(own: str, pid: int) -> list[str]:
    """The family cgroups in the directories of process ``pid``."""
    return [
        entry.path
        for name in host_directories(own, pid)
        for entry in os.scandir(os.path.join(own, name))
        if entry.is_dir(follow_symlinks=False)
    ]


async def escaped(label: str, count: int) -> None:
    """Wait until ``count`` escaping daemons run (they detach while their server starts)."""
    await poll_until(lambda: len(escaped_processes(label)) == count, limit=10.0, what=f"{count} escaping daemon(s)")


async def test_an_escaping_family_is_gone_when_destroy_returns(tmp_path: Path, own_cgroup: str, label: str) -> None:
    servers = {
        "escapes": fault_server_entry(escaping_grandchild=label, grandchild=True, setsid_grandchild=True),
        "stubborn": fault_server_entry(escaping_grandchild=label, ignore_sigterm=True, exit_on_eof=False),
    }
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        assert host.orphan_protection().cgroups
        session = await host.create_session(tmp_path, servers)
        await session.prepare_turn()
        await escaped(label, 2)
        assert len(family_cgroups(own_cgroup, os.getpid())) == 2
        await host.destroy_session(session.id)
        assert escaped_processes(label) == []  # already when destroy returned
        assert family_cgroups(own_cgroup, os.getpid()) == []  # and their cgroups are removed
    assert host_directories(own_cgroup, os.getpid()) == []  # the host's own, once it closed


async def test_with_the_tags_alone_the_escaping_daemon_outlives_destroy(tmp_path: Path, label: str) -> None:
    # The limit the cgroups lift: here only because this test asks for it.
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION, cgroups=False) as host:
        assert not host.orphan_protection().cgroups
        session = await host.create_session(tmp_path, {"escapes": fault_server_entry(escaping_grandchild=label)})
        await session.prepare_turn()
        await escaped(label, 1)
        await host.destroy_session(session.id)
        assert len(escaped_processes(label)) == 1


async def test_a_server_without_a_cgroup_of_its_own_is_never_started_outside_one(
    tmp_path: Path, own_cgroup: str, label: str
) -> None:
    # Every family of a host with cgroups in force is in its own; none shares the host's.
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        session = await host.create_session(tmp_path, {f"s{i}": fault_server_entry(grandchild=True) for i in range(3)})
        await session.prepare_turn()
        cgroups = family_cgroups(own_cgroup, os.getpid())
        members = [set(cgroup.cgroup_members(path)) for path in cgroups]
        assert len(members) == 3 and all(len(found) == 2 for found in members)  # a server and its grandchild
        assert not set.intersection(*members)
        assert os.getpid() not in set.union(*members)


async def test_a_server_reclaimed_before_it_entered_its_cgroup_never_runs(tmp_path: Path, own_cgroup: str) -> None:
    # A dial cancelled a moment after the spawn: the new process has not entered its cgroup yet.
    # It counts all the same, and is ended before it can enter and start the server.
    directory, reason = await trio.to_thread.run_sync(cgroup.acquire)
    assert directory is not None, reason
    started = tmp_path / "started"
    try:
        family = cgroup.make_family_cgroup(directory, uuid.uuid4().hex)
        late = f"sleep 0.3; echo 0 > {family}/cgroup.procs; touch {started}; exec sleep 30"
        process = await trio.lowlevel.open_process(["/bin/sh", "-c", late], start_new_session=True)
        left = await reclaim(
            process, tag=None, graces=Graces(eof=0.5, term=0.5, kill=1.0), close_stdin=None, cgroup=family
        )
        assert left == [] and process.returncode is not None
        await trio.sleep(0.5)
        assert not started.exists() and not cgroup.cgroup_populated(family)
        assert cgroup.remove_family_cgroup(family)
    finally:
        await trio.to_thread.run_sync(cgroup.release)
