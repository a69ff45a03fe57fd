"""The streamable HTTP transport: the SDK's client, kept in a live server-side session, which it ends on close.

:func:`open_http_transport` is what :mod:`.remote` opens for ``http``
entries. It runs the SDK's streamable HTTP transport, each request's POST
owned by its request (:mod:`.http_posts`), and adds what it lacks by watching
two things: the HTTP exchanges (httpx event hooks on the client it hands the
SDK) and the JSON-RPC messages on the SDK's streams.

- **Goodbye** (R-KILL-8). The SDK sends its ``DELETE`` only when its block
  exits normally, and a connection here is closed by cancellation. Unless the
  connection was lost, leaving the block sends the ``DELETE`` for the
  current session id itself, shielded and bounded by
  ``TransportOptions.close_timeout``.
- **A session the server forgot.** A server answers ``404`` to a request
  that carries a session id it no longer knows (it restarted, or expired the
  session), and the specification says the client must then start a new
  session. One ``initialize`` is sent again, with the parameters of the first
  (:class:`_HttpSession` renews the session once, however many requests
  were refused by it); meanwhile nothing else is sent. Each request refused by
  that ``404``, which the server therefore never processed, is sent once
  more, on the new session; nothing else is ever sent twice. If the server
  refuses the new session, the connection is reported lost.
- **HTTP statuses, named.** The SDK turns a refused request into "Server
  returned an error response"; the error answer that reaches the caller names
  the status instead, and for ``401`` and ``403`` says the credentials or
  headers were refused, naming the file the entry comes from
  (:func:`~wave_actors._transport.failures.http_refusal`).
- **Answers over the size limit.** The SDK fails a request whose event
  stream passed ``max_sse_event_size`` as if the connection had closed; the
  answer is rewritten to name the limit
  (:func:`~wave_actors._transport.answers.oversized_answer`). The connection
  itself is fine and stays up.
- **OAuth** (R-AUTH-1). The HTTP client carries the connection's
  :class:`~wave_actors._auth.provider.ConnectionAuth`: stored tokens on
  every request, refreshed when due. A request it stops for want of a login
  is answered with :class:`~wave_actors.LoginRequired` (:mod:`.http_posts`),
  which is not rewritten as a refused status. Requests carrying tokens or the
  entry's headers follow redirects only within their origin (the SDK's rule).
- **Answers to the server's own requests stay in their session** (R-TOOL-13).
  A request of the server's is tagged with the session it came on; its
  answer is sent with that session's id, and dropped if the session was
  renewed meanwhile, never sent into the new one.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import re
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, cast

import attrs
import trio

from wave_actors._config import ServerConfig
from wave_actors._errors import WaveActorsError
from wave_actors._transport.answers import oversized_answer
from wave_actors._transport.failures import http_refusal
from wave_actors._transport.redaction import redact_text

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.message import SessionMessage
    from mcp_types import RequestId

    from wave_actors._transport.http_posts import RequestPosts
    from wave_actors._transport.options import TransportOptions

__all__ = ["open_http_transport"]

logger = logging.getLogger(__name__)

_SESSION_HEADER: Final = "mcp-session-id"
_VERSION_HEADER: Final = "mcp-protocol-version"
# Reading a streamed answer may legitimately take long; connect, write and pool waits may not.
_READ_TIMEOUT: Final = 300.0
# Requests in flight, and refusals not yet matched with their answer, remembered at most.
_MAX_REMEMBERED: Final = 1024
# The SDK's own words for what it makes up when a request's POST failed: nothing worth repeating.
_SDK_STAND_INS: Final = frozenset({"Server returned an error response", "Not Found", "Session terminated"})
# How httpx's SSE parser words a passed limit, which the SDK passes on as the request's error.
_EVENT_LIMIT: Final = re.compile(r"exceeded the (\d+) byte limit")


@attrs.frozen
class _Refused:
    """An HTTP status that refused a request's POST.

    :param status: the HTTP status.
    :param phrase: its reason phrase.
    :param session_id: the session id the request carried, if any.
    """

    status: int
    phrase: str
    session_id: str | None


@attrs.frozen
class _Replay:
    """A request a forgotten session refused, to send again once the session is renewed.

    :param session_id: the session that refused it.
    :param request_id: its JSON-RPC id.
    :param request: the request, as the SDK sent it.
    :param refusal: the answer its caller gets if it cannot be sent again.
    """

    session_id: str
    request_id: RequestId
    request: SessionMessage = attrs.field(eq=False)
    refusal: SessionMessage = attrs.field(eq=False)


def _request_id(request: httpx2.Request) -> RequestId | None:
    """The JSON-RPC id of the request ``request`` carries, if it carries one."""
    import httpx2

    try:
        body: object = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    if not isinstance(body, dict) or "method" not in body:
        return None
    request_id = cast("dict[str, object]", body).get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id


def _error_answer(request_id: RequestId, code: int, text: str) -> SessionMessage:
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text)))


class _HttpSession:
    """One connection's server-side session: its id, the requests it refused, its renewal and its end.

    :param config: the server's entry.
    :param on_lost: called when the session cannot be renewed.
    :param on_renewed: called after a renewal (the tools may have changed).
    :param renew_timeout: seconds the new ``initialize`` may take.
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        on_lost: Callable[[str], None],
        on_renewed: Callable[[], None],
        renew_timeout: float,
    ) -> None:
        from mcp.shared.message import ClientMessageMetadata, SessionMessage
        from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

        self._config = config
        self.server = config.name
        """The server's name, for the log."""
        self._on_lost = on_lost
        self._on_renewed = on_renewed
        self._renew_timeout = renew_timeout
        self.session_id: str | None = None
        """The current session id, from the header of the answer to the last ``initialize``."""
        self.protocol_version: str | None = None
        """The protocol version the requests announce, for the goodbye."""
        self.renewals = 0
        """How many times the session was renewed."""
        self._ending = False  # the goodbye is under way: a 404 now is the session we ended
        self._initialize: SessionMessage | None = None
        self._sent: dict[RequestId, SessionMessage] = {}  # requests in flight
        self._refused: dict[RequestId, _Refused] = {}
        self._replayed: set[RequestId] = set()
        self._outcomes: dict[str, bool] = {}  # session id that was forgotten → renewed?
        self._holding: trio.Event | None = None
        self._renewal_ids = itertools.count(1)
        self._renewal_id: str | None = None
        self._renewal_answers: list[SessionMessage] = []  # the answer to the renewal in progress
        self._renewal_answered = trio.Event()
        self._jobs_send, self._jobs = trio.open_memory_channel[_Replay | str](math.inf)
        # Resolved here, once: the dial has imported the SDK, and these run for every message.
        self._request_type = JSONRPCRequest
        self._notification_type = JSONRPCNotification
        self._answer_types = (JSONRPCResponse, JSONRPCError)
        self._error_type = JSONRPCError
        self._message = SessionMessage
        self._metadata = ClientMessageMetadata

    # HTTP: the event hooks of the client the SDK uses.

    async def on_request(self, request: httpx2.Request) -> None:
        """Note the protocol version; send the renewal's ``initialize`` without the forgotten session id."""
        version = request.headers.get(_VERSION_HEADER)
        if version:
            self.protocol_version = version
        renewal = self._renewal_id
        if renewal is not None and _SESSION_HEADER in request.headers and _request_id(request) == renewal:
            del request.headers[_SESSION_HEADER]

    async def on_response(self, response: httpx2.Response) -> None:
        """Note a new session id, and every status that refused a request."""
        request = response.request
        sent_session = request.headers.get(_SESSION_HEADER)
        status = response.status_code
        if sent_session is None and status < 300 and (new_session := response.headers.get(_SESSION_HEADER)):
            self.session_id = new_session
        if status < 400 or request.method not in ("POST", "GET"):
            return
        if request.method == "POST" and (request_id := _request_id(request)) is not None:
            self._remember(self._refused, request_id, _Refused(status, response.reason_phrase, sent_session))
        if status == 404 and sent_session is not None and sent_session == self.session_id and not self._ending:
            self._jobs_send.send_nowait(sent_session)  # renew it, once, before anything else is sent

    @staticmethod
    def _remember(table: dict[Any, Any], key: object, value: object) -> None:
        table[key] = value
        if len(table) > _MAX_REMEMBERED:
            del table[next(iter(table))]  # never answered (abandoned): forget the oldest

    # Messages: what the SDK sends, and what reaches it.

    def sending(self, item: SessionMessage) -> RequestId | None:
        """Note a message the SDK sends: requests in flight, the first ``initialize``, cancellations.

        :returns: the id of the request ``item`` cancels, if it is a cancellation.
        """
        message = item.message
        if isinstance(message, self._request_type):
            if message.method == "initialize" and self._initialize is None:
                self._initialize = item
            self._remember(self._sent, message.id, item)
        elif isinstance(message, self._notification_type) and message.method == "notifications/cancelled":
            params = cast("dict[str, object]", message.params or {})
            cancelled = params.get("requestId")
            if isinstance(cancelled, int | str) and not isinstance(cancelled, bool):
                self._sent.pop(cancelled, None)  # its caller gave up: never send it again
                return cancelled
        return None

    @property
    def holding(self) -> trio.Event | None:
        """Set while the session is being renewed: nothing else may be sent meanwhile."""
        return self._holding

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception | None:
        """``item`` as the SDK should see it; ``None`` when it is held back for a renewal, or the renewal's own."""
        if isinstance(item, Exception):
            return item
        message = item.message
        if isinstance(message, self._request_type) and self.session_id is not None:
            # A request of the server's: its answer belongs to the session that asked (R-TOOL-13).
            return self._message(message, metadata=self._metadata(headers={_SESSION_HEADER: self.session_id}))
        if not isinstance(message, self._answer_types) or message.id is None:
            return item
        request_id = message.id
        if request_id == self._renewal_id:
            self._renewal_answers.append(item)
            self._renewal_answered.set()
            return None
        refused = self._refused.pop(request_id, None)
        replayed = request_id in self._replayed
        self._replayed.discard(request_id)
        if not isinstance(message, self._error_type):
            self._sent.pop(request_id, None)
            return item
        error = message.error
        if isinstance(error.data, WaveActorsError):
            self._sent.pop(request_id, None)
            return item  # the connection's OAuth answered it (a login is needed): its words stand (R-AUTH-2)
        if refused is not None and refused.status == 404 and refused.session_id is not None:
            request = self._sent.get(request_id)
            if replayed:
                self._sent.pop(request_id, None)
                why = "the server forgot its session again, right after it was renewed"
                self._on_lost(f"{why} (HTTP 404)")
                return self._forgotten(request_id, why)
            if request is None:
                return item  # its caller gave up: nobody waits for it, and it is never sent again
            refusal = self._forgotten(request_id, "its session was forgotten and a new one could not be started")
            self._jobs_send.send_nowait(_Replay(refused.session_id, request_id, request, refusal))
            return None
        self._sent.pop(request_id, None)
        if refused is not None:
            said = None if error.message in _SDK_STAND_INS or error.message == refused.phrase else error.message
            text = http_refusal(refused.status, refused.phrase, origin=self._config.origin, said=said)
            return _error_answer(request_id, error.code, text)
        if (limit := _EVENT_LIMIT.search(error.message)) is not None and error.code == _connection_closed():
            return oversized_answer(request_id, int(limit.group(1)))
        return item

    def asked_before(self, item: SessionMessage) -> bool:
        """Whether ``item`` answers a request of the server's that a session other than the current one sent.

        Such an answer is dropped, never sent into the new session: the
        server that renewed the session is no longer waiting for it (R-TOOL-13).
        """
        metadata = item.metadata
        if not isinstance(item.message, self._answer_types) or not isinstance(metadata, self._metadata):
            return False
        asked = (metadata.headers or {}).get(_SESSION_HEADER)
        return asked is not None and asked != self.session_id

    def _forgotten(self, request_id: RequestId, why: str) -> SessionMessage:
        # The code of a closed connection: the caller is told the loss reason (ServerUnavailable).
        return _error_answer(request_id, _connection_closed(), f"the server ended the HTTP session: {why}")

    async def relay(self, sdk_read: Any, client_send: Any) -> None:
        """Carry what the SDK's transport receives to the SDK's session, through :meth:`received`."""
        import anyio

        try:
            async for item in sdk_read:
                passed = self.received(item)
                if passed is not None:
                    await client_send.send(passed)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            client_send.close()
        self._on_lost("the server closed the connection")

    async def renewer(self, sdk_write: Any, client_send: Any) -> None:
        """Renew forgotten sessions and send their refused requests again, one job at a time."""
        import anyio

        async for job in self._jobs:
            if isinstance(job, str):
                await self._renew(job, sdk_write)
                continue
            renewed = await self._renew(job.session_id, sdk_write)
            if self._sent.get(job.request_id) is not job.request:
                continue  # its caller gave up meanwhile: never sent again
            try:
                if renewed:
                    self._replayed.add(job.request_id)
                    await sdk_write.send(job.request)
                else:
                    self._sent.pop(job.request_id, None)
                    await client_send.send(job.refusal)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the connection is closing

    async def _renew(self, forgotten: str, sdk_write: Any) -> bool:
        """Start a new session in place of ``forgotten``, unless that was done already; whether there is one."""
        if forgotten in self._outcomes:
            return self._outcomes[forgotten]
        if self.session_id != forgotten:
            return True  # a newer session exists already
        self._holding = trio.Event()
        try:
            why = await self._initialize_again(sdk_write)
        finally:
            holding, self._holding = self._holding, None
            holding.set()
        self._outcomes[forgotten] = why is None
        if why is not None:
            self._on_lost(f"the server ended its HTTP session and a new one could not be started: {why}")
            return False
        self.renewals += 1
        logger.info("server %r: the server forgot its HTTP session; a new one was started", self._config.name)
        self._on_renewed()
        return True

    async def _initialize_again(self, sdk_write: Any) -> str | None:
        """Send ``initialize`` again, as the first time, and ``notifications/initialized``; ``None``, or why not."""
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
        from mcp.shared.message import ClientMessageMetadata, SessionMessage
        from mcp_types import JSONRPCNotification, JSONRPCRequest

        first = self._initialize
        if first is None:
            return "the first initialize was never seen"
        params = cast("JSONRPCRequest", first.message).params
        self._renewal_id = renewal_id = f"wave-actors-renewal-{next(self._renewal_ids)}"
        self._renewal_answers.clear()
        self._renewal_answered = trio.Event()
        try:
            with trio.move_on_after(self._renew_timeout):
                await sdk_write.send(
                    SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=renewal_id, method="initialize", params=params))
                )
                await self._renewal_answered.wait()
        finally:
            self._renewal_id = None
        answer = self._renewal_answers[0] if self._renewal_answers else None
        if answer is None:
            return f"no answer to initialize within {self._renew_timeout:g} s"
        if isinstance(answer.message, self._error_type):
            refused = self._refused.pop(renewal_id, None)
            if refused is not None:
                return http_refusal(refused.status, refused.phrase, origin=self._config.origin)
            return f"initialize was refused: {answer.message.error.message}"
        result = cast("dict[str, object]", getattr(answer.message, "result", {}))
        version = result.get("protocolVersion")
        headers = {MCP_PROTOCOL_VERSION_HEADER: version} if isinstance(version, str) else None
        initialized = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
        await sdk_write.send(SessionMessage(initialized, metadata=ClientMessageMetadata(headers=headers)))
        return None

    async def end(self, client: httpx2.AsyncClient, timeout: float) -> None:
        """Send the ``DELETE`` that ends the current session, bounded by ``timeout`` and shielded (R-KILL-8)."""
        self._ending = True
        session_id = self.session_id
        url = self._config.url
        if session_id is None or url is None:
            return
        headers = {_SESSION_HEADER: session_id}
        if self.protocol_version:
            headers[_VERSION_HEADER] = self.protocol_version
        status: int | None = None
        with trio.CancelScope(shield=True), trio.move_on_after(timeout) as bound:
            try:
                status = (await client.request("DELETE", url, headers=headers)).status_code
            except Exception as error:  # a goodbye that fails costs nothing but this line
                logger.debug(
                    "server %r: ending the HTTP session failed: %s", self._config.name, redact_text(str(error))
                )
                return
        if bound.cancelled_caught:
            logger.info("server %r: ending the HTTP session took over %g s; dropped", self._config.name, timeout)
        elif status not in (200, 202, 204, 405):  # 405: the server does not let clients end sessions
            logger.debug("server %r: the server answered HTTP %s to ending the session", self._config.name, status)


