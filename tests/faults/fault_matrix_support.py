"""Helpers for the fault-injection matrix: fast options, process finders, waits, an HTTP server on a fixed port.

Processes are found by the census of :mod:`wave_actors.testing` (fault servers
through ``tests/process_support.py``, shared with the runtime tests); states
are waited for with :func:`wave_actors.testing.wait_for_state`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import psutil
import trio
from polling import poll_until
from presets import FAST_SESSION
from process_support import server_processes as server_processes

from wave_actors import Session, SessionSnapshot
from wave_actors.testing import REFERENCE_SERVER_PATH, entry_command, fault_server_entry, process_census

# The session preset, with keep-alive pings every 0.2 s: a remote server that stops answering is noticed
# (and reconnected) within a cell's bounds.
MATRIX: Final = attrs.evolve(
    FAST_SESSION, transport=attrs.evolve(FAST_SESSION.transport, ping_interval=0.2, ping_timeout=1.0)
)

# For faults that hang the handshake: the dial gives up after this. The healthy servers dialed next to
# them must still make it on a loaded 2-core machine.
HANG_DIAL_TIMEOUT: Final = 1.5
HANGING: Final = attrs.evolve(MATRIX, dial_timeout=HANG_DIAL_TIMEOUT)

# Tells the matrix's servers apart in ``ps``: the value of ``--instructions``.
FAULTY_MARK: Final = "fault-matrix-faulty"
HEALTHY_MARK: Final = "fault-matrix-healthy"

# The long-lived program the fault server's grandchildren run (see fault_server.py).
_GRANDCHILD_SIGNATURE: Final = "signal.pause()"
# Set by tests/conftest.py in the suite's environment; every process the suite starts inherits it.
_MARK_VARIABLE: Final = "WAVE_ACTORS_TEST_MARK"


def _command(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""  # gone since the census


def grandchild_processes() -> list[psutil.Process]:
    """Live fault-server grandchildren of this test run, re-parented (``setsid``) ones included."""
    census = process_census(_MARK_VARIABLE, os.environ[_MARK_VARIABLE])
    return [process for process in census if _GRANDCHILD_SIGNATURE in _command(process)]


def kill(pid: int) -> None:
    """SIGKILL ``pid`` at once: a crash the server cannot see coming."""
    os.kill(pid, signal.SIGKILL)


async def snapshot_where(
    session: Session, predicate: Callable[[SessionSnapshot], bool], *, timeout: float = 10.0
) -> SessionSnapshot:
    """The first snapshot of ``session`` for which ``predicate`` holds (woken by each change); fails after ``timeout``."""
    with trio.fail_after(timeout):
        return await session.wait_for(predicate)


# An HTTP reference server that can be killed and started again at the same URL.
# serve_reference_server() lets the OS pick a fresh port on every start, so a
# "restart" there would be a different URL; this one binds a port chosen up front.

_HTTP_PROGRAM: Final = """\
import socket, sys
sys.path.insert(0, sys.argv[2])
import uvicorn
from reference_server import build_server
port = int(sys.argv[1])
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", port))
sock.listen(128)
app = build_server().streamable_http_app()
uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)).run(sockets=[sock])
"""

_HTTP_START_TIMEOUT: Final = 20.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@attrs.define(eq=False)
class FixedPortServer:
    """The SDK's reference server over streamable HTTP on a fixed port; :meth:`kill` and :meth:`start` at will."""

    port: int
    process: trio.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        """Start the server and return once it accepts connections."""
        assert self.process is None or self.process.returncode is not None, "already running"
        self.process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _HTTP_PROGRAM, str(self.port), str(REFERENCE_SERVER_PATH.parent)],
            stdin=subprocess.DEVNULL,
        )
        process = self.process

        async def accepting() -> bool:
            if process.returncode is not None:
                raise RuntimeError(f"HTTP reference server on port {self.port} exited with {process.returncode}")
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", self.port)
            except OSError:
                return False
            await stream.aclose()
            return True

        await poll_until(accepting, limit=_HTTP_START_TIMEOUT, what=f"the HTTP reference server on port {self.port}")

    async def kill(self) -> None:
        """SIGKILL the server (no goodbye to its clients) and reap it."""
        process = self.process
        if process is not None and process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await process.wait()


@asynccontextmanager
async def fixed_port_server() -> AsyncGenerator[FixedPortServer, None]:
    """A started :class:`FixedPortServer`, killed on exit whatever happened."""
    server = FixedPortServer(free_port())
    try:
        await server.start()
        yield server
    finally:
        await server.kill()


def reference_server_pids() -> list[int]:
    """Pids of the HTTP reference servers this test process runs."""
    return [process.pid for process in process_census() if "reference_server" in _command(process)]


def gated_entry(directory: Path, gate: Path, *, normal: dict[str, Any], gated: dict[str, Any]) -> dict[str, object]:
    """A stdio entry running the fault server with ``normal`` keywords, plus ``gated`` ones while ``gate`` exists.

    The switch is read at every start, so a test can let the first dial succeed
    and make the reconnect misbehave (or the other way round). The wrapper
    ``exec``s the fault server, so the pid the session sees is the server's.
    """
    base = entry_command(fault_server_entry(**normal))[1:]
    extra_flags = entry_command(fault_server_entry(**gated))[4:]  # drop python, "-I", "-S", the script path
    wrapper = directory / f"gate-{gate.name}.py"
    wrapper.write_text(
        "import os, sys\n"
        f"argv = [sys.executable, *{base!r}]\n"
        f"if os.path.exists({str(gate)!r}):\n"
        f"    argv += {extra_flags!r}\n"
        "os.execv(sys.executable, argv)\n"
    )
    return {"type": "stdio", "command": sys.executable, "args": ["-I", "-S", str(wrapper)]}
