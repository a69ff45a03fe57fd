"""``wave-actors tools SERVER``: connect one server and list its tools (R-CLI, R-TOOL-1, R-TOOL-7)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import RunCli, write_servers


def test_lists_the_fault_servers_tools_with_read_only(run_cli: RunCli) -> None:
    completed = run_cli("tools", "echo")

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split()[:2] == ["TOOL", "MODEL-VISIBLE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert {"echo", "sleep", "fail", "crash", "pid"} <= set(rows)
    assert rows["echo"][1:3] == ["mcp__echo__echo", "yes"]
    assert rows["fail"][1:3] == ["mcp__echo__fail", "no"]


def test_json_lists_names_flags_and_schemas(run_cli: RunCli) -> None:
    completed = run_cli("tools", "echo", "--json")

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["server"] == "echo"
    assert document["state"] == "connected"
    tools = {tool["tool"]: tool for tool in document["tools"]}
    assert tools["echo"]["name"] == "mcp__echo__echo"
    assert tools["echo"]["read_only"] is True
    assert tools["sleep"]["read_only"] is False
    assert tools["echo"]["input_schema"]["properties"]["text"]["type"] == "string"


def test_unknown_server_is_a_usage_error_naming_it(run_cli: RunCli) -> None:
    completed = run_cli("tools", "nope")

    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert "'nope'" in line and "echo" in line


def test_disabled_server_is_refused_naming_the_file(run_cli: RunCli, home: Path) -> None:
    completed = run_cli("tools", "off")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "'off'" in line and "disabled" in line and str(home / "mcp.json") in line


def test_skipped_entry_is_explained_by_its_diagnostic(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"slow": {"command": "x", "tool_timeout_ms": 1.5}})

    completed = run_cli("tools", "slow")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "'slow'" in line and "tool_timeout_ms" in line and ".mcp.json" in line


def test_unknown_type_is_a_configuration_error(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"odd": {"type": "carrier-pigeon", "url": "http://127.0.0.1:9/"}})

    completed = run_cli("tools", "odd")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "'odd'" in line and "carrier-pigeon" in line


def test_a_server_that_cannot_start_is_a_failure(run_cli: RunCli, workdir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    write_servers(workdir / ".mcp.json", {"ghost": {"command": str(missing)}})

    completed = run_cli("tools", "ghost")

    assert completed.returncode == 1
    [line] = completed.stderr.splitlines()
    assert "'ghost'" in line and str(missing) in line
