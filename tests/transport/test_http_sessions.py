"""A streamable HTTP session the server forgot: renewed once, and only the requests its 404 refused sent again, once.

Unit tests of ``wave_actors._transport.http._HttpSession`` with the SDK's
messages and httpx2 requests and responses, and a fake in place of the SDK's
transport: it records what would be POSTed and answers a renewal's
``initialize`` the way a server does (``test_transport_remote_sessions.py``
does the same against the reference server).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio
import trio.testing
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from wave_actors import ServerConfig, Source
from wave_actors._transport.http import (
    _HttpSession,  # pyright: ignore[reportPrivateUsage]
    _SessionWriteStream,  # pyright: ignore[reportPrivateUsage]
)

URL = "http://127.0.0.1:9/mcp"
CONFIG = ServerConfig(name="remote", source=Source.PROJECT, origin="/p/.mcp.json", type="http", url=URL)


def post(message: JSONRPCMessage, session_id: str | None) -> httpx2.Request:
    headers = {"mcp-session-id": session_id} if session_id else {}
    return httpx2.Request("POST", URL, json=message.model_dump(by_alias=True, mode="json"), headers=headers)


def request(request_id: int | str, method: str = "tools/call") -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params={"name": "echo"}))


def refusal(request_id: int | str, message: str = "Session not found") -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=-32600, message=message)))


def result(request_id: int | str) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"ok": True}))


class FakeServer:
    """Stands in for the SDK's transport and the server behind it.

    Everything the session sends is recorded; a renewal's ``initialize`` is
    answered with a new session id, as the server does.
    """

    def __init__(self, session: _HttpSession) -> None:
        self.session = session
        self.posted: list[JSONRPCMessage] = []
        self.sessions = iter(["s2", "s3", "s4"])

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        self.posted.append(message)
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            sent = post(message, self.session.session_id)
            await self.session.on_request(sent)  # strips the forgotten id
            assert "mcp-session-id" not in sent.headers
            answered = httpx2.Response(200, headers={"mcp-session-id": next(self.sessions)}, request=sent)
            await self.session.on_response(answered)
            assert self.session.received(result(message.id)) is None  # the renewal's own answer

    def methods(self) -> list[str]:
        return [getattr(message, "method", f"result {getattr(message, 'id', '?')}") for message in self.posted]

    def ids(self) -> list[Any]:
        return [getattr(message, "id", None) for message in self.posted]


async def refuse_with_404(session: _HttpSession, item: SessionMessage, session_id: str) -> None:
    """The server answers the request's POST with 404 for ``session_id``."""
    await session.on_response(httpx2.Response(404, request=post(item.message, session_id)))


async def opened(nursery: trio.Nursery) -> tuple[_HttpSession, FakeServer, list[str], list[SessionMessage]]:
    lost: list[str] = []
    delivered: list[SessionMessage] = []
    session = _HttpSession(CONFIG, on_lost=lost.append, on_renewed=lambda: None, renew_timeout=5)
    server = FakeServer(session)

    class ToClient:
        async def send(self, item: SessionMessage) -> None:
            delivered.append(item)

    # The handshake: the first initialize, answered with session s1.
    first = request(0, "initialize")
    session.sending(first)
    await session.on_response(httpx2.Response(200, headers={"mcp-session-id": "s1"}, request=post(first.message, None)))
    assert session.received(result(0)) is not None and session.session_id == "s1"
    nursery.start_soon(session.renewer, server, ToClient())
    return session, server, lost, delivered


async def test_requests_a_forgotten_session_refused_are_sent_again_once_after_one_renewal() -> None:
    async with trio.open_nursery() as nursery:
        session, server, lost, _ = await opened(nursery)
        calls = [request(index) for index in (1, 2, 3)]
        for call in calls:
            session.sending(call)
        for call in calls:
            await refuse_with_404(session, call, "s1")
        for index in (1, 2, 3):
            assert session.received(refusal(index)) is None  # held until the session is renewed
        with trio.fail_after(5):
            while len(server.posted) < 5:
                await trio.sleep(0)
        # One renewal for the three, then each refused request once, on the new session.
        assert server.methods() == ["initialize", "notifications/initialized", "tools/call", "tools/call", "tools/call"]
        assert sorted(server.ids()[2:]) == [1, 2, 3] and session.session_id == "s2" and session.renewals == 1
        assert lost == []
        # Their answers now reach the caller as usual.
        assert session.received(result(1)) is not None
        nursery.cancel_scope.cancel()


