"""Where failures from below become wave-actors errors: the transport's one boundary.

Everything the MCP SDK, pydantic, trio, anyio, httpx or the operating system
raises on the way to a server is turned into a :mod:`wave_actors._errors` class
here, and nowhere else, so nothing above the transport ever sees an
``MCPError``, an ``httpx`` error or a bare ``OSError``. As in httpcore's
``map_exceptions``, one table names what each foreign exception *means*
(:class:`Failure`); each path then words that meaning for its callers:

- the request path, :meth:`~wave_actors._transport.connection.Connection.call_tool`
  and ``list_tools``: :func:`request_error`, from a plain ``try`` around the
  await (it is the hot path: no context manager, no import per call);
- the dial and the life of an open connection,
  :func:`~wave_actors._transport.dial.open_connection`: a :class:`DialBoundary`
  around the whole block, which raises :class:`DialError` before the handshake
  completed and :class:`ServerUnavailable` after it;
- the spawn of a stdio server,
  :func:`~wave_actors._transport.stdio.open_stdio_transport`: :func:`spawn_error`
  for the ``OSError`` of a command that cannot be started.

A process out of file descriptors (``EMFILE``, ``ENFILE``) is worded the same
on every path: the count, the limit and what to do
(:func:`~wave_actors._family.descriptors.exhausted_message`), never a bare
"Too many open files".

The SDK's and pydantic's classes are resolved the first time a failure is
mapped, never at import: importing :mod:`wave_actors` must not import ``mcp``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self, cast

import attrs
import trio

from wave_actors._errors import DialError, ServerUnavailable, ToolCallError, ToolTimeout, WaveActorsError
from wave_actors._family.descriptors import exhausted_message, out_of_descriptors
from wave_actors._transport.answers import Refusal
from wave_actors._transport.redaction import redact_text
from wave_actors._transport.stderr import StderrLog

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError

__all__ = ["DialBoundary", "Failure", "classify", "dial_error", "http_refusal", "request_error", "spawn_error"]

# Their exceptions have no common base; whatever they raise is the transport failing.
_TRANSPORT_LIBRARIES: Final = ("httpx", "anyio")
_SAID_CHARS: Final = 200


class Failure(enum.Enum):
    """What a foreign exception means for the request or connection it ended."""

    TIMED_OUT = enum.auto()
    """The request's deadline passed (the SDK cancelled it on the server)."""
    CLOSED = enum.auto()
    """The connection is gone; the transport's loss reason says why."""
    BROKEN = enum.auto()
    """The HTTP client or an anyio stream failed; its own message says why."""
    ANSWERED = enum.auto()
    """The server answered this request with a JSON-RPC error; the connection is fine."""
    UNSERIALIZABLE = enum.auto()
    """The request's arguments cannot be written as JSON; it was not sent."""
    MALFORMED = enum.auto()
    """The server's answer to this request was not a valid JSON-RPC response, or not its own; the connection is fine."""
    REJECTED = enum.auto()
    """The server's answer was malformed, or broke the tool's own output schema."""
    TOO_LARGE = enum.auto()
    """The server's answer passed the transport's limit on one message and was dropped; the connection is fine."""
    AUTHORIZATION = enum.auto()
    """The connection's OAuth stopped the request: a login is needed, or credentials were refused (R-AUTH-2)."""


@attrs.frozen
class _Table:
    """Foreign exception types and what they mean, checked in order."""

    mcp_error: type[MCPError]
    by_code: Mapping[int, Failure]
    by_type: tuple[tuple[tuple[type[Exception], ...], Failure], ...]


