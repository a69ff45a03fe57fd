"""Clients of ``wave-actors serve``: the MCP SDK's own, over stdio, and the project files they serve.

Shared by the tests of this folder."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import httpx2
import mcp_types as types
import psutil
import trio
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from polling import poll_until

from wave_actors.testing import process_census

MARK_VARIABLE = "WAVE_SERVE_TEST_MARK"

INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
"""An ``initialize`` request as a client without the SDK writes it (raw pipes, hand-built HTTP requests)."""


def family(mark: str) -> list[psutil.Process]:
    """Every live process carrying ``MARK_VARIABLE=mark``: a serve, its watchdog, its servers and their children."""
    return process_census(MARK_VARIABLE, mark, descendants=False)


def write_project(workdir: Path, servers: dict[str, dict[str, object]]) -> Path:
    """Write ``workdir/.mcp.json`` with ``servers`` and return ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return workdir


def serve_command(workdir: Path, home: Path, *options: str) -> list[str]:
    """The argv of ``wave-actors serve`` on ``workdir``, with a home of its own."""
    return [sys.executable, "-m", "wave_actors", "serve", "--workdir", str(workdir), "--home", str(home), *options]


@asynccontextmanager
async def serve_client(
    workdir: Path,
    home: Path,
    *options: str,
    message_handler: MessageHandlerFnT | None = None,
    errlog: TextIO = sys.stderr,
    mark: str | None = None,
) -> AsyncGenerator[tuple[ClientSession, types.InitializeResult], None]:
    """An initialized SDK client of ``wave-actors serve --stdio`` on ``workdir``; leaving it closes serve's stdin.

    With ``mark``, serve and everything it starts carry ``MARK_VARIABLE=mark`` (:func:`family` finds them).
    """
    command, *args = serve_command(workdir, home, "--stdio", *options)
    # The whole environment: the suite's leak-detection mark reaches serve and every server it starts.
    env = dict(os.environ) if mark is None else {**os.environ, MARK_VARIABLE: mark}
    parameters = StdioServerParameters(command=command, args=args, env=env)
    async with (
        stdio_client(parameters, errlog=errlog) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, message_handler=message_handler) as session,
    ):
        result = await session.initialize()
        yield session, result


def text(result: types.CallToolResult) -> str:
    """The one text content of ``result``."""
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@asynccontextmanager
async def http_serve(workdir: Path, home: Path, *options: str, mark: str) -> AsyncGenerator[tuple[str, int], None]:
    """``wave-actors serve --http 127.0.0.1:0`` on ``workdir``: yields its URL and pid; leaving it sends SIGTERM.

    The run ends with every process it started reclaimed (its leaving waits for serve's exit).
    """
    log = home.parent / f"serve-{mark}.stderr"
    home.mkdir(parents=True, exist_ok=True)
    command = serve_command(workdir, home, "--http", "127.0.0.1:0", *options)
    with log.open("wb") as errors:
        process = await trio.lowlevel.open_process(command, stderr=errors, env={**os.environ, MARK_VARIABLE: mark})
    try:
        found: list[str] = []

        def serving() -> bool:
            found.extend(re.findall(r"serving (http://\S+)", log.read_text()))
            return bool(found) or process.poll() is not None

        await poll_until(serving, limit=30, what="serve listening")
        assert found, f"serve exited with {process.returncode}: {log.read_text()}"
        yield found[0], process.pid
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        with trio.move_on_after(15):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def http_client(
    url: str, *, headers: dict[str, str] | None = None, message_handler: MessageHandlerFnT | None = None
) -> AsyncGenerator[tuple[ClientSession, types.InitializeResult], None]:
    """An initialized SDK client of ``url`` over streamable HTTP; leaving it ends the MCP session (``DELETE``)."""
    async with (
        httpx2.AsyncClient(headers=headers or {}) as client,
        streamable_http_client(url, http_client=client) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, message_handler=message_handler) as session,
    ):
        yield session, await session.initialize()
