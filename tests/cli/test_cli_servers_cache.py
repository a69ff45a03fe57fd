"""``wave-actors servers`` shows the tools cached at each server's last connect, without dialing (R-CACHE-2, R-CLI)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_support import RunCli, servers_in_a_clean_interpreter, write_servers

from wave_actors.testing import fault_server_entry


def test_servers_shows_the_tools_of_the_last_connect_marked_cached(run_cli: RunCli) -> None:
    assert run_cli("tools", "echo").returncode == 0  # connects: the cache is written

    document = json.loads(run_cli("servers", "--json").stdout)
    servers = {server["name"]: server for server in document["servers"]}
    echo, off = servers["echo"], servers["off"]
    assert echo["state"] == "disconnected" and echo["tools_cached"] is True
    assert "mcp__echo__echo" in echo["tools"] and isinstance(echo["last_connected"], float)
    assert echo["connection"]["command"] == sys.executable and echo["connection"]["display"].startswith(sys.executable)
    assert off["tools"] == [] and off["tools_cached"] is False and off["last_connected"] is None

    text = run_cli("servers").stdout
    block = text.split("cached tools (listed at the server's last connect; not connected now):\n")[1]
    assert block.startswith("  echo (") and "echo, sleep" in block


def test_a_changed_entry_shows_no_cached_tools(run_cli: RunCli, home: Path) -> None:
    assert run_cli("tools", "echo").returncode == 0
    write_servers(home / "mcp.json", {"echo": fault_server_entry(tools=1)})  # other args: another fingerprint

    document = json.loads(run_cli("servers", "--json").stdout)
    [echo] = document["servers"]
    assert echo["tools"] == [] and echo["tools_cached"] is False
    assert "cached tools" not in run_cli("servers").stdout


def test_a_corrupt_cache_lists_servers_without_cached_tools_and_without_a_word(run_cli: RunCli, home: Path) -> None:
    assert run_cli("tools", "echo").returncode == 0
    entries = list((home / "mcp-tools-cache").rglob("*.json"))  # where the README says the cache is
    assert entries
    for path in entries:
        path.write_bytes(b"\x00\x01 not json")

    completed = run_cli("servers")

    assert completed.returncode == 0 and completed.stderr == ""
    assert "echo" in completed.stdout and "cached tools" not in completed.stdout


def test_listing_cached_tools_imports_no_mcp_code_and_dials_nothing(run_cli: RunCli, workdir: Path, home: Path) -> None:
    assert run_cli("tools", "echo").returncode == 0
    completed = servers_in_a_clean_interpreter(workdir, home, "--json")

    assert completed.returncode == 0, completed.stderr
    assert '"tools_cached": true' in completed.stdout