async def test_a_request_refused_again_after_the_renewal_is_not_sent_a_third_time() -> None:
    async with trio.open_nursery() as nursery:
        session, server, lost, _ = await opened(nursery)
        call = request(7)
        session.sending(call)
        await refuse_with_404(session, call, "s1")
        assert session.received(refusal(7)) is None
        with trio.fail_after(5):
            while len(server.posted) < 3:
                await trio.sleep(0)
        await refuse_with_404(session, call, "s2")
        answer = session.received(refusal(7))
        assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCError)
        assert answer.message.error.code == CONNECTION_CLOSED  # the caller is told the connection is gone
        assert lost and "forgot its session again" in lost[0]
        nursery.cancel_scope.cancel()
    assert server.ids().count(7) == 1  # sent again once, never twice


async def test_a_request_whose_caller_gave_up_meanwhile_is_never_sent_again() -> None:
    async with trio.open_nursery() as nursery:
        session, server, _, _ = await opened(nursery)
        call = request(4)
        session.sending(call)
        await refuse_with_404(session, call, "s1")
        cancelled = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 4})
        session.sending(SessionMessage(cancelled))
        session.received(refusal(4))  # nobody waits for it any more
        with trio.fail_after(5):
            while len(server.posted) < 2:
                await trio.sleep(0)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert server.methods() == ["initialize", "notifications/initialized"]


async def test_other_refusals_are_never_sent_again_and_name_their_status() -> None:
    async with trio.open_nursery() as nursery:
        session, server, _, _ = await opened(nursery)
        call = request(5)
        session.sending(call)
        await session.on_response(httpx2.Response(401, request=post(call.message, "s1")))
        answer = session.received(refusal(5, "Server returned an error response"))
        assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCError)
        text = answer.message.error.message
        assert text.startswith("the server answered HTTP 401 Unauthorized: it refused the credentials or headers")
        assert "/p/.mcp.json" in text
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert server.posted == []


async def test_the_goodbye_names_the_current_session_and_version() -> None:
    seen: list[httpx2.Request] = []

    def answer(sent: httpx2.Request) -> httpx2.Response:
        seen.append(sent)
        return httpx2.Response(200)

    session = _HttpSession(CONFIG, on_lost=lambda _: None, on_renewed=lambda: None, renew_timeout=5)
    first = request(0, "initialize")
    session.sending(first)
    await session.on_response(httpx2.Response(200, headers={"mcp-session-id": "s9"}, request=post(first.message, None)))
    versioned = httpx2.Request("POST", URL, json={}, headers={"mcp-protocol-version": "2025-11-25"})
    await session.on_request(versioned)
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as client:
        await session.end(client, timeout=5)
    [goodbye] = seen
    assert goodbye.method == "DELETE" and goodbye.headers["mcp-session-id"] == "s9"
    assert goodbye.headers["mcp-protocol-version"] == "2025-11-25"
    assert json.loads(versioned.content) == {}


class Posts:
    """Stands in for the transport's POSTs: records which requests were abandoned."""

    def __init__(self) -> None:
        self.abandoned: list[Any] = []

    def abandon(self, request_id: Any) -> None:
        self.abandoned.append(request_id)


async def test_an_answer_to_a_request_of_a_forgotten_session_is_never_sent_into_the_new_one() -> None:
    # R-TOOL-13: an answer belongs to the session whose server asked.
    async with trio.open_nursery() as nursery:
        session, server, _, _ = await opened(nursery)
        stream = _SessionWriteStream(server, session, Posts())  # type: ignore[arg-type]
        asked = session.received(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id="srv-1", method="ping")))
        assert isinstance(asked, SessionMessage)
        answer = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id="srv-1", result={}), metadata=asked.metadata)
        await stream.send(answer)  # same session: sent, naming it
        assert server.posted[-1] == answer.message
        asked_again = session.received(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id="srv-2", method="ping")))
        assert isinstance(asked_again, SessionMessage)
        call = request(8)
        session.sending(call)
        await refuse_with_404(session, call, "s1")
        assert session.received(refusal(8)) is None
        await trio.testing.wait_all_tasks_blocked()
        assert session.session_id == "s2"
        late = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id="srv-2", result={}), metadata=asked_again.metadata)
        await stream.send(late)
        assert late.message not in server.posted  # dropped: the new session never asked
        nursery.cancel_scope.cancel()


async def test_a_cancelled_request_has_its_post_abandoned_before_the_notification_is_sent() -> None:
    # R-TOOL-14: the connection goes back to the pool at once, however busy the writer is.
    async with trio.open_nursery() as nursery:
        session, server, _, _ = await opened(nursery)
        posts = Posts()
        stream = _SessionWriteStream(server, session, posts)  # type: ignore[arg-type]
        cancelled = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3})
        await stream.send(SessionMessage(cancelled))
        assert posts.abandoned == [3] and server.posted == [cancelled]
        nursery.cancel_scope.cancel()
