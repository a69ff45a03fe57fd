"""The SDK's reference server runs over stdio, streamable HTTP and SSE.

These prove the helpers in :mod:`wave_actors.testing` start it, report where it
listens and stop it, so the library's own tests can dial the reference
implementation over every transport.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from wave_actors.testing import entry_command, reference_server_entry, serve_reference_server

# Importing mcp.server and uvicorn takes over a second; leave room on a busy machine.
pytestmark = pytest.mark.timeout(60)


async def _exercise(session: ClientSession) -> None:
    result = await session.initialize()
    assert result.server_info.name == "wave-actors-reference"
    assert session.instructions is not None and "echo" in session.instructions
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert {"echo", "add", "sleep", "pid"} <= set(tools)
    assert tools["pid"].annotations is not None and tools["pid"].annotations.read_only_hint is True
    echoed = await session.call_tool("echo", {"text": "reference"})
    [content] = echoed.content
    assert isinstance(content, types.TextContent) and content.text == "reference"
    added = await session.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"result": 5}


@asynccontextmanager
async def _stdio_session() -> AsyncGenerator[ClientSession, None]:
    command, *args = entry_command(reference_server_entry())
    parameters = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        yield session


async def test_reference_server_over_stdio() -> None:
    with trio.fail_after(30):
        async with _stdio_session() as session:
            await _exercise(session)


async def test_reference_server_over_streamable_http() -> None:
    with trio.fail_after(30):
        async with serve_reference_server("streamable-http") as url:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            async with (
                streamable_http_client(url) as (read_stream, write_stream),
                ClientSession(read_stream, write_stream) as session,
            ):
                await _exercise(session)


async def test_reference_server_over_sse() -> None:
    with trio.fail_after(30):
        async with serve_reference_server("sse") as url:
            assert url.endswith("/sse")
            async with sse_client(url) as (read, write), ClientSession(read, write) as session:
                await _exercise(session)


async def test_two_http_servers_get_distinct_ports() -> None:
    with trio.fail_after(30):
        async with serve_reference_server() as first, serve_reference_server() as second:
            assert first != second


def test_reference_server_entry_is_stdio_only() -> None:
    assert reference_server_entry()["type"] == "stdio"
    with pytest.raises(ValueError, match="serve_reference_server"):
        reference_server_entry("sse")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def test_a_cancelled_caller_still_stops_the_http_server() -> None:
    with trio.move_on_after(30):
        with trio.CancelScope() as scope:
            async with serve_reference_server() as url:
                assert url
                scope.cancel()
                await trio.sleep_forever()
    # tests/conftest.py fails this test if the server process survived.


def test_importing_the_testing_helpers_does_not_import_mcp() -> None:
    probe = "import sys, wave_actors.testing; print('mcp' in sys.modules, 'mcp.server' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]
