"""Helpers for the command-line tests: the CLI runs as a subprocess, on real files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

RunCli = Callable[..., subprocess.CompletedProcess[str]]
"""``run_cli(*args, timeout=45.0, with_home=True, env=None, answer="")``: run ``python -m wave_actors ARGS``."""


def write_servers(path: Path, servers: Mapping[str, object]) -> None:
    """Write ``{"mcpServers": servers}`` to ``path``."""
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


def cli_command(*args: str) -> list[str]:
    """The argv of ``python -m wave_actors ARGS`` with this interpreter."""
    return [sys.executable, "-m", "wave_actors", *args]


def servers_in_a_clean_interpreter(workdir: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``servers`` in a fresh interpreter that then checks no MCP SDK module was imported and no process spawned.

    The script fails (non-zero exit, the reason on stderr) if either happened.
    """
    script = (
        "import sys\n"
        "from wave_actors._cli import main\n"
        f"code = main(['servers', *{list(extra)!r}, '--workdir', {str(workdir)!r}, '--home', {str(home)!r}])\n"
        "assert code == 0, code\n"
        "sdk = ('mcp', 'mcp_types', 'httpx', 'anyio')\n"
        "loaded = sorted(name for name in sys.modules if name.split('.')[0] in sdk)\n"
        "assert not loaded, loaded\n"
        "import psutil\n"
        "assert not psutil.Process().children(), 'a process was spawned'\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False)
