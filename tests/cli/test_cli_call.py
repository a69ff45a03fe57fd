"""``wave-actors call SERVER TOOL --args JSON``: results, tool errors and exit codes (R-CLI, R-TOOL-6)."""

from __future__ import annotations

import json

import pytest
from cli_support import RunCli


def test_prints_the_result_text(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", '{"text": "hello there"}')

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "hello there\n"
    assert completed.stderr == ""


def test_accepts_the_model_visible_name(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "mcp__echo__echo", "--args", '{"text": "by name"}')

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "by name\n"


def test_json_prints_the_whole_result(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", '{"text": "hi"}', "--json")

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"] == [{"type": "text", "text": "hi"}]


def test_bad_json_exits_2_before_dialing(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", '{"text": ')

    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert "--args is not valid JSON" in line


def test_arguments_must_be_an_object(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", '["hello"]')

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "JSON object" in line


def test_a_tool_error_exits_1_with_its_message(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "fail", "--args", '{"message": "disk full"}')

    assert completed.returncode == 1
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert "'echo'" in line and "'fail'" in line and "disk full" in line


def test_a_tool_error_in_json_still_prints_the_result(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "fail", "--args", '{"message": "disk full"}', "--json")

    assert completed.returncode == 1
    assert json.loads(completed.stdout)["isError"] is True
    assert len(completed.stderr.splitlines()) == 1


def test_a_server_lost_mid_call_exits_1_with_the_exit_code(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "crash", "--args", '{"code": 9}')

    assert completed.returncode == 1
    [line] = completed.stderr.splitlines()
    assert "'echo'" in line and "code 9" in line


def test_unknown_tool_is_a_usage_error_listing_the_tools(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "nope")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "'nope'" in line and "echo" in line and "sleep" in line


def test_unknown_server_is_a_usage_error(run_cli: RunCli) -> None:
    completed = run_cli("call", "nowhere", "echo")

    assert completed.returncode == 2
    assert "'nowhere'" in completed.stderr


# R-CLI: a bad --args is one line on stderr and exit 2, before anything is dialed, whatever the JSON holds.
@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": ' + "[" * 30_000 + "]" * 30_000 + "}", "nests deeper than"),
        ('{"a": ' + "[" * 250 + "]" * 250 + "}", "nests deeper than"),
        ('{"a": ' + "7" * 5_000 + "}", "integer of 5000 digits"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e400}', "too large"),
    ],
    ids=["30000-deep", "250-deep", "5000-digits", "NaN", "-Infinity", "1e400"],
)
def test_arguments_that_cannot_be_sent_faithfully_exit_2_in_one_line(
    run_cli: RunCli, arguments: str, problem: str
) -> None:
    completed = run_cli("call", "echo", "echo", "--args", arguments)

    assert completed.returncode == 2, completed.stderr
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("wave-actors: error: --args") and problem in line, line


def test_deep_but_sendable_arguments_are_sent(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", '{"text": "deep", "a": ' + "[" * 150 + "]" * 150 + "}")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "deep\n"
