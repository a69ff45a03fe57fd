"""``wave-actors demo``: the self-contained walkthrough passes, quickly, and leaves no process (R-CLI)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import cli_command

pytestmark = pytest.mark.slow


def test_demo_passes_every_check_and_ends_with_no_process_left(tmp_path: Path) -> None:
    started = time.monotonic()
    completed = subprocess.run(
        cli_command("demo"), cwd=tmp_path, capture_output=True, text=True, timeout=55, check=False
    )
    elapsed = time.monotonic() - started

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.rstrip().endswith("0 processes left")
    assert "✗" not in completed.stdout
    for step in (
        "prepare_turn()",
        "disconnect(",
        "reconnect",
        'destroy_session("chat-2")',
        'destroy_session("chat-1")',
    ):
        assert step in completed.stdout, step
    assert completed.stderr == ""
    assert elapsed < 15, f"the demo took {elapsed:.1f} s"


def test_demo_json_reports_every_step(tmp_path: Path) -> None:
    completed = subprocess.run(
        cli_command("demo", "--json"), cwd=tmp_path, capture_output=True, text=True, timeout=55, check=False
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    document = json.loads(completed.stdout)
    assert document["ok"] is True
    assert document["processes_left"] == 0
    assert len(document["steps"]) == 8
    assert all(check["ok"] for step in document["steps"] for check in step["checks"])