def _connection_closed() -> int:
    from mcp_types import CONNECTION_CLOSED

    return CONNECTION_CLOSED


class _SessionWriteStream:
    """The SDK transport's write stream, noting what goes out and holding it while the session is renewed.

    A request's cancellation aborts the request's POST before anything else (R-TOOL-14).
    """

    def __init__(self, inner: Any, session: _HttpSession, posts: RequestPosts) -> None:
        self._inner = inner
        self._session = session
        self._posts = posts

    async def send(self, item: SessionMessage, /) -> None:
        if (abandoned := self._session.sending(item)) is not None:
            self._posts.abandon(abandoned)
        while (holding := self._session.holding) is not None:
            await holding.wait()
        if self._session.asked_before(item):
            logger.debug("server %r: an answer to a request of an ended HTTP session was dropped", self._session.server)
            return
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _SessionWriteStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def open_http_transport(
    config: ServerConfig,
    *,
    options: TransportOptions,
    on_lost: Callable[[str], None],
    on_renewed: Callable[[], None],
    goodbye_due: Callable[[], bool],
    auth: httpx2.Auth | None = None,
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Yield ``(read_stream, write_stream)`` to ``config``'s streamable HTTP server.

    :param config: an http entry with a url.
    :param options: ``http_timeout`` (connect, write and pool waits; a
        renewal's ``initialize``), ``max_message_bytes`` (one server-sent
        event) and ``close_timeout`` (the goodbye).
    :param on_lost: called when the connection is lost: the stream ended, or
        the server forgot the session and refused a new one.
    :param on_renewed: called after the session was renewed.
    :param goodbye_due: asked when the block is left: whether to end the
        server-side session (no for a lost connection).
    :param auth: the connection's OAuth (R-AUTH-1), on every request of its HTTP client.
    """
    assert config.url is not None
    import anyio
    import httpx2
    from mcp.shared.message import SessionMessage

    from wave_actors._transport.http_posts import open_request_posts

    session = _HttpSession(config, on_lost=on_lost, on_renewed=on_renewed, renew_timeout=options.http_timeout)
    timeout = httpx2.Timeout(options.http_timeout, read=_READ_TIMEOUT)
    hooks = {"request": [session.on_request], "response": [session.on_response]}
    async with (
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout, event_hooks=hooks, auth=auth) as client,
        open_request_posts(config.url, http_client=client, max_message_bytes=options.max_message_bytes) as (
            sdk_read,
            sdk_write,
            posts,
        ),
    ):
        client_send, client_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.relay, sdk_read, client_send)
            nursery.start_soon(session.renewer, sdk_write, client_send)
            try:
                yield client_receive, _SessionWriteStream(sdk_write, session, posts)
            finally:
                client_receive.close()
                if goodbye_due():
                    await session.end(client, options.close_timeout)
                nursery.cancel_scope.cancel()
