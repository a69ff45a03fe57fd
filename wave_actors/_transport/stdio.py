"""The stdio transport: spawn a server without a shell and speak MCP on its pipes.

We spawn the process ourselves instead of using the SDK's ``stdio_client``
because reclamation is the point of this library (R-KILL-1, R-KILL-2): the SDK
kills the process group but not ``setsid`` descendants, waits a fixed 2 s
after stdin EOF even when the dial was cancelled, and writes stderr to a file
object instead of a bounded log. Here the family is tagged at spawn
(:data:`~wave_actors._transport.proctree.FAMILY_VARIABLE`) and reclaimed by
:func:`~wave_actors._transport.proctree.reclaim` with configurable graces.

Protocol on stdout, one JSON-RPC message per line; logs on stderr, never parsed
(R-CFG-9). The only caller is :func:`~wave_actors._transport.dial.open_connection`.

If the host itself dies, two more defences hold (R-KILL-7): the server is
forked with a parent-death signal (:mod:`wave_actors._watchdog.parent_death`
says why that needs a thread of its own under trio), and the family is
registered, from before the spawn until after its reclamation, with the
process's family registry, which tells the host's watchdog.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import anyio
import attrs
import trio

from wave_actors._config import ServerConfig
from wave_actors._errors import DialError
from wave_actors._transport.answers import malformed_answer, unsendable_request
from wave_actors._transport.noise import NoiseLog
from wave_actors._transport.proctree import FAMILY_VARIABLE, Graces, family_tag, reclaim
from wave_actors._transport.stderr import StderrLog
from wave_actors._watchdog.families import registry as families
from wave_actors._watchdog.parent_death import open_server_process

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "open_stdio_transport"]

logger = logging.getLogger(__name__)

_READ_CHUNK: Final = 65_536
_FLUSH_WINDOW: Final = 0.25
# After one end of a dead process is seen, how long to wait for the other
# (exit status after stdout EOF, or stdout EOF after the exit status).
_SETTLE_WINDOW: Final = 0.5


@attrs.define(eq=False)
class StdioProcess:
    """What the stdio transport knows about its server process.

    :param pid: the server's pid (also its session and process-group id).
    :param stderr: the bounded log of its stderr.
    :param established: set once the MCP handshake completed; a transport that
        was never established is reclaimed without the polite stdin-EOF stage.
    """

    pid: int
    stderr: StderrLog
    _process: trio.Process = attrs.field(alias="process")
    established: bool = False

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (negative: killed by that signal)."""
        return self._process.poll()


def describe_exit(returncode: int | None) -> str:
    """Human words for a process's exit status."""
    if returncode is None:
        return "process is still running"
    if returncode < 0:
        return f"process was killed by signal {-returncode}"
    return f"process exited with code {returncode}"


