"""With ``--json``, every outcome parses: an error is one JSON object on stdout, with the same exit code (R-CLI).

``{"error": {"code": N, "kind": "usage" | "failure" | "interrupted", "message": "..."}}``
on one line of stdout (``interrupted`` adds ``"signal"``, see
``test_cli_signals.py``), and the same message as one line on stderr. The one
exception is documented: ``call --json`` of a tool that returned an error
prints the tool's result, whose ``isError`` is true, and exits 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import RunCli, write_servers

from wave_actors.testing import fault_server_entry

NOWHERE = "/nonexistent/wave-actors-test"

# Each command with the arguments of one of its failures, and the exit code it has.
FAILURES = [
    (("servers", "--workdir", NOWHERE), 2),
    (("servers", "--bogus"), 2),
    (("tools", "nowhere"), 2),
    (("tools", "broken"), 1),
    (("call", "echo", "nope"), 2),
    (("call", "echo", "echo", "--args", "{"), 2),
    (("call", "echo", "crash", "--args", '{"code": 9}'), 1),
    (("watch", "--workdir", NOWHERE), 2),
    (("working-set", "--workdir", NOWHERE), 2),
    (("demo", "--bogus"), 2),
    (("add", "files"), 2),
    (("remove", "nowhere"), 2),
    (("trust", NOWHERE), 2),
    (("trust",), 2),  # --json needs --yes
    (("untrust", NOWHERE), 2),
    (("approve", "nowhere", "--yes"), 2),
    (("revoke", "nowhere"), 2),
]


@pytest.fixture
def broken(workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"broken": fault_server_entry(exit_on_start=3)})


@pytest.mark.usefixtures("broken")
@pytest.mark.parametrize(("args", "code"), FAILURES, ids=[" ".join(args) for args, _ in FAILURES])
def test_an_error_is_one_json_object_on_stdout_with_the_exit_code(
    run_cli: RunCli, args: tuple[str, ...], code: int
) -> None:
    completed = run_cli(*args, "--json")

    assert completed.returncode == code, completed.stderr
    [line] = completed.stdout.splitlines()
    error = json.loads(line)["error"]
    assert error["code"] == code and error["kind"] == {1: "failure", 2: "usage"}[code]
    [said] = completed.stderr.splitlines()
    assert error["message"] in said and said.startswith("wave-actors")


def test_without_json_an_error_is_only_its_line_on_stderr(run_cli: RunCli) -> None:
    completed = run_cli("tools", "nowhere")

    assert completed.returncode == 2
    assert completed.stdout == ""
    assert len(completed.stderr.splitlines()) == 1


def test_a_tool_error_under_json_is_the_result_itself(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "fail", "--args", '{"message": "disk full"}', "--json")

    assert completed.returncode == 1
    assert json.loads(completed.stdout)["isError"] is True  # one document: the result, no error object after it
    [said] = completed.stderr.splitlines()
    assert "disk full" in said
