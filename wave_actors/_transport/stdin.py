"""The SDK's write stream over a stdio server's stdin: each message written whole, never half a line.

:class:`StdinWriter` writes each message in the sender's own task: whole, at
once, when the pipe has room (nearly always). A message the pipe cannot take
whole is owned by the writer from then on, and a task of the transport's
finishes it, so a cancelled sender never leaves half a line behind. A broken
stdin is reported as the connection's loss through the server's output
(:class:`~.stdout.ServerOutput`), which also carries the answers the
transport makes for a message that cannot be written (R-TOOL-9).

Built by :func:`~wave_actors._transport.stdio.open_stdio_transport`.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Final

import anyio
import trio

from wave_actors._transport.answers import unsendable_request
from wave_actors._transport.stdout import ServerOutput, describe_exit, fd_of

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["StdinWriter"]

logger = logging.getLogger(__name__)

# A sender waits while more than this is written but not yet taken by the pipe.
_WRITE_BACKLOG: Final = 256 * 1024


class StdinWriter(trio.abc.AsyncResource):
    """The SDK's write stream: each message written whole, in the sender's task when the pipe has room.

    :param output: where answers the transport makes go, and where a broken
        stdin is reported.
    :param nursery: where a message the pipe could not take at once is finished.
    """

    __slots__ = (
        "_backlog",
        "_broken",
        "_closed",
        "_fd",
        "_flushed",
        "_flushing",
        "_nursery",
        "_output",
        "_process",
        "_server",
        "_stdin",
    )

    def __init__(self, *, server: str, process: trio.Process, output: ServerOutput, nursery: trio.Nursery) -> None:
        assert process.stdin is not None
        self._server = server
        self._process = process
        self._stdin = process.stdin
        self._fd = fd_of(self._stdin)
        self._output = output
        self._nursery = nursery
        self._backlog = bytearray()  # written, not yet taken by the pipe
        self._flushing = False
        self._flushed: trio.Event | None = None
        self._closed = False
        self._broken = False

    async def send(self, message: SessionMessage, /) -> None:
        if self._broken:
            raise anyio.BrokenResourceError
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        except ValueError as error:
            # Never let one message end the connection (R-TOOL-9).
            self._refuse(message, error)
            return
        if self._flushing or self._fd is None:
            self._backlog += data
        else:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                written = 0
            except OSError:
                self._break()
                raise anyio.BrokenResourceError from None
            if written == len(data):
                return
            self._backlog += memoryview(data)[written:]
        if not self._flushing:
            self._flushing = True
            self._nursery.start_soon(self._flush, name=f"wave_actors.stdin:{self._server}")
        while len(self._backlog) > _WRITE_BACKLOG and not self._broken:
            await self._wait_flushed()

    def _refuse(self, message: SessionMessage, error: ValueError) -> None:
        answer = unsendable_request(message, error)
        if answer is None:
            logger.warning(
                "server %r: dropped an outgoing message that cannot be written as JSON: %s", self._server, error
            )
            return
        self._output.push(answer)

    async def _flush(self) -> None:
        try:
            while self._backlog:
                if self._fd is not None:
                    await trio.lowlevel.wait_writable(self._fd)
                    try:
                        written = os.write(self._fd, self._backlog)
                    except BlockingIOError:
                        continue
                else:
                    written = len(self._backlog)
                    await self._stdin.send_all(bytes(self._backlog))
                del self._backlog[:written]
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._break()
        finally:
            self._flushing = False
            if self._flushed is not None:
                self._flushed.set()
                self._flushed = None

    async def _wait_flushed(self) -> None:
        if self._flushed is None:
            self._flushed = trio.Event()
        await self._flushed.wait()

    def _break(self) -> None:
        self._broken = True
        self._backlog.clear()
        self._output.lose(f"stdin closed; {describe_exit(self._process.poll())}")

    async def finish(self) -> None:
        """Take no more messages, and wait until what was written reached the pipe."""
        self._closed = True
        while self._flushing:
            await self._wait_flushed()

    def refuse_more(self) -> None:
        """Take no more messages."""
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True
