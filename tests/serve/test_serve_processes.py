"""What ``wave-actors serve`` leaves when its client goes away, or when it is killed itself (R-SERVE-1, R-KILL-7).

Every process a serve starts carries the test's own mark
(:data:`serve_support.MARK_VARIABLE`): serve, its watchdog, the servers and
their children, ``setsid`` ones included, so :func:`serve_support.family`
counts them wherever they were re-parented.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
import trio
from polling import poll_until
from serve_support import INITIALIZE, MARK_VARIABLE, family, serve_client, serve_command, text, write_project

from wave_actors.testing import fault_server_entry, kill_processes

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="host-death defences are Linux only"),
    pytest.mark.timeout(60),
]

CLIENT_PROGRAM = Path(__file__).with_name("client_program.py")


def project(tmp_path: Path) -> Path:
    """A project of two servers, one of them with a grandchild and a ``setsid`` grandchild."""
    return write_project(
        tmp_path / "project",
        {
            "alpha": fault_server_entry(grandchild=True, setsid_grandchild=True, call_log=tmp_path / "calls.jsonl"),
            "beta": fault_server_entry(),
        },
    )


async def test_stdin_eof_destroys_the_session_and_serve_exits_leaving_nothing(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    async with serve_client(project(tmp_path), tmp_path / "home", "--mode", "full", mark=mark) as (session, _):
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "x"})) == "x"
        assert len([p for p in family(mark) if "fault_server" in " ".join(p.cmdline())]) >= 2
    closed = time.monotonic()
    # The SDK's client waits 2 s for serve to exit on EOF before it signals it: it was not needed.
    await poll_until(lambda: family(mark) == [], limit=5.0, what="serve and every process it started gone")
    assert time.monotonic() - closed < 2.0


async def test_serve_killed_with_sigkill_leaves_no_process_within_2_s(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    async with serve_client(project(tmp_path), tmp_path / "home", "--mode", "full", mark=mark) as (session, _):
        server_pid = json.loads(text(await session.call_tool("mcp__alpha__pid", {})))["pid"]
        await session.call_tool("mcp__beta__echo", {"text": "dial beta too"})
        serve_pid = psutil.Process(server_pid).ppid()
        assert "serve" in psutil.Process(serve_pid).cmdline()
        assert len(family(mark)) >= 5  # serve, its watchdog, two servers, two grandchildren
        killed = time.monotonic()
        os.kill(serve_pid, signal.SIGKILL)
        await poll_until(lambda: family(mark) == [], limit=2.0, what="every process of serve's family gone")
        assert time.monotonic() - killed < 2.0


async def test_a_client_killed_mid_call_leaves_no_process(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    workdir = project(tmp_path)
    serve = serve_command(workdir, tmp_path / "home", "--stdio", "--mode", "full")
    client = subprocess.Popen(
        [sys.executable, str(CLIENT_PROGRAM), "mcp__alpha__sleep", json.dumps({"seconds": 60}), "--", *serve],
        stdout=subprocess.PIPE,
        env={**os.environ, MARK_VARIABLE: mark},
    )
    try:
        assert client.stdout is not None
        assert client.stdout.readline() == b"calling\n"  # bounded by the test's timeout
        log = tmp_path / "calls.jsonl"
        await poll_until(lambda: log.exists() and "sleep" in log.read_text(), limit=20, what="the call reached alpha")
        client.kill()
        client.wait()
        killed = time.monotonic()
        # Serve reads EOF on stdin (its client's end of the pipe died with it), ends the session and exits.
        await poll_until(lambda: family(mark) == [], limit=10.0, what="serve and every process it started gone")
        assert time.monotonic() - killed < 5.0
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        if client.stdout is not None:
            client.stdout.close()
        kill_processes(family(mark))


async def test_sigterm_ends_serve_while_its_client_still_holds_stdin_and_reclaims_everything(tmp_path: Path) -> None:
    # R-KILL-7: a signal is answered at once, not when the client next writes or closes the pipe.
    mark = uuid.uuid4().hex
    command = serve_command(project(tmp_path), tmp_path / "home", "--stdio", "--mode", "full")
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, MARK_VARIABLE: mark}
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        await process.stdin.send_all(json.dumps(INITIALIZE).encode() + b"\n")
        with trio.fail_after(30):
            answer = await process.stdout.receive_some(65536)
        assert b'"serverInfo"' in answer
        assert any("fault_server" in " ".join(p.cmdline()) for p in family(mark))
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(10):
            code = await process.wait()
        assert time.monotonic() - signalled < 2.0
        assert code == 128 + signal.SIGTERM
        await poll_until(lambda: family(mark) == [], limit=5.0, what="every process serve started gone")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdin.aclose()
        await process.stdout.aclose()
