"""``wave-actors watch``: a live status table until interrupted; Ctrl-C reclaims everything, exit 130 (R-CLI, R-HOST-2)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import psutil
from cli_support import RunCli, cli_command

from wave_actors.testing import is_alive


def test_json_lines_are_versioned_snapshots_until_the_duration_ends(run_cli: RunCli) -> None:
    completed = run_cli("watch", "--json", "--duration", "4")

    assert completed.returncode == 0, completed.stderr
    snapshots = [json.loads(line) for line in completed.stdout.splitlines()]
    versions = [snapshot["version"] for snapshot in snapshots]
    assert versions == sorted(set(versions))
    first = {server["name"]: server["state"] for server in snapshots[0]["servers"]}
    last = {server["name"]: server["state"] for server in snapshots[-1]["servers"]}
    assert first == {"echo": "disconnected", "off": "disabled"}
    assert last == {"echo": "connected", "off": "disabled"}


def test_text_output_redraws_a_table_per_snapshot(run_cli: RunCli) -> None:
    completed = run_cli("watch", "--duration", "4")

    assert completed.returncode == 0, completed.stderr
    headers = [line for line in completed.stdout.splitlines() if line.startswith("wave-actors watch:")]
    assert len(headers) >= 2
    tables = completed.stdout.split("wave-actors watch:")[1:]
    assert "echo    stdio  disconnected" in tables[0]
    assert "echo    stdio  connected" in tables[-1]


def test_interrupt_reclaims_every_process_and_exits_130(workdir: Path, home: Path) -> None:
    process = subprocess.Popen(
        cli_command("watch", "--json", "--home", str(home)),
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        states: dict[str, str] = {}
        for line in process.stdout:
            states = {server["name"]: server["state"] for server in json.loads(line)["servers"]}
            if states["echo"] == "connected" or time.monotonic() > deadline:
                break
        assert states["echo"] == "connected"
        servers = psutil.Process(process.pid).children(recursive=True)
        assert servers

        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, stderr  # 128 + SIGINT, as for every command
    assert "SIGINT" in stderr
    assert not [server.pid for server in servers if is_alive(server)]
