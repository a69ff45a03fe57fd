"""A stdio server's stdout as the SDK's read stream, with its stderr and its exit watched alongside (R-CFG-9, R-RACE-5).

:class:`ServerOutput` reads the pipes in the task that asks it for the next
message (the SDK's receive loop), so a connected server costs no task of its
own. On Linux it waits on one ``epoll`` of its own holding stdout, stderr and
a pidfd, so the same wait also keeps stderr drained and notices the exit.
Elsewhere two small tasks, run by the transport, read stderr and wait for
the exit. Stdout is cut into lines by :mod:`.framing`; each line is parsed
here into a message, or an answer that fails its request (R-TOOL-9), or
noise (:mod:`.noise`); a line over the limit on one message fails the
request it answered and nothing else (R-TOOL-12). Stderr goes to the
bounded :class:`~.stderr.StderrLog`.

A loss (stdout closed, the process gone, stdin broken) is reported once; the messages read before it are still handed out, then the
stream ends. After the connection, :meth:`ServerOutput.drain` keeps both
pipes read while the family is reclaimed, so a server flushing on its way
out is never blocked by a full pipe.

Built by :func:`~wave_actors._transport.stdio.open_stdio_transport`, which
hands it to the SDK together with the writer of :mod:`.stdin`.
"""

from __future__ import annotations

import math
import os
import select
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import trio

from wave_actors._transport.answers import malformed_answer, oversized_message
from wave_actors._transport.framing import LineFramer, LongLine
from wave_actors._transport.noise import NoiseLog
from wave_actors._transport.stderr import StderrLog

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["ServerOutput", "describe_exit", "fd_of"]

_READ_CHUNK: Final = 65_536
# After one end of a dead process is seen, how long to wait for the other
# (exit status after stdout EOF, or stdout EOF after the exit status).
_SETTLE_WINDOW: Final = 0.5

# Whether one epoll can wait for a server's stdout, stderr and exit at once (Linux).
_MULTIPLEXED: Final = hasattr(select, "epoll") and hasattr(os, "pidfd_open")


def describe_exit(returncode: int | None) -> str:
    """Human words for a process's exit status."""
    if returncode is None:
        return "process is still running"
    if returncode < 0:
        return f"process was killed by signal {-returncode}"
    return f"process exited with code {returncode}"


def fd_of(stream: object) -> int | None:
    """The file descriptor under a trio stream, when it is a plain (non-blocking) one."""
    return stream.fileno() if isinstance(stream, trio.lowlevel.FdStream) else None


class ServerOutput(trio.abc.AsyncResource):
    """The server's stdout as the SDK's read stream, with its stderr and its exit watched alongside.

    Reads happen in the task that calls :meth:`receive`. A loss (stdout
    closed, the process gone, stdin broken) is reported
    once through ``on_lost``; the messages read before it are still handed
    out, then the stream ends.
    """

    __slots__ = (
        "_closed",
        "_deliver",
        "_ended",
        "_exited",
        "_framer",
        "_message",
        "_noise",
        "_on_lost",
        "_parse",
        "_pidfd",
        "_poll",
        "_process",
        "_ready",
        "_server",
        "_settle_deadline",
        "_stderr",
        "_stderr_fd",
        "_stderr_log",
        "_stderr_open",
        "_stdout",
        "_stdout_fd",
        "_stdout_open",
        "_wait_scope",
        "_woken",
    )

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
        self._framer = LineFramer(max_line_bytes)
        self._message = SessionMessage
        self._parse = mcp_types.jsonrpc_message_adapter.validate_json
        self._noise = NoiseLog(server)
        # A list, not a deque: it rarely holds more than a few messages, and an empty deque is 600 bytes.
        self._ready: list[SessionMessage | Exception] = []
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
        self._stdout_fd = fd_of(self._stdout)
        self._stderr_fd = fd_of(self._stderr)
        if _MULTIPLEXED and self._stdout_fd is not None and self._stderr_fd is not None:
            self._open_poll(process.pid)

    def _open_poll(self, pid: int) -> None:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return  # a kernel or sandbox without pidfds, or no descriptor left: the helper tasks do it
        try:
            poll = select.epoll(3)
        except OSError:
            os.close(pidfd)
            return
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
        for line in self._framer.feed(chunk):
            if isinstance(line, LongLine):
                self._long_line(line)
            else:
                self._line(line)

    def _long_line(self, line: LongLine) -> None:
        # Dropped unread; the request it answered fails alone, and the connection goes on (R-TOOL-12).
        self._noise.tick()
        answer = oversized_message(self._server, line.head, line.tail, self._framer.max_line_bytes)
        if answer is not None:
            self._ready.append(answer)

    def _line(self, line: bytes) -> None:
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
