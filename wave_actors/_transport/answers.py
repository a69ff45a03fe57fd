"""Answers no request may wait for in vain, and tool listings that survive one bad tool (R-TOOL-9, R-TOOL-12).

The MCP SDK matches an answer to its request only once the answer is a valid
JSON-RPC message, and validates a whole tool listing at once. Holes
follow, and this module closes them at the transport, without touching the
SDK's session, by rewriting what travels on the SDK's streams:

- An answer whose id is readable but whose body is not valid JSON-RPC
  (``{"id": 7, "result": "oops"}``, or JSON nested past the SDK's parser's
  limit of about 200 levels) reaches the SDK as "not a message", so request 7
  waits out its whole timeout. :func:`malformed_answer` turns such a line into
  an error answer to request 7 that names what was wrong; the request fails at
  once and nothing else is touched. A request the writer could not serialize
  is answered the same way by :func:`unsendable_request`.
- One tool whose listing the SDK rejects (an ``inputSchema`` that is not an
  object schema, say) fails the whole ``tools/list`` and with it the dial.
  :class:`ToolListingCheck` watches ``tools/list`` requests go out and takes
  the tools the SDK would reject out of their answers, recording which and
  why, so the server keeps its valid tools.
- An answer larger than the transport's limit on one message
  (``TransportOptions.max_message_bytes``) is dropped unread by every
  transport; :func:`oversized_answer` fails its request at once, naming the
  limit, and the connection goes on (R-TOOL-12). Over stdio and SSE the
  request is found by the id at either end of the message
  (:func:`oversized_message`).

The error answers it makes carry a :class:`Refusal` as their ``data`` (or,
for a request its OAuth stopped, the error itself, :func:`authorization_answer`): a
Python object no server can send, so
:func:`~wave_actors._transport.failures.classify` can tell them from the
server's own errors. :func:`checked_streams` wraps a transport's streams for
:func:`~wave_actors._transport.dial.open_connection`; the stdio transport's
:mod:`.stdout` and :mod:`.stdin`, and :mod:`.sse`, call the two line-level functions.
"""

from __future__ import annotations

import enum
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Final, Self, cast

import trio

from wave_actors._config.redact import describe_secret
from wave_actors._errors import WaveActorsError
from wave_actors._transport.progress import ProgressRoutes
from wave_actors._transport.server_requests import ServerRequests

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage
    from mcp_types import RequestId

__all__ = [
    "Refusal",
    "ToolListingCheck",
    "answered_id",
    "authorization_answer",
    "checked_streams",
    "malformed_answer",
    "misaddressed_answer",
    "oversized_answer",
    "oversized_message",
    "unsendable_request",
]

logger = logging.getLogger(__name__)

# JSON-RPC's "internal error": the code of the answers made here (their data says they are ours).
_INTERNAL_ERROR: Final = -32603
_DETAIL_CHARS: Final = 300
# Unanswered tools/list ids remembered at most; a listing is rarely in flight for long.
_MAX_LISTINGS: Final = 32
_NOT_LISTING: Final = object()
# What the SDK validates against before a version is negotiated (never the case for a listing of ours).
_FALLBACK_VERSION: Final = "2025-11-25"
_TOO_DEEP: Final = "it nests JSON deeper than the client's parser accepts (about 200 levels)"


class Refusal(enum.Enum):
    """Why the transport itself answered a request (the ``data`` of the error answer it made)."""

    MALFORMED = "malformed"
    """The server's answer to it was not a valid JSON-RPC response."""
    UNSENDABLE = "unsendable"
    """It could not be written to the server."""
    TOO_LARGE = "too large"
    """The server's answer to it was larger than the transport's limit on one message."""
    MISADDRESSED = "misaddressed"
    """What came back on its own HTTP exchange was not its answer (another request's id, or no answer at all)."""


def malformed_answer(server: str, line: bytes, error: ValueError) -> SessionMessage | None:
    """An error answer for the request that ``line`` meant to answer, if ``line`` names one.

    :param server: the server's name, for the log.
    :param line: a line the SDK's JSON-RPC parser rejected.
    :param error: what the parser said.
    :returns: an error answer addressed to the line's id, whose message says
        what was wrong; ``None`` when no id can be read (the line is noise, or
        a malformed request or notification, which nothing waits for).
    """
    found = _readable_answer(line, error)
    if found is None:
        return None
    request_id, reason = found
    logger.warning("server %r: its answer to request %r is not valid JSON-RPC: %s", server, request_id, reason)
    text = f"the server's answer is not a valid JSON-RPC response: {reason}"
    return _error_answer(request_id, text, Refusal.MALFORMED)


