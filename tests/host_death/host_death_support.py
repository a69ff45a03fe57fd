"""Running a real host process for the host-death tests, and watching what it leaves."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import trio

from wave_actors.testing import is_alive, kill_processes, process_census

PROGRAM = Path(__file__).with_name("host_program.py")
MARK_VARIABLE = "WAVE_HOST_DEATH_MARK"

# Starting a host imports the MCP client (about a second) and dials every server.
START_LIMIT = 20.0


class HostProcess:
    """A host program running in a child process, and the mark its server families carry."""

    def __init__(self, process: subprocess.Popen[bytes], mark: str) -> None:
        self.process = process
        self.mark = mark
        self.ready: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self.process.pid

    def families(self) -> list[psutil.Process]:
        """Every live process of the host's server families (servers and their children)."""
        return process_census(MARK_VARIABLE, self.mark, descendants=False)

    async def read_status(self) -> dict[str, Any]:
        """The next JSON line the host prints, within :data:`START_LIMIT`."""
        assert self.process.stdout is not None
        stdout = self.process.stdout
        with trio.fail_after(START_LIMIT):
            line = await trio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
        if not line:
            raise AssertionError(f"the host exited ({self.process.wait()}) before reporting")
        return json.loads(line)

    async def status(self) -> dict[str, Any]:
        """Ask the host for its status now."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"status\n")
        self.process.stdin.flush()
        return await self.read_status()

    async def stderr(self, limit: float = 5.0) -> str:
        """Everything written to the host's stderr, once the host and its watchdog (which shares it) are gone."""
        assert self.process.stderr is not None
        stderr = self.process.stderr
        with trio.fail_after(limit):
            return (await trio.to_thread.run_sync(stderr.read, abandon_on_cancel=True)).decode(errors="replace")

    async def wait_exit(self, limit: float) -> int:
        """The host's exit status, once it has exited (at most ``limit`` seconds from now)."""
        with trio.fail_after(limit):
            return await trio.to_thread.run_sync(self.process.wait, abandon_on_cancel=True)


@contextmanager
def host_process(tmp_path: Path, *flags: str) -> Iterator[HostProcess]:
    """Start ``host_program.py`` with ``flags``; whatever it leaves is killed at the end (and the leak check fails)."""
    mark = uuid.uuid4().hex
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, str(PROGRAM), "--home", str(home), "--mark", mark, *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    host = HostProcess(process, mark)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        yield host
    finally:
        process.stdin.close()  # a live host closes normally on end of file
        try:
            process.wait(10.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    left = host.families()
    if left:
        kill_processes(left)
        raise AssertionError(f"{len(left)} process(es) of the host's server families outlived it")


def gone(pid: int) -> bool:
    """Not running (gone, or a zombie waiting for its parent)."""
    return not is_alive(pid)
