"""``wave-actors serve --stdio``: one client on this process's stdin and stdout (R-SERVE-1).

The client that started the process is the one connection. Its ``initialize``
opens its session; stdin EOF (the client closed the pipe, or died) ends the
connection, the session is destroyed, and the host closes, reclaiming every
process before the command exits. A SIGKILL of this process is the host's
watchdog's to answer (R-KILL-7).

The lines are read and written by trio on the file descriptors themselves,
not by the SDK's ``stdio_server``: that one reads stdin in a worker thread
that no cancellation can stop, so a SIGTERM or a Ctrl-C would wait for the
client to write or close the pipe before any process was reclaimed. Here the
read is a trio checkpoint like any other. The framing is MCP's: one JSON-RPC
message per line, parsed by the SDK's own message model. While serving,
descriptor 1 points at stderr, so nothing printed by accident reaches the
protocol stream.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Final

import anyio
import mcp_types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from wave_actors import Host
from wave_actors._serve.front import CURRENT_SLOT, ClientSlot, Front, FrontOptions

__all__ = ["MAX_LINE_BYTES", "serve_stdio", "stdio_streams"]

logger = logging.getLogger(__name__)

MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""The longest message line a client may send; a longer one ends the connection."""

_READ_SIZE: Final = 65536


class LineTooLong(Exception):
    """A client sent a line longer than :data:`MAX_LINE_BYTES`."""


async def _read_lines(stream: trio.abc.ReceiveStream, limit: int) -> AsyncGenerator[bytes, None]:
    buffer = bytearray()
    while True:
        chunk = await stream.receive_some(_READ_SIZE)
        if not chunk:
            if buffer.strip():
                yield bytes(buffer)
            return
        start = len(buffer)
        buffer += chunk
        end = buffer.find(b"\n", start)
        while end >= 0:
            yield bytes(buffer[:end])
            del buffer[: end + 1]
            end = buffer.find(b"\n")
        if len(buffer) > limit:
            raise LineTooLong(f"a message line longer than {limit} bytes")


@asynccontextmanager
async def stdio_streams(
    stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream, *, max_line_bytes: int = MAX_LINE_BYTES
) -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]], None
]:
    """The SDK's message streams over newline-delimited JSON-RPC on ``stdin`` and ``stdout``.

    The read side ends at EOF (or at a line past ``max_line_bytes``); a line
    that is not a JSON-RPC message is handed on as the exception that says
    so, as the SDK's transports do, and the next line is read.

    :param stdin: where the client's lines come from.
    :param stdout: where the answers go.
    :param max_line_bytes: the longest line accepted.
    """
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with read_writer:
            try:
                async for line in _read_lines(stdin, max_line_bytes):
                    if not line.strip():
                        continue
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as error:
                        await read_writer.send(error)
                        continue
                    await read_writer.send(SessionMessage(message))
            except LineTooLong as error:
                logger.warning("stdio client: %s; closing the connection", error)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the server stopped reading: it is closing

    async def write() -> None:
        async with write_reader:
            async for message in write_reader:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await stdout.send_all(text.encode() + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    logger.info("stdio client: stdout closed; dropping what is left to send")
                    return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        nursery.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def _standard_descriptors() -> AsyncGenerator[tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream], None]:
    """Streams on duplicates of descriptors 0 and 1; meanwhile 0 reads ``/dev/null`` and 1 writes to stderr."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        async with stdin, stdout:
            yield stdin, stdout
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for descriptor in (null, saved_in, saved_out):
            os.close(descriptor)


async def serve_stdio(host: Host, options: FrontOptions) -> None:
    """Serve one client on stdin and stdout until it closes stdin; its session is destroyed before this returns.

    :param host: the host the client's session belongs to.
    :param options: the project, the load mode and the trust mode.
    """
    slot = ClientSlot()
    CURRENT_SLOT.set(slot)
    try:
        async with trio.open_nursery() as nursery:
            front = Front(host, options, nursery)
            async with _standard_descriptors() as (stdin, stdout), stdio_streams(stdin, stdout) as streams:
                await front.server.run(*streams, front.server.create_initialization_options())
            nursery.cancel_scope.cancel()
    finally:
        if slot.client is not None:
            await slot.client.close()
