"""Arguments: ``--help``, usage errors as one line with exit 2, ``python -m`` and the console script (R-CLI)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import cli_command


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_command(*args), capture_output=True, text=True, timeout=30, check=False)


def test_help_lists_every_subcommand_and_the_exit_codes() -> None:
    completed = run("--help")

    assert completed.returncode == 0
    for command in ("servers", "tools", "call", "watch", "demo"):
        assert command in completed.stdout
    assert "exit codes: 0 ok, 1" in completed.stdout
    assert "130 Ctrl-C, 143 SIGTERM" in completed.stdout


def test_version_prints_the_installed_version() -> None:
    completed = run("--version")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("wave-actors ") and completed.stderr == ""


@pytest.mark.parametrize(
    ("args", "program"), [(("tools",), "wave-actors tools"), (("servers", "extra"), "wave-actors servers")]
)
def test_a_usage_error_points_to_the_subcommands_help(args: tuple[str, ...], program: str) -> None:
    completed = run(*args)

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert line.startswith(f"{program}: error:") and line.endswith(f"(see {program} --help)")


@pytest.mark.parametrize(
    "args",
    [(), ("frobnicate",), ("tools",), ("call", "echo"), ("watch", "--duration", "soon"), ("servers", "--bogus")],
)
def test_usage_errors_are_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    completed = run(*args)

    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("wave-actors") and "error:" in line


def test_every_configured_subcommand_takes_workdir_home_and_json() -> None:
    for command in ("servers", "tools", "call", "watch"):
        usage = run(command, "--help").stdout
        assert "--workdir" in usage and "--home" in usage and "--json" in usage, command
    assert "--json" in run("demo", "--help").stdout


def test_console_script_is_installed(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("wave-actors")
    if not script.exists():
        found = shutil.which("wave-actors")
        if found is None:
            pytest.skip("the wave-actors script is not installed next to this interpreter")
        script = Path(found)

    completed = subprocess.run(
        [str(script), "servers", "--workdir", str(tmp_path), "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("no MCP servers configured")
