"""``call --timeout``, the progress line on a terminal, and what forgetting ``--args`` says (R-CLI, R-TOOL-4, R-TOOL-10)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, run_on_terminal, write_servers

from wave_actors.testing import fault_server_entry, is_alive


@pytest.fixture
def project(workdir: Path) -> Path:
    """``quick`` has a 300 ms deadline in its entry; ``progress`` sends progress notifications; ``slow`` logs calls."""
    write_servers(
        workdir / ".mcp.json",
        {
            "quick": {**fault_server_entry(), "tool_timeout_ms": 300},
            "progress": fault_server_entry(progress_tool=True),
            "slow": fault_server_entry(call_log=workdir / "calls.jsonl"),
        },
    )
    return workdir


def test_timeout_ends_a_call_that_runs_past_it_with_exit_1(run_cli: RunCli, project: Path) -> None:
    started = time.monotonic()
    completed = run_cli("call", "slow", "sleep", "--args", '{"seconds": 60}', "--timeout", "0.5")

    assert completed.returncode == 1
    assert time.monotonic() - started < 30
    [line] = completed.stderr.splitlines()
    assert "'slow'" in line and "timed out after 0.5 s" in line
    [call] = [json.loads(record) for record in (project / "calls.jsonl").read_text().splitlines()]
    assert not is_alive(call["pid"])  # the server went with the command


def test_timeout_replaces_the_entrys_deadline_also_when_longer(run_cli: RunCli, project: Path) -> None:
    assert run_cli("call", "quick", "sleep", "--args", '{"seconds": 1}').returncode == 1  # 300 ms in the entry

    completed = run_cli("call", "quick", "sleep", "--args", '{"seconds": 1}', "--timeout", "20")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "slept 1\n"


@pytest.mark.parametrize("value", ["0", "-1", "soon", "3601"])
def test_a_timeout_that_is_no_deadline_is_a_usage_error(run_cli: RunCli, project: Path, value: str) -> None:
    completed = run_cli("call", "slow", "echo", "--args", '{"text": "x"}', "--timeout", value)

    assert completed.returncode == 2
    assert "--timeout" in completed.stderr and "wave-actors call --help" in completed.stderr


def test_progress_notifications_redraw_one_line_on_a_terminal(project: Path, home: Path) -> None:
    argv = [*cli_command("call", "progress", "progress", "--args", '{"steps": 3}'), "--home", str(home)]

    code, terminal, stdout = run_on_terminal(argv, terminal="stderr", cwd=project)

    assert code == 0, terminal
    assert stdout == "3 steps\n"
    assert "\rwave-actors: progress progress: 3/3 (100 %): step 3 of 3" in terminal.replace("\x1b[K", "")
    assert terminal.endswith("\r\x1b[K")  # erased before the command ends


def test_no_progress_line_when_stderr_is_not_a_terminal(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("call", "progress", "progress", "--args", '{"steps": 3}')

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "3 steps\n" and completed.stderr == ""


def test_no_progress_line_with_json_even_on_a_terminal(project: Path, home: Path) -> None:
    argv = [*cli_command("call", "progress", "progress", "--args", '{"steps": 3}', "--json"), "--home", str(home)]

    code, terminal, stdout = run_on_terminal(argv, terminal="stderr", cwd=project)

    assert code == 0, terminal
    assert terminal == ""
    assert json.loads(stdout)["content"][0]["text"] == "3 steps"


def test_forgetting_args_for_a_tool_that_needs_them_says_how_to_give_them(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "needs arguments (text)" in line and """--args '{"text": "..."}'""" in line
    assert "wave-actors call --help" in line


def test_json_given_without_args_points_to_call_help(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", '{"text": "hi"}')

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert line.startswith("wave-actors call: error: unrecognized arguments")
    assert "after --args" in line and line.endswith("(see wave-actors call --help)")
