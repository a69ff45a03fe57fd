"""Helpers for the command-line tests: the CLI runs as a subprocess, on real files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

RunCli = Callable[..., subprocess.CompletedProcess[str]]
"""``run_cli(*args, timeout=45.0, with_home=True, env=None)``: run ``python -m wave_actors ARGS``."""


def write_servers(path: Path, servers: Mapping[str, object]) -> None:
    """Write ``{"mcpServers": servers}`` to ``path``."""
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


def cli_command(*args: str) -> list[str]:
    """The argv of ``python -m wave_actors ARGS`` with this interpreter."""
    return [sys.executable, "-m", "wave_actors", *args]
