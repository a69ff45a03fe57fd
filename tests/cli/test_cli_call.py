"""``wave-actors call SERVER TOOL --args JSON``: results, tool errors and exit codes (R-CLI, R-TOOL-6)."""

from __future__ import annotations

import json

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