def _readable_answer(line: bytes, error: ValueError) -> tuple[RequestId, str] | None:
    """The id ``line`` answers, and what is wrong with it; ``None`` if no id can be read."""
    try:
        parsed: object = json.loads(line)
    except RecursionError:
        return _too_deep_answer(line)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    message = cast("dict[str, Any]", parsed)
    request_id = message.get("id")
    if "method" in message or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id, _what_is_wrong(message, error)


# The start of an answer: only simple members before its result, as serializers write them; its
# top-level id is readable there when one of them is the id (the MCP Python SDK writes it second).
_ANSWER_START: Final = re.compile(
    rb'\A\s*\{(?P<members>(?:\s*"(?:jsonrpc|id)"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,)*)\s*"(?:result|error)"\s*:'
)
# The end of an answer whose simple members come after its result (the TypeScript SDK writes
# `{"result": ..., "jsonrpc": "2.0", "id": 7}`): members closed by the one brace that ends the line.
_ANSWER_END: Final = re.compile(rb'(?P<members>(?:,\s*"(?:jsonrpc|id)"\s*:\s*(?:-?\d+|"[^"\\]*")\s*)+)\}\s*\Z')
_ID_MEMBER: Final = re.compile(rb'"id"\s*:\s*(?:(?P<number>-?\d+)|"(?P<text>[^"\\]*)")')
_EDGE_BYTES: Final = 4096


def _too_deep_answer(line: bytes) -> tuple[RequestId, str] | None:
    request_id = answered_id(line[:_EDGE_BYTES], line[-_EDGE_BYTES:])
    return None if request_id is None else (request_id, _TOO_DEEP)


def answered_id(head: bytes, tail: bytes = b"") -> RequestId | None:
    """The top-level id of the answer that starts with ``head`` and ends with ``tail``, if it can be read there.

    For an answer too large to keep (:func:`oversized_answer`) or to parse:
    the start must be that of an answer (simple members, then ``result`` or
    ``error``), and the id is read among the simple members before the
    result or, failing that, among those after it, which only the brace
    closing the message may follow. Both places hold top-level members only,
    so an id nested in the result is never taken for the answer's.

    :param head: the first bytes of the message (4 KiB are enough).
    :param tail: its last bytes; empty when they were not kept.
    :returns: ``None`` when the message does not start as an answer, or no id is in either place.
    """
    start = _ANSWER_START.match(head, 0, _EDGE_BYTES)
    if start is None:
        return None
    member = _ID_MEMBER.search(start.group("members"))
    if member is None and tail:
        end = _ANSWER_END.search(tail[-_EDGE_BYTES:])
        member = _ID_MEMBER.search(end.group("members")) if end is not None else None
    if member is None:
        return None
    number, text = member.group("number"), member.group("text")
    return int(number) if number is not None else text.decode("utf-8", "replace")


def oversized_message(server: str, head: bytes, tail: bytes, limit: int) -> SessionMessage | None:
    """What a message larger than ``limit`` bytes, dropped unread, becomes (R-TOOL-12).

    :param server: the server's name, for the log.
    :param head: the message's first bytes.
    :param tail: its last bytes (empty when the transport did not keep them).
    :param limit: the limit it passed.
    :returns: an error answer failing the request it answered, whose id is
        read from its ends (:func:`answered_id`); ``None`` when no id can be
        read there (a notification, a request of the server's, or an answer
        written in an unusual order), after a warning: nothing can be failed
        with it, and a request it may have answered ends at its own deadline.
    """
    request_id = answered_id(head, tail)
    if request_id is None:
        logger.warning(
            "server %r: dropped a message of over %d bytes (TransportOptions.max_message_bytes); "
            "no request id could be read in it",
            server,
            limit,
        )
        return None
    return oversized_answer(request_id, limit)


def oversized_answer(request_id: RequestId, limit: int) -> SessionMessage:
    """An error answer for a request whose answer was larger than ``limit`` bytes and was dropped.

    The request fails at once, naming the limit and the setting that raises it;
    the connection, and every other request on it, go on.
    """
    text = (
        f"the server's answer is larger than the limit of {limit} bytes on one message "
        "(TransportOptions.max_message_bytes); it was dropped, and the connection is fine"
    )
    return _error_answer(request_id, text, Refusal.TOO_LARGE)


