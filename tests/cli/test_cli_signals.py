"""Ctrl-C and SIGTERM end every command with 128 + the signal, as shells report it: 130 and 143 (R-CLI, R-KILL-7).

A script must be able to tell "the tool failed" (1) from "I stopped it":
``call`` interrupted exits 130, not 1, and ``watch`` exits 130, not 0. The
commands that dial reclaim every server first; the others just stop. Being
asked to stop is not a warning. Each test sends the signal once the command
is running: once it said so, or once its server's process exists (a fact
with no output to wait on).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psutil
import pytest
from cli_support import cli_command, write_servers
from polling import poll_until

from wave_actors.testing import fault_server_entry, is_alive

SIGNALS = [signal.SIGINT, signal.SIGTERM]
SIGNAL_IDS = ["SIGINT-130", "SIGTERM-143"]


@contextmanager
def running(argv: list[str], workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The command started in ``workdir``; killed on the way out if it is still running (a failed test)."""
    process = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def started(workdir: Path, home: Path, *args: str) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """``wave-actors ARGS --home HOME`` running in ``workdir``."""
    return running([*cli_command(*args), "--home", str(home)], workdir)


def read_until(process: subprocess.Popen[bytes], needle: bytes, limit: float = 30.0) -> bytes:
    """What the command wrote to stdout up to ``needle``: waits on its output, fails past ``limit``."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + limit
    while needle not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {needle!r} within {limit:g} s; got {seen!r}"
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"stdout closed before {needle!r}; got {seen!r}"
            seen += chunk
    return seen


def stop(process: subprocess.Popen[bytes], number: int) -> tuple[str, str]:
    """Send signal ``number``; the rest of stdout and stderr once the command exited."""
    process.send_signal(number)
    out, err = process.communicate(timeout=30)
    return out.decode(), err.decode()


def assert_stopped(process: subprocess.Popen[bytes], number: int, stderr: str) -> None:
    assert process.returncode == 128 + number, stderr
    assert f"stopped by {signal.Signals(number).name}" in stderr
    assert "warning" not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("number", SIGNALS, ids=SIGNAL_IDS)
async def test_a_signal_during_a_call_exits_128_plus_it_once_the_server_is_reclaimed(
    workdir: Path, home: Path, number: int
) -> None:
    log = workdir / "calls.jsonl"
    write_servers(workdir / ".mcp.json", {"slow": fault_server_entry(call_log=log)})
    with started(workdir, home, "call", "slow", "sleep", "--args", '{"seconds": 60}') as process:
        await poll_until(lambda: log.exists() and b"sleep" in log.read_bytes(), limit=30, what="the call sent")
        server = int(json.loads(log.read_text().splitlines()[0])["pid"])

        _, stderr = stop(process, number)

    assert_stopped(process, number, stderr)
    assert "every server process it started was reclaimed" in stderr
    assert not is_alive(server)


@pytest.mark.parametrize("number", SIGNALS, ids=SIGNAL_IDS)
def test_watch_ends_by_signal_with_128_plus_it_not_0(workdir: Path, home: Path, number: int) -> None:
    with started(workdir, home, "watch", "--json") as process:
        read_until(process, b'"state": "connected"')
        servers = psutil.Process(process.pid).children(recursive=True)

        out, stderr = stop(process, number)

    assert_stopped(process, number, stderr)
    assert not [server.pid for server in servers if is_alive(server)]
    last = json.loads(out.splitlines()[-1])  # --json: the stream of snapshots ends with what ended it
    assert last["error"] == {
        "code": 128 + number,
        "kind": "interrupted",
        "message": f"stopped by {signal.Signals(number).name}; every server process it started was reclaimed",
        "signal": signal.Signals(number).name,
    }


@pytest.mark.parametrize("command", ["tools", "working-set"])
@pytest.mark.parametrize("number", SIGNALS, ids=SIGNAL_IDS)
async def test_a_signal_during_a_slow_dial_exits_128_plus_it(
    workdir: Path, home: Path, command: str, number: int
) -> None:
    pid_file = workdir / "server.pid"
    write_servers(workdir / ".mcp.json", {"slow": fault_server_entry(init_delay=60, pid_file=pid_file)})
    with started(workdir, home, command, *(["slow"] if command == "tools" else [])) as process:
        await poll_until(pid_file.exists, limit=30, what="the server started")
        server = int(pid_file.read_text())

        _, stderr = stop(process, number)

    assert_stopped(process, number, stderr)
    assert not is_alive(server)


@pytest.mark.parametrize("number", SIGNALS, ids=SIGNAL_IDS)
def test_a_signal_at_approves_question_exits_128_plus_it_and_records_nothing(
    workdir: Path, home: Path, number: int
) -> None:
    write_servers(workdir / ".mcp.json", {"files": fault_server_entry()})
    with started(workdir, home, "approve", "files") as process:
        read_until(process, b"[y/N]")

        _, stderr = stop(process, number)

    assert_stopped(process, number, stderr)
    assert not (home / "project-trust.json").exists()


def test_ctrl_c_during_the_demo_exits_130_once_everything_is_reclaimed(workdir: Path, home: Path) -> None:
    with running(cli_command("demo"), workdir) as process:
        read_until(process, "✓".encode())
        children = psutil.Process(process.pid).children(recursive=True)

        _, stderr = stop(process, signal.SIGINT)

    assert_stopped(process, signal.SIGINT, stderr)
    assert not [child.pid for child in children if is_alive(child)]
