"""``--trust approved|all``: which project entries the subcommands load (R-CLI, R-CFG-10).

``approved`` loads a project (``.mcp.json``) entry only when it is approved in
``<workdir>/.wave/settings.local.json``; ``all``, the default as in the
library, loads every one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, write_servers

from wave_actors.testing import fault_server_entry


@pytest.fixture
def project(workdir: Path) -> Path:
    """A project file with ``approved`` and ``stranger``; only ``approved`` is approved."""
    write_servers(workdir / ".mcp.json", {"approved": fault_server_entry(), "stranger": fault_server_entry()})
    settings = workdir / ".wave" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcp_json": {"enabled": ["approved"]}}), encoding="utf-8")
    return workdir


def _listed(completed: subprocess.CompletedProcess[str]) -> set[str]:
    assert completed.returncode == 0, completed.stderr
    return {server["name"] for server in json.loads(completed.stdout)["servers"]}


def test_servers_loads_every_project_entry_by_default(run_cli: RunCli, project: Path) -> None:
    assert _listed(run_cli("servers", "--json")) == {"approved", "stranger", "echo", "off"}
    assert _listed(run_cli("servers", "--json", "--trust", "all")) == {"approved", "stranger", "echo", "off"}


def test_servers_with_trust_approved_lists_approved_project_entries_only(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("servers", "--json", "--trust", "approved")

    assert _listed(completed) == {"approved", "echo", "off"}
    [diagnostic] = [d for d in json.loads(completed.stdout)["diagnostics"] if d["server"] == "stranger"]
    assert "not approved" in diagnostic["message"]


def test_tools_with_trust_approved_refuses_an_unapproved_project_server(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("tools", "stranger", "--trust", "approved")

    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert "'stranger'" in line and "not approved" in line


def test_call_with_trust_approved_reaches_an_approved_project_server(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("call", "approved", "echo", "--args", '{"text": "trusted"}', "--trust", "approved")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "trusted\n"


def test_watch_with_trust_approved_connects_approved_servers_only(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("watch", "--json", "--duration", "3", "--trust", "approved")

    assert completed.returncode == 0, completed.stderr
    last = json.loads(completed.stdout.splitlines()[-1])
    assert {server["name"] for server in last["servers"]} == {"approved", "echo", "off"}


def test_an_unknown_trust_mode_is_a_usage_error(run_cli: RunCli) -> None:
    completed = run_cli("servers", "--trust", "some")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "--trust" in line and "approved" in line


def test_help_says_what_approved_means_and_why_all_is_the_default() -> None:
    for command in ("servers", "tools", "call", "watch"):
        usage = " ".join(
            subprocess.run(
                cli_command(command, "--help"), capture_output=True, text=True, timeout=30, check=True
            ).stdout.split()
        )
        assert "--trust {all,approved}" in usage, command
        assert ".wave/settings.local.json" in usage and "the default, as in the library" in usage, command
