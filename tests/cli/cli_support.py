"""Helpers for the command-line tests: the CLI runs as a subprocess, on real files."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
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


def run_on_terminal(
    argv: list[str],
    *,
    terminal: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    columns: int = 0,
    timeout: float = 60.0,
) -> tuple[int, str, str]:
    """Run ``argv`` with its ``terminal`` stream (``"stdout"`` or ``"stderr"``) on a pseudo-terminal, the other a pipe.

    :param env: overlaid on this environment, from which ``COLUMNS`` and ``LINES`` are removed (GNU readline,
        loaded by some test tool, may have exported them).
    :param columns: the terminal's width (0: unknown, as a new pseudo-terminal says).
    :returns: the exit code, what reached the terminal (its ``\\r\\n`` read as ``\\n``), and what the pipe got.
    """
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))
    environment = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    streams: dict[str, int] = {terminal: secondary}
    other = "stderr" if terminal == "stdout" else "stdout"
    streams[other] = subprocess.PIPE
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**environment, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=streams["stdout"],
        stderr=streams["stderr"],
    )
    os.close(secondary)
    seen = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, err = process.communicate(timeout=max(deadline - time.monotonic(), 1))
        piped: bytes = out if other == "stdout" else err
    finally:
        os.close(main)
        if process.poll() is None:
            process.kill()
            process.wait()
    text = seen.decode("utf-8", "replace").replace("\r\n", "\n")
    return process.returncode, text, piped.decode("utf-8", "replace")
