"""Clients of ``wave-actors serve``: the MCP SDK's own, over stdio, and the project files they serve.

Shared by the tests of this folder."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import mcp_types as types
import psutil
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client

from wave_actors.testing import process_census

MARK_VARIABLE = "WAVE_SERVE_TEST_MARK"


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
