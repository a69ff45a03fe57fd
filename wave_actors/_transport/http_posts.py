"""Streamable HTTP requests, each on a POST that belongs to it: closed when it ends, answered only by its own answer.

Over streamable HTTP every request is a POST whose response (a JSON body or
an event stream) carries the request's answer. The SDK's transport
(``mcp.client.streamable_http``) is used as it is, with three of its steps
replaced, through :class:`RequestPosts`, a subclass that
:func:`open_request_posts` runs in place of the SDK's
``streamable_http_client`` (same streams, same tasks):

- **A request that ends closes its POST** (R-TOOL-14). Under the protocol
  versions negotiated today the SDK closes a request's response stream only
  when the answer arrives: a call that timed out or was cancelled left its
  stream open until the connection closed, and a server that held such
  streams open filled the HTTP client's pool (100 connections) until every
  request, pings included, stalled. The SDK sends ``notifications/cancelled``
  for every request it abandons, timed out or cancelled; as that
  notification is handed to the transport (:meth:`RequestPosts.abandon`), the
  request's POST is aborted too, so its connection goes back to the pool at
  once, and the notification is still sent.
- **The answer on a POST belongs to that POST's request** (R-TOOL-14). The
  SDK handed a JSON answer carrying another request's id to that other
  request (and its own caller waited out its deadline), and silently gave an
  event stream's answer the POST's id, whatever id it carried. Here an answer
  that names another request fails the POST's own request as a protocol
  error (:func:`~.answers.misaddressed_answer`) and completes nothing else;
  an error answer with no id (a server that could not read the request) is
  the POST's request's.
- **A JSON answer is bounded like an event** (R-TOOL-12). The SDK reads a
  JSON body whole, whatever its size; here past
  ``TransportOptions.max_message_bytes`` it is dropped unread and its
  request fails naming the limit (:func:`~.answers.oversized_answer`).
- **A request the connection's OAuth stops fails alone** (R-AUTH-2). The
  SDK lets an exception of the HTTP client's auth flow end the transport's
  whole task group; here a request that needs a login (or whose machine
  credentials were refused) is answered with that error
  (:func:`~.answers.authorization_answer`), a notification is dropped with a
  line in the log, and the connection goes on.

Imported only by :func:`~.http.open_http_transport` (it imports the SDK's
HTTP client, which a host with only stdio servers never loads).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import httpx2
from mcp.client.streamable_http import RequestContext, StreamableHTTPTransport, StreamWriter
from mcp.shared._context_streams import create_context_streams  # the SDK's own streams, as its opener makes them
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import (
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from wave_actors._errors import WaveActorsError
from wave_actors._transport.answers import authorization_answer, misaddressed_answer, oversized_answer

__all__ = ["RequestPosts", "open_request_posts"]

logger = logging.getLogger(__name__)


def _same_request(answered: RequestId, asked: RequestId) -> bool:
    # The SDK correlates "7" with 7 (a peer may echo an id as a string); so must we.
    return answered == asked or str(answered) == str(asked)


class RequestPosts(StreamableHTTPTransport):
    """The SDK's streamable HTTP transport, with each request's POST owned by that request.

    :param url: the server's endpoint.
    :param max_message_bytes: the largest answer (one event, or one JSON body) kept.
    """

    def __init__(self, url: str, *, max_message_bytes: int) -> None:
        super().__init__(url, max_sse_event_size=max_message_bytes)
        self._limit = max_message_bytes

    def abandon(self, request_id: RequestId) -> None:
        """Abort the POST of ``request_id``, whose caller gave up on it, so its connection goes back to the pool.

        Called as the SDK's ``notifications/cancelled`` for it is handed to the
        transport: not when the transport's writer gets to it, which may wait
        behind other POSTs, and behind a full pool.
        """
        post = self._in_flight_posts.get(request_id)
        if post is not None:
            post.scope.cancel()

    def _consume_modern_cancellation(self, session_message: SessionMessage) -> bool:
        """Abort the POST of a request its caller gave up, whatever the protocol version; the notification still goes.

        The writer's own look, in order: it catches a request whose POST had
        not started yet when :meth:`abandon` looked for it.
        """
        if super()._consume_modern_cancellation(session_message):
            return True  # the SDK aborted the POST itself, and sends nothing (the 2026 wire)
        message = session_message.message
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = cancelled_request_id_from_params(message.params)
            if request_id is not None:
                self.abandon(request_id)
        return False

    async def _handle_post_request(self, ctx: RequestContext) -> None:
        try:
            await super()._handle_post_request(ctx)
        except WaveActorsError as error:
            await _refused_by_authorization(ctx, error)

    async def _handle_resumption_request(self, ctx: RequestContext) -> None:
        try:
            await super()._handle_resumption_request(ctx)
        except WaveActorsError as error:
            await _refused_by_authorization(ctx, error)

    def _owned(self, message: JSONRPCMessage, request_id: RequestId) -> SessionMessage:
        """``message``, come on the POST of ``request_id``, as it may reach the session."""
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            if message.id is None:
                message.id = request_id  # an error about the request it could not read: this one's
            elif not _same_request(message.id, request_id):
                return misaddressed_answer(request_id, f"the answer to request {message.id!r}")
        return SessionMessage(message)

    async def _handle_json_response(
        self, response: httpx2.Response, read_stream_writer: StreamWriter, *, request_id: RequestId
    ) -> None:
        body = bytearray()
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self._limit:
                    await read_stream_writer.send(oversized_answer(request_id, self._limit))
                    return
            message = jsonrpc_message_adapter.validate_json(bytes(body), by_name=False)
        except (httpx2.StreamError, ValidationError) as error:  # as the SDK words it
            failed = ErrorData(code=PARSE_ERROR, message=f"Failed to parse JSON response: {error}")
            await read_stream_writer.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=failed)))
            return
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            await read_stream_writer.send(SessionMessage(message))  # a request or notification: handed on
            kind = "a notification" if isinstance(message, JSONRPCNotification) else "a request of its own"
            await read_stream_writer.send(misaddressed_answer(request_id, f"{kind} and no answer"))
            return
        await read_stream_writer.send(self._owned(message, request_id))

    async def _handle_sse_event(
        self,
        sse: httpx2.ServerSentEvent,
        read_stream_writer: StreamWriter,
        original_request_id: RequestId | None = None,
        resumption_callback: Callable[[str], Awaitable[None]] | None = None,
    ) -> bool:
        if original_request_id is None or sse.event != "message" or not sse.data:
            # The stream of no request (GET), or no message: the SDK's own way.
            return await super()._handle_sse_event(sse, read_stream_writer, original_request_id, resumption_callback)
        try:
            message = jsonrpc_message_adapter.validate_json(sse.data, by_name=False)
        except ValidationError:
            # The SDK fails the request naming the parse error.
            return await super()._handle_sse_event(sse, read_stream_writer, original_request_id, resumption_callback)
        await read_stream_writer.send(self._owned(message, original_request_id))
        if sse.id and resumption_callback is not None:
            await resumption_callback(sse.id)
        return isinstance(message, JSONRPCResponse | JSONRPCError)


async def _refused_by_authorization(ctx: RequestContext, error: WaveActorsError) -> None:
    """A message the connection's OAuth stopped: a request is answered with the error; a notification is dropped."""
    message = ctx.session_message.message
    if isinstance(message, JSONRPCRequest):
        await ctx.read_stream_writer.send(authorization_answer(message.id, error))
    else:
        logger.info("a notification was not sent: %s", error)