@functools.cache
def _table() -> _Table:
    """The table, built on the first failure: by then the dial has imported the SDK."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    from pydantic_core import PydanticSerializationError

    return _Table(
        mcp_error=MCPError,
        by_code={REQUEST_TIMEOUT: Failure.TIMED_OUT, CONNECTION_CLOSED: Failure.CLOSED},
        by_type=(
            ((PydanticSerializationError,), Failure.UNSERIALIZABLE),
            ((trio.BrokenResourceError, trio.ClosedResourceError, OSError, TimeoutError), Failure.CLOSED),
        ),
    )


_REFUSALS: Final = {
    Refusal.MALFORMED: Failure.MALFORMED,
    Refusal.UNSENDABLE: Failure.UNSERIALIZABLE,
    Refusal.TOO_LARGE: Failure.TOO_LARGE,
    Refusal.MISADDRESSED: Failure.MALFORMED,
}


def classify(error: Exception) -> Failure:
    """What ``error``, raised below the transport, means.

    :param error: an exception from the SDK, pydantic, trio, anyio, httpx or the OS.
    """
    table = _table()
    if isinstance(error, table.mcp_error):
        # The transport's own answers (see .answers) carry a Refusal, which no server can send.
        refusal = error.data
        if isinstance(refusal, Refusal):
            return _REFUSALS[refusal]
        if isinstance(refusal, WaveActorsError):
            return Failure.AUTHORIZATION
        return table.by_code.get(error.code, Failure.ANSWERED)
    for types, failure in table.by_type:
        if isinstance(error, types):
            return failure
    if type(error).__module__.startswith(_TRANSPORT_LIBRARIES):
        return Failure.BROKEN
    # pydantic's ValidationError (a malformed answer), or the SDK rejecting a
    # result that breaks the tool's own output schema.
    return Failure.REJECTED


def request_error(
    error: Exception, *, server: str, request: str, timeout: float | None, loss_reason: str | None
) -> Exception:
    """Our exception for a request that raised ``error``.

    :param error: what the SDK raised for the request.
    :param server: the server's name.
    :param request: what was asked, e.g. ``tools/call 'echo'``.
    :param timeout: the request's deadline in seconds, if it had one.
    :param loss_reason: why the connection was lost, if it was.
    :returns: a :class:`ToolTimeout`, :class:`ServerUnavailable` or
        :class:`ToolCallError`; a :class:`TypeError` for arguments that cannot
        be serialized; ``error`` itself if it is already ours.
    """
    if isinstance(error, WaveActorsError):
        return error
    failure = classify(error)
    if failure is Failure.AUTHORIZATION:
        return _authorization_error(error)
    prefix = f"server {server!r}: {request}"
    if failure is Failure.TIMED_OUT:
        after = f" after {timeout:g} s" if timeout is not None else ""
        return ToolTimeout(f"{prefix} timed out{after}; it was cancelled on the server and will not be retried")
    if failure is Failure.CLOSED:
        return ServerUnavailable(f"{prefix} failed: {loss_reason or 'connection closed'}")
    if failure is Failure.BROKEN:
        return ServerUnavailable(f"{prefix} failed: {_detail(error)}")
    if failure is Failure.ANSWERED:
        answer = cast("MCPError", error)
        return ToolCallError(f"{prefix}: the server answered with error {answer.code}: {answer.message}", answer.code)
    if failure is Failure.UNSERIALIZABLE:
        return TypeError(f"{prefix}: the arguments are not JSON-serializable, so nothing was sent: {_detail(error)}")
    if failure in (Failure.MALFORMED, Failure.TOO_LARGE):
        return ToolCallError(f"{prefix}: {_detail(error)}")
    return ToolCallError(f"{prefix}: the server's answer was rejected: {_detail(error)}")


def dial_error(error: Exception, *, server: str, stderr: StderrLog | None) -> WaveActorsError:
    """Our exception for a dial that failed with ``error``: a :class:`DialError` naming why.

    :param error: what failed; a :class:`ConnectionError` carrying the loss
        reason when the server died during the handshake (its exit status says
        more than "connection closed").
    :param server: the server's name.
    :param stderr: the stdio server's stderr log, whose :meth:`~StderrLog.excerpt`
        (the lines that read as errors first, within five) ends the message.
    :returns: ``error`` itself if it is already ours.
    """
    if isinstance(error, WaveActorsError):
        return error
    if classify(error) is Failure.AUTHORIZATION:
        return _authorization_error(error)
    message = f"server {server!r}: connect failed: {_detail(error)}"
    excerpt = stderr.excerpt() if stderr is not None else None
    if excerpt is not None and excerpt.lines:
        shown = f" ({len(excerpt.lines)} of {excerpt.total} lines, error lines kept first)" if excerpt.omitted else ""
        message += f"\n  stderr{shown}:\n    " + "\n    ".join(excerpt.lines)
    return DialError(message)


def spawn_error(error: OSError, *, server: str, command: str) -> DialError:
    """Our exception for a stdio server whose command cannot be started: a :class:`DialError` naming why.

    :param error: what the spawn raised (no such file, permission denied, a
        missing working directory, ...).
    :param server: the server's name.
    :param command: the entry's command.
    """
    exhausted = out_of_descriptors(error)
    if exhausted is not None:
        return DialError(f"server {server!r}: cannot start {command!r}: {exhausted_message(exhausted)}")
    return DialError(f"server {server!r}: cannot start {command!r}: {error.strerror or error}")


def http_refusal(status: int, phrase: str, *, origin: str, said: str | None = None) -> str:
    """Words for an HTTP server that refused a request with ``status`` (http and sse entries).

    :param status: the HTTP status, e.g. 401.
    :param phrase: its reason phrase, e.g. ``"Unauthorized"``.
    :param origin: where the entry was configured (a file path, or ``constructor``).
    :param said: what the server said about it, if anything worth repeating.
    """
    text = f"the server answered HTTP {status}" + (f" {phrase}" if phrase else "")
    if said:
        text += f" ({redact_text(said)[:_SAID_CHARS]})"
    if status in (401, 403):
        text += f": it refused the credentials or headers sent; check the entry's headers in {origin}"
    elif status == 404:
        text += f": check the entry's url in {origin}"
    return text


def _authorization_error(answer: Exception) -> WaveActorsError:
    """The error an :func:`~.answers.authorization_answer` carries, as its request's caller gets it."""
    carried = cast("MCPError", answer).data
    assert isinstance(carried, WaveActorsError)
    return carried


