"""``wave-actors servers`` and ``tools`` say which tools a server's listing skipped as invalid, and why (R-CLI, R-TOOL-9).

A tool whose listing the MCP SDK rejects is skipped with a warning in the
server's status (``ServerStatus.warnings``); the cache keeps the warnings of
the listing it keeps the tools of, so ``servers`` shows them without dialing.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import RunCli, write_servers

from wave_actors.testing import fault_server_entry


def _listed(run_cli: RunCli, name: str) -> dict[str, object]:
    [server] = [
        server for server in json.loads(run_cli("servers", "--json").stdout)["servers"] if server["name"] == name
    ]
    return server


def test_servers_shows_what_the_last_listing_skipped_and_why(run_cli: RunCli, home: Path) -> None:
    write_servers(home / "mcp.json", {"bad": fault_server_entry(invalid_schema=["broken"])})
    assert run_cli("tools", "bad").returncode == 0  # connects: the cache records the listing

    server = _listed(run_cli, "bad")
    completed = run_cli("servers")

    assert server["tools_cached"] is True
    [warning] = server["warnings"]  # type: ignore[misc]
    assert "'broken'" in warning and "inputSchema" in warning
    assert completed.returncode == 0 and completed.stderr == ""
    assert "bad: tool 'broken' skipped" in completed.stdout


def test_servers_shows_no_warnings_for_a_listing_that_skipped_nothing(run_cli: RunCli) -> None:
    assert run_cli("tools", "echo").returncode == 0

    assert _listed(run_cli, "echo")["warnings"] == []
    assert "skipped" not in run_cli("servers").stdout


def test_servers_shows_no_warnings_before_any_connect(run_cli: RunCli) -> None:
    assert _listed(run_cli, "echo")["warnings"] == []


def test_tools_json_says_what_the_listing_skipped(run_cli: RunCli, home: Path) -> None:
    write_servers(home / "mcp.json", {"bad": fault_server_entry(invalid_schema=["broken"])})

    completed = run_cli("tools", "bad", "--json")

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert "broken" not in [tool["tool"] for tool in document["tools"]]
    [warning] = document["warnings"]
    assert "'broken'" in warning
