"""The ``wave-actors`` command says what guards against its death, and is guarded (R-KILL-7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from host_death_support import MARK_VARIABLE
from polling import poll_until

from wave_actors import Host
from wave_actors.testing import fault_server_entry, kill_processes, process_census

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="host-death defences are Linux only"),
    pytest.mark.timeout(30),
]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "wave_actors", *args]


async def test_servers_reports_the_defences_of_the_commands_that_dial(tmp_path: Path) -> None:
    completed = subprocess.run(
        command("servers", "--json", "--home", str(tmp_path)), cwd=tmp_path, capture_output=True, text=True, check=True
    )
    async with Host.open(home=tmp_path) as host:  # what a host of this process has, the command's has too
        cgroups = host.orphan_protection().cgroups
    assert json.loads(completed.stdout)["host_death"] == {
        "watchdog": True,
        "parent_death_signal": True,
        "subreaper": False,
        "cgroups": cgroups,
    }
    table = subprocess.run(
        command("servers", "--home", str(tmp_path)), cwd=tmp_path, capture_output=True, text=True, check=True
    )
    expected = f"watchdog on, parent-death signal on, subreaper off, a cgroup per server {'on' if cgroups else 'off'}"
    assert expected in table.stdout


async def test_watch_killed_with_sigkill_leaves_no_server_family(tmp_path: Path) -> None:
    # R-KILL-7: the command's session belongs to a Host, whose watchdog reclaims what it started.
    mark = uuid.uuid4().hex
    entry = {**fault_server_entry(grandchild=True, setsid_grandchild=True), "env": {MARK_VARIABLE: mark}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"echo": entry}}))
    process = subprocess.Popen(
        command("watch", "--json", "--home", str(tmp_path), "--workdir", str(tmp_path)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )

    def family() -> list[object]:
        return list(process_census(MARK_VARIABLE, mark, descendants=False))

    try:
        assert process.stdout is not None
        for line in process.stdout:  # bounded by the test's timeout
            if json.loads(line)["servers"][0]["state"] == "connected":
                break
        assert len(family()) == 3
        killed = time.monotonic()
        os.kill(process.pid, signal.SIGKILL)
        await poll_until(lambda: family() == [], limit=2.0, what="every process of the command's family gone")
        assert time.monotonic() - killed < 2.0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
        kill_processes(process_census(MARK_VARIABLE, mark, descendants=False))
