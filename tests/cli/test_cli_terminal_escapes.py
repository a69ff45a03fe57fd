"""No text a server or a configuration file chose reaches the terminal raw (R-CLI).

A hostile server names its tools with escape sequences: clear the screen,
set the clipboard (OSC 52), a C1 CSI, a carriage return that rewrites the
line, a bidirectional override, a bell. Every human output shows them as
escapes; ``--json`` output as JSON escapes, which read back to the exact names.
The output is read as bytes: text mode would turn a raw ``\\r`` into a newline.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import cli_command, write_servers

from wave_actors.testing import fault_server_entry

HOSTILE = [
    "clear\x1b[2J\x1b[Hscreen",
    "clip\x1b]52;c;cm0gLXJmIH4=\x07board",
    "csi\x9b31m",
    "line\rrewrite",
    "bidi\u202eevil",
    "bell\x07",
]
SERVER = "srv\x1b[2Jname"
RAW = [b"\x1b", b"\x07", b"\r", "\x9b".encode(), "\u202e".encode()]


@pytest.fixture
def project(workdir: Path) -> Path:
    entry = {**fault_server_entry(named_tool=HOSTILE), "description": "desc \x1b[31mred\x1b[0m"}
    write_servers(workdir / ".mcp.json", {"hostile": entry, SERVER: fault_server_entry()})
    return workdir


def run(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    argv = [*cli_command(*args), "--workdir", str(project), "--home", str(home)]
    completed = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed


def assert_no_raw_control(completed: subprocess.CompletedProcess[bytes]) -> None:
    for stream in (completed.stdout, completed.stderr):
        for raw in RAW:
            assert raw not in stream, f"{raw!r} reached the terminal: {stream!r}"


def test_tools_shows_hostile_names_and_descriptions_escaped(project: Path, home: Path) -> None:
    completed = run(project, home, "tools", "hostile")

    assert_no_raw_control(completed)
    assert b"clear\\x1b[2J\\x1b[Hscreen" in completed.stdout and b"line\\x0drewrite" in completed.stdout
    assert b"Extra tool clip\\x1b]52;c;cm0gLXJmIH4=\\x07board;" in completed.stdout


def test_servers_shows_configured_and_cached_names_escaped(project: Path, home: Path) -> None:
    run(project, home, "tools", "hostile")  # lists the tools into the snapshot cache, which `servers` shows

    completed = run(project, home, "servers")

    assert_no_raw_control(completed)
    assert b"srv\\x1b[2Jname" in completed.stdout and b"bidi\\u202eevil" in completed.stdout


def test_call_and_working_set_show_the_servers_text_escaped(project: Path, home: Path) -> None:
    called = run(project, home, "call", "hostile", "echo", "--args", json.dumps({"text": "\x1b]52;c;aGk=\x07"}))
    section = run(project, home, "working-set")

    assert_no_raw_control(called)
    assert_no_raw_control(section)
    assert called.stdout == b"\\x1b]52;c;aGk=\\x07\n"
    assert b"Purpose: desc \\x1b[31mred\\x1b[0m" in section.stdout


def test_json_output_writes_them_as_json_escapes_that_read_back_exactly(project: Path, home: Path) -> None:
    completed = run(project, home, "tools", "hostile", "--json")

    assert_no_raw_control(completed)
    tools = {tool["tool"]: tool for tool in json.loads(completed.stdout)["tools"]}
    assert set(HOSTILE) <= set(tools)
    assert tools["csi\x9b31m"]["description"] == "Extra tool csi\x9b31m; returns its name and the text."
