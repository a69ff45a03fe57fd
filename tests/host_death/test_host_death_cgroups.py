"""A host killed with SIGKILL leaves nothing, not even a daemon that escaped every mark but its cgroup (R-KILL-7, R-KILL-10).

Each server of the host starts a daemon as daemons detach: a double fork,
``setsid``, an empty environment. Only the cgroup of its family holds it,
which the host's watchdog ends with ``cgroup.kill``. The host reports
whether it could make cgroups; where it could not (neither root nor a cgroup
v2 hierarchy delegated to it) the test skips and says so. The daemons carry
no environment, so the suite's leak check cannot see them: every test kills
what its label finds, whatever happened.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from host_death_support import host_process
from polling import poll_until

from wave_actors.testing import escaped_processes, kill_processes

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's"),
    pytest.mark.timeout(30),
]

# R-KILL-7: no family outlives its host by more than this.
DEATH_LIMIT = 2.0


@pytest.fixture
def label() -> Iterator[str]:
    """A fresh label for escaping daemons; whatever carries it at the end is killed."""
    mark = f"escaping-{uuid.uuid4().hex}"
    yield mark
    kill_processes(escaped_processes(mark))


async def test_an_escaping_family_is_gone_after_a_host_sigkill(tmp_path: Path, label: str) -> None:
    with host_process(tmp_path, "--sessions", "2", "--servers", "2", "--grandchildren", "--escaping", label) as host:
        ready = await host.read_status()
        if not ready["cgroups"]:
            pytest.skip("the host could make no cgroup here (it needs root, or cgroup v2 delegated to it)")
        assert ready["watchdog_pid"] is not None
        await poll_until(lambda: len(escaped_processes(label)) == 4, limit=10.0, what="4 escaping daemons")
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: escaped_processes(label) == [], limit=DEATH_LIMIT, what="every escaping daemon gone")
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family gone")


async def test_with_the_tags_alone_an_escaping_daemon_outlives_a_host_sigkill(tmp_path: Path, label: str) -> None:
    # What the cgroups are for: without them, the watchdog finds no mark on the daemon.
    with host_process(tmp_path, "--servers", "1", "--escaping", label, "--no-cgroups") as host:
        assert not (await host.read_status())["cgroups"]
        await poll_until(lambda: len(escaped_processes(label)) == 1, limit=10.0, what="the escaping daemon")
        os.kill(host.pid, signal.SIGKILL)
        await poll_until(lambda: host.families() == [], limit=DEATH_LIMIT, what="every server family gone")
        assert len(escaped_processes(label)) == 1
