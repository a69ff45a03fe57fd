"""``wave-actors working-set``: the section a model is shown and what each load mode costs (R-CLI, R-WS-3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_support import RunCli, write_servers

from wave_actors.testing import fault_server_entry


def test_prints_the_section_and_the_bytes_of_both_load_modes(run_cli: RunCli) -> None:
    completed = run_cli("working-set")

    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert out.startswith("## MCP working set\n")
    assert "### echo (read-only tools: 1, writable: 5)\n" in out and "- echo [read-only]\n" in out
    assert "### off" not in out  # disabled: not in the working set
    [sizes] = [line for line in out.splitlines() if line.startswith("bytes per turn:")]
    assert re.fullmatch(
        r"bytes per turn: full [\d,]+ \(6 declarations\); working set [\d,]+ "
        r"\(section [\d,]+ \+ 2 gateway declarations [\d,]+\): [\d.]+ % of full",
        sizes,
    ), sizes


def test_json_has_the_section_the_servers_and_the_sizes(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"broken": fault_server_entry(exit_on_start=2)})

    completed = run_cli("working-set", "--json")

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["section"].startswith("## MCP working set\n")
    servers = {server["name"]: server for server in document["servers"]}
    assert set(servers) == {"broken", "echo"}
    assert "exited with code 2" in servers["broken"]["unavailable"]
    assert servers["echo"]["unavailable"] is None and servers["echo"]["read_only_tools"] == 1
    assert {"name": "echo", "read_only": True, "guidance": None} in servers["echo"]["tools"]
    sizes = document["bytes"]
    assert (
        sizes["working_set"]
        == sizes["section"] + sizes["gateway"]
        == len(document["section"].encode()) + sizes["gateway"]
    )
    assert document["declarations"] == {"full": 6, "working_set": 2}


def test_without_servers_there_is_no_section(run_cli: RunCli) -> None:
    completed = run_cli("working-set", with_home=False, env={"HOME": "/nonexistent"})

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("no enabled MCP servers for ")
    assert "## MCP working set" not in completed.stdout
