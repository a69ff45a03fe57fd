"""The stdio transport: spawn a server without a shell and speak MCP on its pipes.

We spawn the process ourselves instead of using the SDK's ``stdio_client``
because reclamation is the point of this library (R-KILL-1, R-KILL-2): the SDK
kills the process group but not ``setsid`` descendants, waits a fixed 2 s
after stdin EOF even when the dial was cancelled, and writes stderr to a file
object instead of a bounded log. Here the family is tagged at spawn
(:data:`~wave_actors._family.tag.FAMILY_VARIABLE`) and reclaimed by
:func:`~wave_actors._transport.reclamation.reclaim` with configurable graces.

Protocol on stdout, one JSON-RPC message per line; logs on stderr, never parsed
(R-CFG-9). The only caller is :func:`~wave_actors._transport.dial.open_connection`.

No task of its own while the connection lives. Every connected server used
to cost four (a stdout reader, a stdin writer, a stderr reader, an exit
watcher) and a hop through a memory channel each way; now:

- :class:`_ServerOutput` is the SDK's read stream, and reads the pipes in
  the task that asks it for the next message (the SDK's receive loop). On
  Linux it waits on one ``epoll`` of its own holding stdout, stderr and a
  pidfd, so the same wait also keeps stderr drained and notices the exit.
  Elsewhere two small tasks read stderr and wait for the exit.
- :class:`_StdinWriter` is the SDK's write stream, and writes each message
  in the sender's own task: whole, at once, when the pipe has room (nearly
  always). A message the pipe cannot take whole is owned by the writer from
  then on, and a task of the transport's finishes it, so a cancelled sender
  never leaves half a line behind.

When the connection closes, a drain task keeps reading both pipes until the
process family is reclaimed, so a server flushing on its way out is never
blocked by a full pipe.

If the host itself dies, two more defences hold (R-KILL-7): the server is
spawned with a parent-death signal (:mod:`.spawn` says why that needs a
thread of its own under trio), and the family is registered, from before the
spawn until after its reclamation, with the process's family registry
(:mod:`wave_actors._family.registry`), which tells the host's watchdog.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import select
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import attrs
import trio

from wave_actors._config import ServerConfig
from wave_actors._errors import DialError
from wave_actors._family.graces import Graces
from wave_actors._family.registry import registry as families
from wave_actors._family.tag import FAMILY_VARIABLE, family_tag
from wave_actors._transport.answers import malformed_answer, unsendable_request
from wave_actors._transport.noise import NoiseLog
from wave_actors._transport.reclamation import reclaim
from wave_actors._transport.spawn import open_server_process
from wave_actors._transport.stderr import StderrLog

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "open_stdio_transport"]

logger = logging.getLogger(__name__)

_READ_CHUNK: Final = 65_536
_FLUSH_WINDOW: Final = 0.25
# After one end of a dead process is seen, how long to wait for the other
# (exit status after stdout EOF, or stdout EOF after the exit status).
_SETTLE_WINDOW: Final = 0.5
# A sender waits while more than this is written but not yet taken by the pipe.
_WRITE_BACKLOG: Final = 256 * 1024

# Whether one epoll can wait for a server's stdout, stderr and exit at once (Linux).
_MULTIPLEXED: Final = hasattr(select, "epoll") and hasattr(os, "pidfd_open")


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


def _environment(config: ServerConfig, tag: str) -> dict[str, str]:
    # A function of its own: the copy of the environment is gone once the process is
    # spawned, instead of living in the transport's frame as long as the connection.
    return {**os.environ, **config.env, FAMILY_VARIABLE: tag}


def _fd_of(stream: object) -> int | None:
    """The file descriptor under a trio stream, when it is a plain (non-blocking) one."""
    return stream.fileno() if isinstance(stream, trio.lowlevel.FdStream) else None


class _ServerOutput:
    """The server's stdout as the SDK's read stream, with its stderr and its exit watched alongside.

    Reads happen in the task that calls :meth:`receive`. A loss (stdout
    closed, the process gone, an oversized line, stdin broken) is reported
    once through ``on_lost``; the messages read before it are still handed
    out, then the stream ends.
    """

    def __init__(
        self,
        *,
        server: str,
        process: trio.Process,
        stderr_log: StderrLog,
        on_lost: Callable[[str], None],
        max_line_bytes: int,
    ) -> None:
        import mcp_types
        from mcp.shared.message import SessionMessage

        self._server = server
        self._process = process
        assert process.stdout is not None and process.stderr is not None
        self._stdout = process.stdout
        self._stderr = process.stderr
        self._stderr_log = stderr_log
        self._on_lost = on_lost
        self._max_line_bytes = max_line_bytes
        self._message = SessionMessage
        self._parse = mcp_types.jsonrpc_message_adapter.validate_json
        self._noise = NoiseLog(server)
        # A list, not a deque: it rarely holds more than a few messages, and an empty deque is 600 bytes.
        self._ready: list[SessionMessage | Exception] = []
        self._parts: list[bytes] = []  # the start of a line not yet ended
        self._partial = 0  # its bytes
        self._deliver = True  # false once the connection is lost: what comes after is drained, not parsed
        self._stdout_open = True
        self._stderr_open = True
        self._exited = False
        self._settle_deadline = math.inf
        self._ended = False
        self._closed = False
        self._wait_scope: trio.CancelScope | None = None
        self._woken = False
        self._poll: Any = None  # select.epoll, on Linux
        self._pidfd = -1
        self._stdout_fd = _fd_of(self._stdout)
        self._stderr_fd = _fd_of(self._stderr)
        if _MULTIPLEXED and self._stdout_fd is not None and self._stderr_fd is not None:
            self._open_poll(process.pid)

    def _open_poll(self, pid: int) -> None:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return  # a kernel or sandbox without pidfds: the helper tasks do it
        poll = select.epoll(3)
        for fd in (self._stdout_fd, self._stderr_fd, pidfd):
            assert fd is not None
            poll.register(fd, select.EPOLLIN)
        self._poll, self._pidfd = poll, pidfd

    @property
    def needs_helpers(self) -> bool:
        """Whether stderr and the exit need tasks of their own (no epoll here)."""
        return self._poll is None

    # The SDK's ReadStream.

    @property
    def last_context(self) -> None:
        return None

    async def receive(self) -> SessionMessage | Exception:
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        ready = self._ready
        while not ready:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            if self._poll is not None:
                self._service()
                if ready or self._ended:
                    continue
            await self._wait()
            waited = True
        item = ready.pop(0)
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    # Waiting and reading.

    async def _wait(self) -> None:
        """Wait until a pipe or the exit has news, the settle window is over, or :meth:`_wake` is called."""
        with trio.CancelScope(deadline=self._settle_deadline) as scope:
            self._wait_scope = scope
            try:
                if not self._woken:
                    if self._poll is not None:
                        await trio.lowlevel.wait_readable(self._poll.fileno())
                    elif self._stdout_open:
                        self._read_stdout(await self._receive_stdout())
                    else:
                        await trio.sleep_forever()
            finally:
                self._wait_scope = None
                self._woken = False
        self._check_end()

    async def _receive_stdout(self) -> bytes:
        try:
            return bytes(await self._stdout.receive_some(_READ_CHUNK))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return b""

    def _wake(self) -> None:
        if self._wait_scope is not None:
            self._wait_scope.cancel()
        else:
            self._woken = True

    def _service(self) -> None:
        """Read what the pipes hold now, and note an exit, without blocking (epoll only)."""
        events = self._poll.poll(0)
        if not events:
            return
        ready = {fd for fd, _ in events}
        if self._stderr_fd in ready:
            self._read_stderr()
        if self._pidfd in ready:
            self._unregister(self._pidfd)
            self.note_exit()
        if self._stdout_fd in ready:
            self._read_stdout(self._read_fd(self._stdout_fd))
        self._check_end()

    def _read_fd(self, fd: int | None) -> bytes | None:
        """A chunk of ``fd``: ``b""`` at its end, ``None`` when it has nothing now."""
        assert fd is not None
        try:
            return os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _unregister(self, fd: int | None) -> None:
        if self._poll is not None and fd is not None:
            try:
                self._poll.unregister(fd)
            except (OSError, ValueError):
                pass

    def _read_stderr(self) -> None:
        chunk = self._read_fd(self._stderr_fd)
        if chunk is None:
            return
        if chunk:
            self._stderr_log.feed(chunk)
            return
        self._stderr_open = False
        self._unregister(self._stderr_fd)
        self._stderr_log.close()

    def _read_stdout(self, chunk: bytes | None) -> None:
        if chunk is None:
            return
        if not chunk:
            self._stdout_open = False
            self._unregister(self._stdout_fd)
            self._noise.flush()
            return
        if not self._deliver:
            return  # draining, so a server flushing on exit is not blocked
        start = 0
        newline = chunk.find(b"\n")
        if newline >= 0 and self._parts:
            self._parts.append(chunk[:newline])
            line = b"".join(self._parts)
            self._parts.clear()
            self._partial = 0
            self._line(line)
            start = newline + 1
            newline = chunk.find(b"\n", start)
        while newline >= 0 and self._deliver:
            self._line(chunk[start:newline])
            start = newline + 1
            newline = chunk.find(b"\n", start)
        if start < len(chunk) and self._deliver:
            self._parts.append(chunk[start:] if start else chunk)
            self._partial += len(chunk) - start
            if self._partial > self._max_line_bytes:
                self._parts.clear()
                self._partial = 0
                self.lose(f"protocol line longer than {self._max_line_bytes} bytes")

    def _line(self, line: bytes) -> None:
        if not line or line.isspace():
            return
        self._noise.tick()
        try:
            self._ready.append(self._message(self._parse(line, by_name=False)))
        except ValueError as exc:
            # An answer with a readable id fails its request now (R-TOOL-9); the rest is noise.
            answer = malformed_answer(self._server, line, exc)
            if answer is None:
                self._noise.line(line)
            else:
                self._ready.append(answer)

    def _check_end(self) -> None:
        """Report the loss once stdout is closed and the process gone, or one of them and the settle window over."""
        if self._ended or (self._stdout_open and not self._exited):
            return
        if self._stdout_open or not self._exited:
            # One end is seen: let the reader deliver what the server wrote before dying,
            # unless a surviving child holds stdout open, and let the exit status arrive.
            if self._settle_deadline == math.inf:
                self._settle_deadline = trio.current_time() + _SETTLE_WINDOW
                return
            if trio.current_time() < self._settle_deadline:
                return
        returncode = self._process.poll()
        self.lose(describe_exit(returncode) if returncode is not None else f"stdout closed; {describe_exit(None)}")

    # What the writer and the helper tasks tell it.

    def lose(self, reason: str) -> None:
        """The connection is gone: say why, once, and end the stream after the messages read so far."""
        if self._ended:
            return
        self._ended = True
        self._deliver = False
        if self._poll is not None and self._stderr_open:
            self._read_stderr()  # the last words before the loss belong in its stderr tail
        self._on_lost(reason)
        self._wake()

    def note_exit(self) -> None:
        """The process has exited."""
        self._exited = True
        self._wake()

    def push(self, item: SessionMessage) -> None:
        """Hand ``item`` to the SDK as if the server had sent it (an answer the transport made)."""
        if not self._ended and not self._closed:
            self._ready.append(item)
            self._wake()

    # After the connection.

    async def drain(self) -> None:
        """Keep both pipes read (and dropped) while the process family is reclaimed."""
        self._deliver = False
        self._ready.clear()
        if self._poll is None:
            while self._stdout_open:
                self._read_stdout(await self._receive_stdout())
            return
        while self._stdout_open or self._stderr_open:
            await trio.lowlevel.wait_readable(self._poll.fileno())
            for fd, _ in self._poll.poll(0):
                if fd == self._stderr_fd:
                    self._read_stderr()
                elif fd == self._stdout_fd:
                    self._read_stdout(self._read_fd(fd))
                elif fd == self._pidfd:
                    self._unregister(fd)

    def release(self) -> None:
        """Close the epoll and the pidfd (the pipes are the process's)."""
        if self._poll is not None:
            self._poll.close()
            self._poll = None
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1

    # Helper tasks, where there is no epoll.

    async def watch_exit(self) -> None:
        await self._process.wait()
        self.note_exit()

    async def read_stderr(self) -> None:
        try:
            while chunk := await self._stderr.receive_some(_READ_CHUNK):
                self._stderr_log.feed(bytes(chunk))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        self._stderr_log.close()


class _StdinWriter:
    """The SDK's write stream: each message written whole, in the sender's task when the pipe has room.

    :param output: where answers the transport makes go, and where a broken
        stdin is reported.
    :param nursery: where a message the pipe could not take at once is finished.
    """

    def __init__(self, *, server: str, process: trio.Process, output: _ServerOutput, nursery: trio.Nursery) -> None:
        assert process.stdin is not None
        self._server = server
        self._process = process
        self._stdin = process.stdin
        self._fd = _fd_of(self._stdin)
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

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def open_stdio_transport(
    config: ServerConfig,
    *,
    graces: Graces,
    on_lost: Callable[[str], None],
    stderr_lines: int = 200,
    max_line_bytes: int = 64 * 1024 * 1024,
) -> AsyncGenerator[tuple[_ServerOutput, _StdinWriter, StdioProcess], None]:
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
    if not config.command:
        raise DialError(f"server {config.name!r}: stdio entry has no command")
    tag = family_tag()
    # Registered before it exists: a host killed during the spawn still leaves a
    # family its watchdog knows by tag (R-KILL-7).
    families.begin(tag, graces)
    try:
        process = await open_server_process(
            [config.command, *config.args],
            env=_environment(config, tag),
            cwd=config.cwd,
            on_spawned=functools.partial(families.started, tag),
        )
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
    output: _ServerOutput | None = None
    writer: _StdinWriter | None = None
    try:
        output = _ServerOutput(
            server=config.name,
            process=process,
            stderr_log=handle.stderr,
            on_lost=on_lost,
            max_line_bytes=max_line_bytes,
        )
        async with trio.open_nursery() as nursery:
            writer = stdin_writer = _StdinWriter(server=config.name, process=process, output=output, nursery=nursery)
            if output.needs_helpers:
                nursery.start_soon(output.read_stderr)
                nursery.start_soon(output.watch_exit)

            async def close_stdin() -> None:
                with trio.move_on_after(_FLUSH_WINDOW):
                    await stdin_writer.finish()
                await stdin.aclose()

            try:
                yield output, stdin_writer, handle
            finally:
                # Nobody reads the session streams any more; the pipes are drained.
                nursery.start_soon(output.drain)
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
                if writer is not None:
                    writer.refuse_more()  # its file descriptor is about to be closed
                for resource in (stdin, stdout, stderr_pipe):
                    await resource.aclose()
            finally:
                if output is not None:
                    output.release()
                families.end(tag)
