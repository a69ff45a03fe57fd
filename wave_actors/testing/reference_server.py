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

Tools: ``echo {text}``, ``add {a, b}``, ``sleep {seconds}``, ``pid {}``
(annotated ``readOnlyHint``), ``big {size}`` (a text of ``size`` characters),
``progress {steps}`` (reports ``steps`` progress notifications, then
answers), ``ping_client {times}`` (pings the client that many times, one
after the other, on the call's own stream, then answers),
``notify_list_changed {mark}`` (sends ``notifications/tools/list_changed``
with ``_meta.mark`` on the session's standalone stream, not the call's, then
answers) and ``client_info {}`` (the ``clientInfo`` name and version the
client sent in ``initialize``). The initialize result carries
:data:`INSTRUCTIONS`.

Over streamable HTTP two more paths let a test see the server's side of
sessions: ``GET /wave-actors/sessions`` answers
``{"opened": [ids], "ended_by_client": [ids]}`` (sessions an ``initialize``
opened, and sessions a client ended with ``DELETE``), and
``POST /wave-actors/forget`` makes the server forget every session it holds,
as a restarted server would: their ids answer ``404`` from then on.

Use :func:`wave_actors.testing.reference_server_entry` (stdio) or
:func:`wave_actors.testing.serve_reference_server` (HTTP) rather than
building the command line by hand.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.shared.message import ServerMessageMetadata
from mcp_types import EmptyResult, NotificationParams, PingRequest, ToolAnnotations, ToolListChangedNotification

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

    @server.tool(description="Return a text of the given number of characters.")
    def big(size: int) -> str:  # pyright: ignore[reportUnusedFunction]
        return ("0123456789" * (size // 10 + 1))[:size]

    @server.tool(description="Report the given number of progress steps, then answer.")
    async def progress(steps: int, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"{steps} steps"

    @server.tool(description="Send notifications/tools/list_changed on the session's own stream, then answer.")
    async def notify_list_changed(mark: str, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        params = NotificationParams(_meta={"mark": mark})
        await ctx.session.send_notification(ToolListChangedNotification(params=params))
        return "sent"

    @server.tool(
        description="Ping the client the given number of times, one after the other, on the call's own stream."
    )
    async def ping_client(times: int, ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        for _ in range(times):
            await ctx.session.send_request(
                PingRequest(), EmptyResult, request_read_timeout_seconds=10, metadata=related
            )
        return f"{times} pongs"

    @server.tool(description="Return the clientInfo name and version the client sent in initialize.")
    def client_info(ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        params = ctx.session.client_params
        if params is None:
            return "unknown"
        return f"{params.client_info.name} {params.client_info.version}"

    return server


class _SessionLog:
    """An ASGI wrapper around the streamable HTTP app that lets tests see sessions open, end, and be forgotten."""

    def __init__(self, app: Any, server: MCPServer) -> None:
        self._app = app
        self._server = server
        self._opened: list[str] = []
        self._ended: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path == "/wave-actors/sessions":
            await _json(send, {"opened": self._opened, "ended_by_client": self._ended})
            return
        if path == "/wave-actors/forget" and method == "POST":
            await _json(send, {"forgotten": await self._forget()})
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        sent_session = headers.get("mcp-session-id")

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                answered = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in message["headers"]}
                if method == "POST" and sent_session is None and status == 200 and "mcp-session-id" in answered:
                    self._opened.append(answered["mcp-session-id"])
                if method == "DELETE" and sent_session is not None and status in (200, 204):
                    self._ended.append(sent_session)
            await send(message)

        await self._app(scope, receive, watch)

    async def _forget(self) -> int:
        manager = self._server.session_manager
        held = dict(manager._server_instances)  # pyright: ignore[reportPrivateUsage]
        for session_id, transport in held.items():
            await manager._discard_session(session_id, transport)  # pyright: ignore[reportPrivateUsage]
        return len(held)


async def _json(send: Any, body: object) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


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
    app = _SessionLog(server.streamable_http_app(), server) if transport == "streamable-http" else server.sse_app()
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
