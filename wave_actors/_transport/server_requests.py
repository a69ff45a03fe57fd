"""Requests a server sends its client: answered in order, a bounded number at a time, on their own connection (R-TOOL-13).

The MCP SDK's client session runs each request a server sends (``ping``,
``sampling/createMessage``, ``roots/list``, ...) in a task of its own, which
then waits to write its answer. A server that asks faster than it reads the
answers, 100 000 ``ping`` requests in the middle of a call without reading
its stdin, made as many tasks: the host's memory grew by hundreds of MiB and
the call's result waited behind them.

So those requests never reach the SDK. :class:`ServerRequests` takes them off
the read stream (:func:`~.answers.checked_streams` shows it every incoming
message) and makes each answer at once: an empty result for ``ping``; for
any other method, which this client declares no capability for (sampling,
elicitation and roots are out of its scope), the JSON-RPC error "method not
found". One task of the connection's writes the answers, in the order the
requests came; it runs only while there are answers to write, so a
connection whose server asks nothing costs no task for it. At most :data:`MAX_UNANSWERED`
requests may be unanswered at a time; the next one is a flood, a protocol
violation: the connection is reported lost with a reason naming it, nothing
more the server sends is handed on, and the requests waiting on the
connection fail at once with that reason. The caller closes the connection,
as after any loss; other connections are not concerned.

Each answer goes out on the connection its request came on: the answering
task belongs to that connection (its nursery is the transport's, given to
:meth:`ServerRequests.attach`) and writes to that connection's transport,
which nothing else shares; :meth:`ServerRequests.close` ends it as the
connection closes. An answer carries its
request's transport metadata, for a transport that needs to know more
precisely where the request came from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["MAX_UNANSWERED", "ServerRequests"]

logger = logging.getLogger(__name__)

MAX_UNANSWERED: Final = 32
"""Requests of a server's that may wait for their answer at a time, per connection; one more is a flood."""

# JSON-RPC's "method not found".
_METHOD_NOT_FOUND: Final = -32601


class ServerRequests:
    """The requests one connection's server sent: answered in order, at most ``limit`` waiting.

    :param server: the server's name, for the log and the flood's reason.
    :param on_flood: called once, with the reason, when the server sent more
        than ``limit`` requests that were not answered yet.
    :param limit: requests that may wait for their answer at a time.
    """

    __slots__ = (
        "_answering",
        "_closed",
        "_error",
        "_error_data",
        "_message",
        "_nursery",
        "_on_flood",
        "_queue",
        "_request_type",
        "_result",
        "_running",
        "_write_stream",
        "_writing",
        "flooded",
        "limit",
        "server",
    )

    def __init__(self, server: str, on_flood: Callable[[str], None], *, limit: int = MAX_UNANSWERED) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

        self.server = server
        self.limit = limit
        self.flooded = False
        """Set once the server sent more than ``limit`` unanswered requests; nothing is handed on after."""
        self._on_flood = on_flood
        # Answers not written yet, oldest first: never more than ``limit`` (a list: it is nearly always empty).
        self._queue: list[SessionMessage] = []
        self._writing = 0  # the answer being written, if any
        self._running = False  # the answering task
        self._answering: trio.CancelScope | None = None  # its scope, while it runs
        self._nursery: trio.Nursery | None = None
        self._write_stream: Any = None
        self._closed = False  # the write stream refused an answer: the connection is closing
        # Resolved here, once: the dial has imported the SDK, and received() sees every message.
        self._request_type = JSONRPCRequest
        self._message = SessionMessage
        self._result = JSONRPCResponse
        self._error = JSONRPCError
        self._error_data = ErrorData

    def attach(self, nursery: trio.Nursery, write_stream: Any) -> None:
        """Answer from now on in ``nursery``, on ``write_stream``: the connection's own.

        :param nursery: where the answering task runs while there are answers to write.
        :param write_stream: the transport's stream of outgoing messages (the
            SDK's ``WriteStream``), under the SDK's session.
        """
        self._nursery = nursery
        self._write_stream = write_stream

    def close(self) -> None:
        """Answer nothing more: the connection is closing. A write under way is cancelled."""
        self._closed = True
        self._queue.clear()
        if self._answering is not None:
            self._answering.cancel()

    @property
    def unanswered(self) -> int:
        """Requests received and not answered yet (queued, or being written)."""
        return len(self._queue) + self._writing

    def received(self, item: SessionMessage | Exception) -> bool:
        """Take ``item`` if it is a request of the server's; ``True`` if it was (it must not reach the SDK).

        Synchronous, in the reading task: the answer is made and queued at once.
        """
        if isinstance(item, Exception) or not isinstance(request := item.message, self._request_type):
            return False
        if self.flooded or self._closed:
            return True
        if self.unanswered >= self.limit:
            self.flooded = True
            reason = (
                f"the server sent more than {self.limit} requests ({request.method!r} and others) "
                "without reading their answers: a flood, so the connection was closed"
            )
            logger.warning("server %r: %s", self.server, reason)
            self._on_flood(reason)
            return True
        self._queue.append(self._message(self._answer(request), metadata=item.metadata))
        if not self._running and self._nursery is not None:
            self._running = True
            self._nursery.start_soon(self._write_answers, name=f"wave_actors.server_requests:{self.server}")
        return True

    def _answer(self, request: Any) -> Any:
        if request.method == "ping":
            return self._result(jsonrpc="2.0", id=request.id, result={})
        text = f"wave-actors does not serve {request.method!r} requests (it declared no capability for them)"
        error = self._error_data(code=_METHOD_NOT_FOUND, message=text)
        return self._error(jsonrpc="2.0", id=request.id, error=error)

    async def _write_answers(self) -> None:
        """Write the queued answers in order, and end when there are none left."""
        import anyio

        try:
            with trio.CancelScope() as self._answering:
                while self._queue:
                    reply = self._queue.pop(0)
                    self._writing = 1
                    try:
                        await self._write_stream.send(reply)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        self._closed = True  # the connection is closing: nobody is left to answer
                        self._queue.clear()
                    finally:
                        self._writing = 0
        finally:
            self._answering = None
            self._running = False
