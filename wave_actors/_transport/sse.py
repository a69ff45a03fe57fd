"""The SSE transport (the 2024-11-05 HTTP+SSE protocol): an event stream in, a POST per message out.

:func:`open_sse_transport` is what :mod:`.remote` opens for ``sse`` entries.
It replaces the SDK's ``sse_client``, which holds each event to a fixed
1 MiB, tears the whole connection down (and logs a traceback) when one event
is larger, and turns a refused request into an unhandled error in its writer.
Here:

- The event stream is read by :class:`~wave_actors._transport.eventstream.EventParser`
  with ``TransportOptions.max_message_bytes`` as its limit. An answer larger
  than that is dropped, its request fails at once naming the limit
  (:func:`~wave_actors._transport.answers.oversized_message`), and the stream
  goes on: nothing is redialed and nothing is printed.
- A refused ``GET`` fails the dial naming the HTTP status (for ``401`` and
  ``403``: the credentials or headers, and the file the entry comes from); a
  refused ``POST`` fails its request the same way.
- The end of the event stream is the end of the connection (``on_lost``), as
  a dead stdio process closing its pipes is.

Redirects are followed only within the endpoint's origin, with the SDK's own
helpers, as its client does. The HTTP client carries the connection's OAuth
(R-AUTH-1): a stream the server refuses for want of a login fails the dial
with :class:`~wave_actors.LoginRequired`, a POST so refused fails its request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin, urlsplit

import trio

from wave_actors._config import ServerConfig
from wave_actors._errors import WaveActorsError
from wave_actors._transport.answers import (
    authorization_answer,
    malformed_answer,
    oversized_message,
    unsendable_request,
)
from wave_actors._transport.eventstream import Event, EventParser, Oversized
from wave_actors._transport.failures import http_refusal
from wave_actors._transport.redaction import redact_text

if TYPE_CHECKING:
    import httpx2
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    from wave_actors._transport.options import TransportOptions

__all__ = ["open_sse_transport"]

logger = logging.getLogger(__name__)

_STREAM_HEADERS: Final = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
# Waiting for the next event may legitimately take long (a quiet server); connect, write and pool waits may not.
_READ_TIMEOUT: Final = 300.0


class _Refused(ConnectionError):
    """The server refused to open the event stream, or gave no endpoint: the dial fails with these words."""


@asynccontextmanager
async def open_sse_transport(
    config: ServerConfig,
    *,
    options: TransportOptions,
    on_lost: Callable[[str], None],
    auth: httpx2.Auth | None = None,
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Yield ``(read_stream, write_stream)`` to ``config``'s SSE server.

    :param config: an sse entry with a url.
    :param options: ``http_timeout`` (connect, write and pool waits) and
        ``max_message_bytes`` (one event).
    :param on_lost: called when the event stream ends or fails.
    :param auth: the connection's OAuth (R-AUTH-1), on the stream and every POST.
    :raises LoginRequired: the server asks for a login before it opens the stream.
    :raises ConnectionError: the server refused the stream (naming the HTTP
        status), or it ended before naming its message endpoint.
    """
    assert config.url is not None
    import anyio
    import httpx2
    from mcp.shared._httpx_utils import stream_within_origin  # the SDK's redirect rule, as its own client uses it
    from mcp.shared.message import SessionMessage

    url = config.url
    timeout = httpx2.Timeout(options.http_timeout, read=_READ_TIMEOUT)
    async with (
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout, auth=auth) as client,
        stream_within_origin(client, "GET", url, headers=_STREAM_HEADERS) as response,
    ):
        if response.status_code >= 300:
            raise _Refused(http_refusal(response.status_code, response.reason_phrase, origin=config.origin))
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "text/event-stream":
            raise _Refused(f"the server answered with {content_type or 'no content type'!r}, not an event stream")
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](16)
        async with trio.open_nursery() as nursery:
            reader = _EventReader(config, response, read_send, options.max_message_bytes, on_lost)
            endpoint: str = await nursery.start(reader.run)
            nursery.start_soon(_post_messages, config, client, endpoint, write_receive, read_send, on_lost)
            try:
                yield read_receive, write_send
            finally:
                read_receive.close()
                write_send.close()
                nursery.cancel_scope.cancel()