def _detail(error: Exception) -> str:
    # An MCPError's str is its message; some trio and anyio errors have none. An HTTP
    # error names the URL it failed on, with the token in its query (R-CFG-12).
    exhausted = out_of_descriptors(error)
    if exhausted is not None:  # an HTTP connection, or a pipe of the dial, found no descriptor left
        return exhausted_message(exhausted)
    return redact_text(str(error)) or type(error).__name__


class DialBoundary:
    """The boundary around one open connection, from the dial to the close.

    Before the handshake completes every failure is a :class:`DialError`
    carrying the tail of the server's stderr. After it, a transport that fails
    out of the block (the SDK's HTTP clients raise out of their task groups
    when the server vanishes) is a :class:`ServerUnavailable`. The caller's
    own exceptions, raised into the block, pass through unchanged, unwrapped
    from the task groups they crossed.

    :param server: the server's name.
    """

    __slots__ = ("caller_error", "established", "server", "stderr")

    def __init__(self, server: str) -> None:
        self.server = server
        self.stderr: StderrLog | None = None
        """The stdio server's stderr log, once the process is started."""
        self.established = False
        """Set once the handshake completed."""
        self.caller_error: BaseException | None = None
        """What the caller's block raised, which is theirs and never mapped."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if error is None:
            return False
        leaf = _single_leaf(error)
        if not isinstance(leaf, Exception) or (leaf is error and isinstance(error, BaseExceptionGroup)):
            return False  # a cancellation, or several failures at once: nothing one error could say
        mapped = self._mapped(leaf)
        if mapped is error:
            return False
        # A group only carried the leaf across task groups: show the leaf alone.
        raise mapped from (leaf.__cause__ if mapped is leaf else leaf)

    def _mapped(self, error: Exception) -> Exception:
        if error is self.caller_error or isinstance(error, WaveActorsError):
            return error
        if self.established:
            return ServerUnavailable(f"server {self.server!r}: connection lost: {_detail(error)}")
        return dial_error(error, server=self.server, stderr=self.stderr)


def _single_leaf(error: BaseException) -> BaseException:
    """The one exception inside nested single-member groups, or the group itself."""
    leaf = error
    while isinstance(leaf, BaseExceptionGroup):
        members = cast("tuple[BaseException, ...]", leaf.exceptions)
        if len(members) != 1:
            break
        leaf = members[0]
    return cast(BaseException, leaf)