@asynccontextmanager
async def open_request_posts(
    url: str, *, http_client: httpx2.AsyncClient, max_message_bytes: int
) -> AsyncGenerator[tuple[Any, Any, RequestPosts], None]:
    """Yield ``(read_stream, write_stream, transport)`` of a :class:`RequestPosts` transport to ``url``.

    What the SDK's ``streamable_http_client`` does with its own transport, and
    no more: its session is never ended here (:mod:`.http` says goodbye
    itself, R-KILL-8).

    :param url: the server's endpoint.
    :param http_client: the client every request goes through.
    :param max_message_bytes: the largest answer kept (R-TOOL-12).
    """
    transport = RequestPosts(url, max_message_bytes=max_message_bytes)
    read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_stream_reader = create_context_streams[SessionMessage](0)
    async with read_stream_writer, read_stream, write_stream, write_stream_reader, anyio.create_task_group() as group:

        def start_get_stream() -> None:
            group.start_soon(transport.handle_get_stream, http_client, read_stream_writer)

        group.start_soon(
            transport.post_writer,
            http_client,
            write_stream_reader,
            read_stream_writer,
            write_stream,
            start_get_stream,
            group,
        )
        try:
            yield cast(Any, read_stream), cast(Any, write_stream), transport
        finally:
            group.cancel_scope.cancel()