class _EventReader:
    """Reads the event stream: first the message endpoint, then every message, until the stream ends."""

    def __init__(
        self,
        config: ServerConfig,
        response: httpx2.Response,
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
        limit: int,
        on_lost: Callable[[str], None],
    ) -> None:
        self._config = config
        self._response = response
        self._read_send = read_send
        self._parser = EventParser(limit)
        self._on_lost = on_lost

    async def run(self, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        import anyio
        import httpx2

        started = False
        why = "the server closed the event stream"
        try:
            async with self._read_send:
                async for chunk in self._response.aiter_bytes():
                    for item in self._parser.feed(chunk):
                        if not started:
                            endpoint = self._endpoint(item)
                            if endpoint is not None:
                                task_status.started(endpoint)
                                started = True
                            continue
                        await self._deliver(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the connection is closing
        except httpx2.HTTPError as error:
            why = f"the event stream failed: {redact_text(str(error)) or type(error).__name__}"
            if not started:
                raise _Refused(why) from error
        if not started:
            raise _Refused("the event stream ended before the server named its message endpoint")
        self._on_lost(why)

    def _endpoint(self, item: Event | Oversized) -> str | None:
        if not isinstance(item, Event) or item.event != "endpoint":
            return None
        assert self._config.url is not None
        endpoint = urljoin(self._config.url, item.data.strip())
        here, there = urlsplit(self._config.url), urlsplit(endpoint)
        if (here.scheme, here.netloc) != (there.scheme, there.netloc):
            raise _Refused(f"the server named a message endpoint on another origin: {redact_text(endpoint)}")
        return endpoint

    async def _deliver(self, item: Event | Oversized) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter
        from pydantic import ValidationError

        if isinstance(item, Oversized):
            answer = oversized_message(self._config.name, item.head, b"", item.limit)
            if answer is not None:
                await self._read_send.send(answer)
            return
        if item.event != "message" or not item.data:
            return  # keep-alives, and events this protocol does not define
        data = item.data.encode()
        try:
            message = jsonrpc_message_adapter.validate_json(data, by_name=False)
        except (ValidationError, ValueError) as error:
            answer = malformed_answer(self._config.name, data, error)
            if answer is not None:
                await self._read_send.send(answer)
            else:
                logger.debug("server %r: an event that is not JSON-RPC was dropped", self._config.name)
            return
        await self._read_send.send(SessionMessage(message))


async def _post_messages(
    config: ServerConfig,
    client: httpx2.AsyncClient,
    endpoint: str,
    write_receive: MemoryObjectReceiveStream[SessionMessage],
    read_send: MemoryObjectSendStream[SessionMessage | Exception],
    on_lost: Callable[[str], None],
) -> None:
    """POST each outgoing message to the endpoint, in order; a request that cannot be sent is answered at once."""
    import anyio
    import httpx2
    from mcp.shared._httpx_utils import request_within_origin
    from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, JSONRPCRequest

    async with write_receive:
        async for item in write_receive:
            message = item.message
            request_id = message.id if isinstance(message, JSONRPCRequest) else None
            try:
                payload = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
                response = await request_within_origin(client, "POST", endpoint, json=payload)
            except WaveActorsError as error:  # the connection's OAuth stopped it: a login is needed (R-AUTH-2)
                if request_id is not None:
                    await _answer(read_send, authorization_answer(request_id, error))
                continue
            except (ValueError, TypeError) as error:  # it cannot be written as JSON: nothing was sent
                answer = unsendable_request(item, error)
                if answer is not None:
                    await _answer(read_send, answer)
                continue
            except httpx2.HTTPError as error:
                why = f"sending to the server failed: {redact_text(str(error)) or type(error).__name__}"
                on_lost(why)
                if request_id is not None:
                    await _answer(read_send, _error_answer(request_id, CONNECTION_CLOSED, why))
                continue
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            if response.status_code >= 300 and request_id is not None:
                text = http_refusal(response.status_code, response.reason_phrase, origin=config.origin)
                await _answer(read_send, _error_answer(request_id, INTERNAL_ERROR, text))


async def _answer(read_send: MemoryObjectSendStream[SessionMessage | Exception], answer: SessionMessage) -> None:
    import anyio

    try:
        await read_send.send(answer)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the connection is closing: nobody waits for it


def _error_answer(request_id: Any, code: int, text: str) -> SessionMessage:
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text)))