@asynccontextmanager
async def open_stdio_transport(
    config: ServerConfig,
    *,
    graces: Graces,
    on_lost: Callable[[str], None],
    stderr_lines: int = 200,
    max_line_bytes: int = 64 * 1024 * 1024,
) -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage], StdioProcess],
    None,
]:
    """Spawn ``config``'s command and yield MCP streams over its pipes.

    On exit, whatever the reason (including cancellation), the process family
    is reclaimed before this returns.

    :param config: a stdio server entry.
    :param graces: reclamation stage lengths.
    :param on_lost: called once the connection is gone by itself (process exit,
        stdout closed, oversized line), with a reason naming the exit status.
    :param stderr_lines: lines of stderr to keep.
    :param max_line_bytes: longest accepted protocol line; longer ends the connection.
    :raises DialError: the command cannot be started.
    """
    import mcp_types
    from mcp.shared.message import SessionMessage

    if not config.command:
        raise DialError(f"server {config.name!r}: stdio entry has no command")
    argv = [config.command, *config.args]
    tag = family_tag()
    env = {**os.environ, **config.env, FAMILY_VARIABLE: tag}
    # Registered before it exists: a host killed during the spawn still leaves a
    # family its watchdog knows by tag (R-KILL-7).
    families.begin(tag, graces)
    try:
        process = await open_server_process(argv, env=env, cwd=config.cwd)
    except OSError as exc:
        families.end(tag)
        raise DialError(f"server {config.name!r}: cannot start {config.command!r}: {exc.strerror or exc}") from exc
    except BaseException:
        families.end(tag)
        raise
    families.started(tag, process.pid)
    # From here on every path must reach the reclaim in the ``finally`` below.
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdin, stdout, stderr_pipe = process.stdin, process.stdout, process.stderr
    handle = StdioProcess(pid=process.pid, stderr=StderrLog(stderr_lines), process=process)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](16)
    noise = NoiseLog(config.name)
    stdout_closed = trio.Event()
    writer_done = trio.Event()
    reported = False

    async def report_loss(reason: str) -> None:
        nonlocal reported
        if not reported:
            reported = True
            on_lost(reason)
        await read_send.aclose()

    async def read_stdout() -> None:
        buffer = bytearray()
        deliver = True
        try:
            while True:
                try:
                    chunk = await stdout.receive_some(_READ_CHUNK)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    chunk = b""
                if not chunk:
                    break
                if not deliver:
                    continue  # draining, so a server flushing on exit is not blocked
                buffer += chunk
                while (newline := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if not line.strip():
                        continue
                    noise.tick()
                    try:
                        item: SessionMessage | None = SessionMessage(
                            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        # An answer with a readable id fails its request now (R-TOOL-9); the rest is noise.
                        item = malformed_answer(config.name, line, exc)
                        if item is None:
                            noise.line(line)
                            continue
                    try:
                        await read_send.send(item)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        deliver = False
                        break
                if deliver and len(buffer) > max_line_bytes:
                    await report_loss(f"protocol line longer than {max_line_bytes} bytes")
                    deliver = False
        finally:
            noise.flush()
            stdout_closed.set()
        with trio.move_on_after(_SETTLE_WINDOW):
            await process.wait()
        exit_words = describe_exit(process.poll())
        await report_loss(f"stdout closed; {exit_words}" if process.poll() is None else exit_words)

    async def watch_exit() -> None:
        await process.wait()
        # Let the reader deliver what the server wrote before dying, unless a
        # surviving child holds stdout open.
        with trio.move_on_after(_SETTLE_WINDOW):
            await stdout_closed.wait()
        await report_loss(describe_exit(process.poll()))

    async def write_stdin() -> None:
        try:
            async with write_receive:
                async for message in write_receive:
                    try:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                    except ValueError as error:
                        # Never let one message end the writer, and with it the connection (R-TOOL-9).
                        await refuse(message, error)
                        continue
                    await stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await report_loss(f"stdin closed; {describe_exit(process.poll())}")
        finally:
            writer_done.set()

    async def refuse(message: SessionMessage, error: ValueError) -> None:
        answer = unsendable_request(message, error)
        if answer is None:
            logger.warning(
                "server %r: dropped an outgoing message that cannot be written as JSON: %s", config.name, error
            )
            return
        try:
            await read_send.send(answer)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the connection is closing; its requests fail with it

    async def read_stderr() -> None:
        try:
            while chunk := await stderr_pipe.receive_some(_READ_CHUNK):
                handle.stderr.feed(bytes(chunk))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        handle.stderr.close()

    async def close_stdin() -> None:
        write_send.close()
        with trio.move_on_after(_FLUSH_WINDOW):
            await writer_done.wait()
        await stdin.aclose()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_stdout)
            nursery.start_soon(watch_exit)
            nursery.start_soon(write_stdin)
            nursery.start_soon(read_stderr)
            try:
                yield read_receive, write_send, handle
            finally:
                # Nobody reads the session streams any more; the reader drains.
                read_receive.close()
                await reclaim(
                    process,
                    tag=tag,
                    graces=graces,
                    close_stdin=close_stdin if handle.established else None,
                )
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            try:
                # Reached without the nursery only if it failed to open; reclaim is idempotent.
                if process.poll() is None:
                    await reclaim(process, tag=tag, graces=graces, close_stdin=None)
                for resource in (stdin, stdout, stderr_pipe):
                    await resource.aclose()
                write_send.close()
                read_send.close()
            finally:
                families.end(tag)
