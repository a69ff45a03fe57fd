"""``wave-actors servers``: the merged configuration and its diagnostics, without dialing (R-CLI, R-CFG-4)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import RunCli, servers_in_a_clean_interpreter, write_servers

from wave_actors.testing import fault_server_entry


def test_malformed_project_file_is_reported_and_other_sources_still_list(run_cli: RunCli, workdir: Path) -> None:
    (workdir / ".mcp.json").write_text('{"mcpServers": {"broken": ', encoding="utf-8")

    completed = run_cli("servers", "--json")

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    servers = {server["name"]: server for server in document["servers"]}
    assert set(servers) == {"echo", "off"}
    assert servers["echo"]["source"] == "user"
    assert servers["echo"]["type"] == "stdio"
    assert servers["echo"]["enabled"] is True
    assert servers["echo"]["state"] == "disconnected"
    assert servers["off"]["enabled"] is False
    assert servers["off"]["state"] == "disabled"
    assert servers["echo"]["origin"].endswith("mcp.json")
    [diagnostic] = document["diagnostics"]
    assert diagnostic["severity"] == "error"
    assert diagnostic["source"] == "project"
    assert diagnostic["origin"] == str(workdir.resolve() / ".mcp.json")
    assert "not valid JSON" in diagnostic["message"]


def test_text_output_is_a_table_with_diagnostics_below(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"echo": fault_server_entry(), "bad": {"command": "x", "tool_timeout_ms": 0}})

    completed = run_cli("servers")

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "TYPE", "ENABLED", "STATE", "LOGIN", "ORIGIN"]
    echo = next(line for line in lines if line.startswith("echo"))
    assert echo.split()[:5] == ["echo", "project", "stdio", "yes", "disconnected"]  # the project file wins whole
    assert "diagnostics:" in lines
    problem = next(line for line in lines if "'bad'" in line)
    assert "tool_timeout_ms" in problem and ".mcp.json" in problem


def test_precedence_and_expansion_are_the_loaders(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"off": {"url": "${WAVE_TEST_UNSET_VARIABLE}/mcp"}})

    completed = run_cli("servers", "--json")

    document = json.loads(completed.stdout)
    off = next(server for server in document["servers"] if server["name"] == "off")
    assert (off["source"], off["type"], off["enabled"]) == ("project", "http", True)
    [warning] = document["diagnostics"]
    assert warning["severity"] == "warning" and warning["server"] == "off"
    assert "WAVE_TEST_UNSET_VARIABLE" in warning["message"]


def test_no_servers_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    empty_home = tmp_path / "empty-home"
    empty_home.mkdir()

    completed = run_cli("servers", "--home", str(empty_home), with_home=False)

    assert completed.returncode == 0
    assert completed.stdout.startswith("no MCP servers configured for ")


def test_a_workdir_that_is_not_a_directory_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"

    completed = run_cli("servers", "--workdir", str(missing))

    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1
    assert str(missing) in completed.stderr


def test_listing_servers_imports_no_mcp_code_and_dials_nothing(workdir: Path, home: Path) -> None:
    completed = servers_in_a_clean_interpreter(workdir, home)

    assert completed.returncode == 0, completed.stderr


# A lone surrogate has no UTF-8 form: with strict stdio errors (a UTF-8 locale other than C.UTF-8,
# or PYTHONIOENCODING=utf-8) printing it raised UnicodeEncodeError.
STRICT_UTF8 = {"PYTHONIOENCODING": "utf-8"}


def test_a_name_with_a_lone_surrogate_is_printed_escaped_in_the_table(run_cli: RunCli, workdir: Path) -> None:
    # R-CLI, R-CFG-4: whatever a configuration file holds, the listing is printed, not a traceback.
    (workdir / ".mcp.json").write_text('{"mcpServers": {"odd\\udcffname": {"command": "x"}}}', encoding="utf-8")

    completed = run_cli("servers", env=STRICT_UTF8)

    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    row = next(line for line in completed.stdout.splitlines() if line.startswith("odd"))
    assert row.split()[:2] == ["odd\\udcffname", "project"]


def test_a_name_with_a_lone_surrogate_stays_valid_json(run_cli: RunCli, workdir: Path) -> None:
    (workdir / ".mcp.json").write_text('{"mcpServers": {"\\udcff": {"command": "x"}}}', encoding="utf-8")

    completed = run_cli("servers", "--json", env=STRICT_UTF8)

    assert completed.returncode == 0, completed.stderr
    names = {server["name"] for server in json.loads(completed.stdout)["servers"]}
    assert names == {"\udcff", "echo", "off"}  # the JSON escape decodes back to the very name