def misaddressed_answer(request_id: RequestId, what: str) -> SessionMessage:
    """An error answer for a request whose own HTTP exchange brought back something else than its answer.

    Over streamable HTTP the answer on a POST's stream belongs to that POST's
    request (R-TOOL-14): what came instead is dropped, completes no other
    request, and this request fails at once as a protocol error.

    :param request_id: the request the POST carried.
    :param what: what came back instead, e.g. ``"the answer to request 7"``.
    """
    text = f"the server sent {what} in reply to this request: a protocol error; it was dropped"
    return _error_answer(request_id, text, Refusal.MISADDRESSED)


def authorization_answer(request_id: RequestId, error: WaveActorsError) -> SessionMessage:
    """An error answer for a request the connection's OAuth stopped before the server served it (R-AUTH-2).

    The server asked for a login or for more scope (:class:`~wave_actors.LoginRequired`),
    a machine client's credentials were refused, or the credential store could
    not be read. The error itself is the answer's ``data``: the request's caller
    gets it as it is (:mod:`.failures`).
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    answer = ErrorData(code=_INTERNAL_ERROR, message=str(error), data=error)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=answer))


def unsendable_request(message: SessionMessage, error: Exception) -> SessionMessage | None:
    """An error answer for a request the writer could not serialize, so its caller fails at once.

    Arguments are checked before they are queued
    (:mod:`~wave_actors._transport.arguments`); this is the net under that
    check, for whatever else the SDK may send.

    :param message: the outgoing message that failed.
    :param error: why it failed.
    :returns: ``None`` for a notification or a response: nothing waits for those.
    """
    from mcp_types import JSONRPCRequest

    request = message.message
    if not isinstance(request, JSONRPCRequest):
        return None
    return _error_answer(request.id, f"the request cannot be written as JSON: {_first_line(error)}", Refusal.UNSENDABLE)


def _error_answer(request_id: RequestId, text: str, refusal: Refusal) -> SessionMessage:
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    error = ErrorData(code=_INTERNAL_ERROR, message=text, data=refusal)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _what_is_wrong(message: dict[str, Any], error: ValueError) -> str:
    if "recursion limit" in str(error):
        return _TOO_DEEP
    if message.get("jsonrpc") != "2.0":
        return f'its "jsonrpc" is {describe_secret(message.get("jsonrpc"))}, not "2.0"'
    if "result" in message:
        result = message["result"]
        if not isinstance(result, dict):
            return f'its "result" is {describe_secret(result)}, not an object'
    elif "error" in message:
        return 'its "error" is not an object with an integer "code" and a string "message"'
    else:
        return 'it has neither a "result" nor an "error"'
    return _first_line(error)


def _first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines[:3])[:_DETAIL_CHARS] or type(error).__name__


class ToolListingCheck:
    """Takes the tools the SDK would reject out of ``tools/list`` answers, and remembers why (R-TOOL-9).

    :meth:`sent` sees every outgoing message and notes the ids of
    ``tools/list`` requests; :meth:`received` sees every incoming one and
    checks the answers to those ids, tool by tool, against the same models
    the SDK validates with: the protocol version's own result type and the
    SDK's ``ListToolsResult``. A listing that passes whole (nearly always) is
    passed on untouched.

    :param server: the server's name, for the log.
    """

    __slots__ = (
        "_answer_types",
        "_listings",
        "_request_type",
        "_response_type",
        "protocol_version",
        "server",
        "skipped",
    )

    def __init__(self, server: str) -> None:
        self.server = server
        self.protocol_version: str | None = None
        """The negotiated protocol version; set once the handshake completed."""
        self.skipped: list[str] = []
        """One line per skipped tool, oldest first: which tool, and why."""
        # The ids of tools/list requests sent and not answered yet, oldest first (a dict keeps the order).
        self._listings: dict[RequestId, None] = {}
        # Resolved here, once: the dial has imported the SDK, and these run for every message.
        from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

        self._request_type = JSONRPCRequest
        self._answer_types = (JSONRPCResponse, JSONRPCError)
        self._response_type = JSONRPCResponse

    def sent(self, message: SessionMessage) -> None:
        """Note ``message`` going out."""
        request = message.message
        if isinstance(request, self._request_type) and request.method == "tools/list":
            self._listings[_correlated(request.id)] = None
            if len(self._listings) > _MAX_LISTINGS:
                del self._listings[next(iter(self._listings))]  # never answered (timed out): forget it

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """``item`` coming in, with its rejected tools taken out if it answers a ``tools/list``."""
        if not self._listings or isinstance(item, Exception):
            return item
        answer = item.message
        if not isinstance(answer, self._answer_types) or answer.id is None:
            return item  # a request or notification of the server's
        if self._listings.pop(_correlated(answer.id), _NOT_LISTING) is _NOT_LISTING:
            return item
        if isinstance(answer, self._response_type):
            self._keep_valid_tools(answer.result)
        return item

    def _keep_valid_tools(self, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list) or self._rejection(result) is None:
            return
        kept: list[Any] = []
        for position, tool in enumerate(cast("list[Any]", tools), start=1):
            reason = self._rejection({"tools": [tool]})
            if reason is None:
                kept.append(tool)
                continue
            name = cast("dict[str, Any]", tool).get("name") if isinstance(tool, dict) else None
            shown = repr(name)[:80] if isinstance(name, str) else f"number {position} of the listing"
            warning = f"tool {shown} skipped: the MCP SDK rejects its listing: {reason}"
            logger.warning("server %r: %s", self.server, warning)
            self.skipped.append(warning)
        result["tools"] = kept

    def _rejection(self, result: dict[str, Any]) -> str | None:
        """Why the SDK would reject ``result`` as a ``tools/list`` answer, or ``None``."""
        import mcp_types
        from mcp_types import methods
        from pydantic import ValidationError

        try:
            methods.validate_server_result("tools/list", self.protocol_version or _FALLBACK_VERSION, result)
            mcp_types.ListToolsResult.model_validate(result, by_name=False)
        except ValidationError as error:
            return _validation_reason(error)
        except (KeyError, ValueError):
            pass  # a version the SDK does not know the surface of: it skips that check too
        return None


def _validation_reason(error: Any) -> str:
    details: list[dict[str, Any]] = error.errors(include_url=False, include_input=False)
    if not details:
        return _first_line(error)
    first = details[0]
    # The location inside one tool: drop the leading "tools", 0 of the one-tool result checked.
    location = [str(part) for part in first.get("loc", ()) if not isinstance(part, int)]
    if location[:1] == ["tools"]:
        location = location[1:]
    where = ".".join(location) or "the tool"
    return f"{where}: {first.get('msg', 'invalid')}"[:_DETAIL_CHARS]


def _correlated(request_id: RequestId) -> RequestId:
    # The SDK correlates "7" with 7 (a peer may echo an id as a string); so must we.
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


class _CheckedReadStream(trio.abc.AsyncResource):
    """A read stream handing progress to its callers and the server's requests to their answerer, then every
    other item to :meth:`ToolListingCheck.received` (the SDK's ``ReadStream``); it ends after a flood of requests."""

    __slots__ = ("_check", "_end", "_inner", "_progress", "_requests")

    def __init__(
        self, inner: Any, check: ToolListingCheck, progress: ProgressRoutes | None, requests: ServerRequests | None
    ) -> None:
        import anyio

        self._inner = inner
        self._check = check
        self._progress = progress
        self._requests = requests
        self._end = anyio.EndOfStream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise self._end from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        # The loop is here, not in receive(): the SDK iterates, and a frame less is
        # a few hundred bytes less per connection for as long as it waits.
        while True:
            if self._requests is not None and self._requests.flooded:
                raise StopAsyncIteration  # the connection is lost: what the server sends now is not handed on
            try:
                item = await self._inner.receive()
            except self._end:
                raise StopAsyncIteration from None
            if self._progress is not None and self._progress.deliver(item):
                continue
            if self._requests is not None and self._requests.received(item):
                continue
            return self._check.received(item)


class _CheckedWriteStream(trio.abc.AsyncResource):
    """A write stream showing every item to :meth:`ToolListingCheck.sent` first (the SDK's ``WriteStream``)."""

    __slots__ = ("_check", "_inner")

    def __init__(self, inner: Any, check: ToolListingCheck) -> None:
        self._inner = inner
        self._check = check

    async def send(self, item: SessionMessage, /) -> None:
        self._check.sent(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


def checked_streams(
    read_stream: Any,
    write_stream: Any,
    check: ToolListingCheck,
    progress: ProgressRoutes | None = None,
    requests: ServerRequests | None = None,
) -> tuple[Any, Any]:
    """``(read_stream, write_stream)`` as the SDK should see them: through ``check`` (and ``progress``, ``requests``).

    :param read_stream: the transport's stream of incoming messages.
    :param write_stream: the transport's stream of outgoing messages.
    :param check: the connection's tool-listing check.
    :param progress: the connection's progress routes (R-TOOL-10); their notifications never reach the SDK.
    :param requests: the connection's answerer of the server's requests
        (R-TOOL-13); those requests never reach the SDK, and the read stream
        ends once they flood it.
    """
    return _CheckedReadStream(read_stream, check, progress, requests), _CheckedWriteStream(write_stream, check)
