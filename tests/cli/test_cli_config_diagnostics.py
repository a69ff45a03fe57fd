"""Every command that loads the configuration says why a server it was asked for is missing (R-CFG-4, R-CLI).

A trailing comma makes ``.mcp.json`` invalid JSON and the whole file is
skipped; a misspelled ``"comand"`` skips its entry. ``servers`` lists those
diagnostics; ``tools`` and ``call`` name them in their error instead of
"configured: none", and ``watch``, ``working-set``, ``approve``,
``revoke``, ``trust`` and ``untrust`` show them too; ``add`` and ``remove``
refuse to edit such a file and say why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import RunCli, write_servers

from wave_actors.testing import fault_server_entry

TRAILING_COMMA = '{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},}}'


@pytest.fixture
def trailing_comma(workdir: Path) -> Path:
    (workdir / ".mcp.json").write_text(TRAILING_COMMA, encoding="utf-8")
    return workdir / ".mcp.json"


@pytest.mark.parametrize("command", [("tools", "time"), ("call", "time", "get_current_time")])
def test_a_file_that_is_not_json_is_named_by_tools_and_call(
    run_cli: RunCli, trailing_comma: Path, command: tuple[str, ...]
) -> None:
    completed = run_cli(*command)

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "no server 'time' configured" in line
    assert f"{trailing_comma}: not valid JSON" in line and "a trailing comma, which JSON does not allow" in line


@pytest.mark.parametrize(
    "command",
    [
        ("servers",),
        ("watch", "--duration", "0"),
        ("working-set",),
        ("revoke", "time"),
        ("approve", "time"),
        ("trust", "--yes"),
        ("untrust",),
        ("add", "other", "--scope", "project", "--", "uvx", "other"),
        ("remove", "time"),
    ],
)
def test_every_other_command_that_loads_it_says_so_too(
    run_cli: RunCli, trailing_comma: Path, command: tuple[str, ...]
) -> None:
    completed = run_cli(*command)

    said = completed.stdout + completed.stderr
    assert str(trailing_comma) in said and "not valid JSON" in said and "trailing comma" in said, said


def test_a_misspelled_command_field_is_the_error_that_skipped_the_entry(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"time": {"comand": "uvx", "args": ["mcp-server-time"]}})

    completed = run_cli("tools", "time")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    skipped = line.index("server 'time' was not loaded: error:")
    assert '"comand" is not a field: did you mean "command"?; the entry was skipped' in line
    assert line.index("also warning:") > skipped  # the warning about the field comes after the error


def test_approving_a_misspelled_entry_says_why_it_is_invalid(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"time": {"comand": "uvx"}})

    completed = run_cli("approve", "time", "--yes")

    assert completed.returncode == 2
    assert 'did you mean "command"?' in completed.stderr


def test_a_loaded_server_beside_a_broken_one_is_still_usable(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"good": fault_server_entry(), "time": {"comand": "uvx"}})

    completed = run_cli("call", "good", "echo", "--args", '{"text": "fine"}')

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "fine\n"
