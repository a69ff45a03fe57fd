"""Fixtures for the command-line tests: a project directory, a user home, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, write_servers

from wave_actors.testing import fault_server_entry


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty project directory."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user home whose mcp.json defines ``echo`` (the fault server, ``echo`` read-only) and a disabled ``off``."""
    path = tmp_path / "home"
    path.mkdir()
    write_servers(
        path / "mcp.json",
        {"echo": fault_server_entry(read_only=["echo"]), "off": {**fault_server_entry(), "enabled": False}},
    )
    return path


@pytest.fixture
def run_cli(workdir: Path, home: Path) -> RunCli:
    """Run the CLI in ``workdir``, with ``--home home`` appended unless ``with_home=False``, ``env`` overlaid,
    ``answer`` on its stdin (default: an empty stdin)."""

    def run(
        *args: str,
        timeout: float = 45.0,
        with_home: bool = True,
        env: Mapping[str, str] | None = None,
        answer: str = "",
    ) -> subprocess.CompletedProcess[str]:
        argv = cli_command(*args) + (["--home", str(home)] if with_home else [])
        environment = {**os.environ, **env} if env is not None else None
        return subprocess.run(
            argv,
            cwd=workdir,
            env=environment,
            input=answer,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run
