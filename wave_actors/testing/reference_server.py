"""The ``mcp`` SDK's own server (``MCPServer``), as a script tests can run.

Usage::

    python reference_server.py --transport stdio
    python reference_server.py --transport streamable-http --port-file PATH
    python reference_server.py --transport sse --port-file PATH

Over HTTP the server listens on 127.0.0.1, on a port the OS picks: the
socket is bound to port 0 here and handed to uvicorn, so no other process
can take the port between choosing and listening. Once uvicorn serves, the
port is written to ``--port-file`` (atomically: a temporary file, then a
rename) and logged on stderr. Endpoints: ``/mcp`` (streamable HTTP),
``/sse`` (SSE).

Tools: ``echo {text}``, ``add {a, b}``, ``sleep {seconds}``, and ``pid {}``
(annotated ``readOnlyHint``). The initialize result carries
:data:`INSTRUCTIONS`.

Use :func:`wave_actors.testing.reference_server_entry` (stdio) or
:func:`wave_actors.testing.serve_reference_server` (HTTP) rather than
building the command line by hand.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Final, Literal

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp_types import ToolAnnotations

INSTRUCTIONS: Final = "Reference server for wave-actors tests: echo, add, sleep and pid."

logger = logging.getLogger("wave_actors.testing.reference_server")


def build_server() -> MCPServer:
    """Build the reference ``MCPServer`` with its tools and instructions."""
    server: MCPServer = MCPServer("wave-actors-reference", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="Return the given text.")
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:  # pyright: ignore[reportUnusedFunction]
        return a + b

    @server.tool(description="Answer after sleeping for the given number of seconds.")
    async def sleep(seconds: float) -> str:  # pyright: ignore[reportUnusedFunction]
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Return the server's process id.", annotations=ToolAnnotations(read_only_hint=True))
    def pid() -> str:  # pyright: ignore[reportUnusedFunction]
        return str(os.getpid())

    return server


def _write_port_file(path: Path, port: int) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(f"{port}\n")
    os.replace(temporary, path)


class _ReportingServer(uvicorn.Server):
    """A uvicorn server that reports its port once it accepts connections."""

    def __init__(self, config: uvicorn.Config, port: int, port_file: Path | None) -> None:
        super().__init__(config)
        self._port = port
        self._port_file = port_file

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        if self._port_file is not None:
            _write_port_file(self._port_file, self._port)
        print(f"reference server listening on 127.0.0.1:{self._port}", file=sys.stderr, flush=True)


def serve_http(server: MCPServer, transport: Literal["streamable-http", "sse"], port_file: Path | None) -> None:
    """Serve ``server`` over HTTP on an OS-chosen 127.0.0.1 port until SIGTERM/SIGINT."""
    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
    _ReportingServer(config, port, port_file).run(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run the reference server until it is stopped."""
    parser = argparse.ArgumentParser(prog="reference_server", description="The mcp SDK's MCPServer, for tests.")
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--port-file", type=Path, default=None, help="write the listening port here (HTTP only)")
    options = parser.parse_args(argv)
    server = build_server()
    if options.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(server, options.transport, options.port_file)


if __name__ == "__main__":
    main()
