"""Each streamable HTTP request owns its POST: closed when the request ends in any way, answered only by its own answer.

Against the hostile server of ``hostile_http.py``, which holds the streams of
the calls it never answers open and answers one call with another's id;
then unit tests of ``wave_actors._transport.http_posts.RequestPosts``.

R-TOOL-12, R-TOOL-14.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs
import pytest
import trio
from hostile_http import hostile_http_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse
from polling import poll_until
from presets import FAST_TRANSPORT
from session_support import connected_session

from wave_actors import ServerConfig, ServerState, Source, ToolCallError, ToolTimeout
from wave_actors._transport import TransportOptions, open_connection
from wave_actors._transport.answers import Refusal
from wave_actors._transport.http_posts import RequestPosts

QUIET = attrs.evolve(FAST_TRANSPORT, ping_interval=None)  # no heartbeat: the hostile server only counts calls
ABANDONED = 120  # more than the HTTP client's pool of 100 connections


def remote(url: str) -> ServerConfig:
    return ServerConfig(name="hostile", source=Source.CONSTRUCTOR, origin="constructor", type="http", url=url)


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined,no-any-return]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]


# A request that ends closes its POST: abandoned calls never fill the connection pool.


async def test_120_calls_that_timed_out_leave_no_stream_open_and_the_next_call_goes_through(tmp_path: Path) -> None:
    with hostile_http_server() as server:
        entry = {"type": "http", "url": server.url, "tool_timeout_ms": 1000}
        async with connected_session(tmp_path, {"hostile": entry}) as session:
            generation = session.server("hostile").generation

            async def abandoned() -> None:
                with pytest.raises(ToolTimeout):
                    await session.call_tool("mcp__hostile__hang", {})

            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    for _ in range(ABANDONED):
                        nursery.start_soon(abandoned)
                await poll_until(lambda: server.open_streams == 0, limit=10, what="every abandoned stream closed")
            with trio.fail_after(5):
                result = await session.call_tool("mcp__hostile__echo", {"text": "after"})
            assert text_of(result) == "echo: after"
            status = session.server("hostile")
            assert status.state is ServerState.CONNECTED and status.generation == generation
    assert len(server.calls) == ABANDONED + 1  # each call sent once, never replayed (R-TOOL-4)


async def test_a_call_its_caller_cancelled_closes_its_stream() -> None:
    with hostile_http_server() as server:
        async with open_connection(remote(server.url), options=QUIET) as connection:
            with trio.fail_after(10):
                with trio.move_on_after(0.5):
                    await connection.call_tool("hang", {}, timeout=60)
                await poll_until(lambda: server.open_streams == 0, limit=5, what="the cancelled call's stream closed")
                assert text_of(await connection.call_tool("echo", {"text": "after"}, timeout=5)) == "echo: after"
            assert not connection.lost
    assert "notifications/cancelled" in server.notifications  # the server is still told (R-TOOL-4)


# The answer on a POST belongs to that POST's request.


@pytest.mark.parametrize("answers", ["json", "sse"])
async def test_an_answer_carrying_another_calls_id_fails_its_own_call_and_completes_no_other(
    answers: Literal["json", "sse"],
) -> None:
    with hostile_http_server(answers) as server:
        async with open_connection(remote(server.url), options=QUIET) as connection:
            first: list[str] = []

            async def waiting_call() -> None:
                try:
                    await connection.call_tool("hang", {}, timeout=3)
                except ToolTimeout:
                    first.append("timed out")
                else:
                    first.append("completed by another call's answer")

            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(waiting_call)
                    await poll_until(lambda: len(server.calls) == 1, limit=5, what="the first call received")
                    started = trio.current_time()
                    with pytest.raises(ToolCallError, match="the answer to request") as raised:
                        await connection.call_tool("misaddressed", {}, timeout=10)
                    assert trio.current_time() - started < 2  # at once, not at its deadline
                assert first == ["timed out"]
                assert "protocol error" in str(raised.value)
                assert text_of(await connection.call_tool("echo", {"text": "after"}, timeout=5)) == "echo: after"
            assert not connection.lost


# R-TOOL-12: a JSON answer is bounded like an event.


async def test_a_json_answer_over_the_limit_fails_its_call_alone_naming_the_limit() -> None:
    options = attrs.evolve(QUIET, max_message_bytes=20_000)
    with hostile_http_server("json") as server:
        async with open_connection(remote(server.url), options=options) as connection:
            with trio.fail_after(20):
                with pytest.raises(ToolCallError, match=r"limit of 20000 bytes .*max_message_bytes"):
                    await connection.call_tool("echo", {"text": "x" * 30_000}, timeout=10)
                assert text_of(await connection.call_tool("echo", {"text": "small"}, timeout=5)) == "echo: small"
            assert not connection.lost


# What may reach the session from a POST's response.


def owned(message: JSONRPCResponse | JSONRPCError, request_id: int | str) -> JSONRPCResponse | JSONRPCError:
    transport = RequestPosts("http://127.0.0.1:9/mcp", max_message_bytes=TransportOptions().max_message_bytes)
    passed = transport._owned(message, request_id)  # pyright: ignore[reportPrivateUsage]
    assert isinstance(passed, SessionMessage)
    assert isinstance(passed.message, JSONRPCResponse | JSONRPCError)
    return passed.message


def test_an_answer_with_the_posts_id_passes_as_it_is_and_a_string_id_correlates() -> None:
    assert owned(JSONRPCResponse(jsonrpc="2.0", id=7, result={"a": 1}), 7) == JSONRPCResponse(
        jsonrpc="2.0", id=7, result={"a": 1}
    )
    assert owned(JSONRPCResponse(jsonrpc="2.0", id="7", result={}), 7).id == "7"


def test_an_answer_with_another_id_becomes_an_error_for_the_posts_own_request() -> None:
    answer = owned(JSONRPCResponse(jsonrpc="2.0", id=6, result={}), 7)
    assert isinstance(answer, JSONRPCError) and answer.id == 7
    assert answer.error.data is Refusal.MISADDRESSED and "the answer to request 6" in answer.error.message


def test_an_error_without_an_id_is_the_posts_own_request() -> None:
    error = ErrorData(code=-32700, message="Parse error")
    answer = owned(JSONRPCError(jsonrpc="2.0", id=None, error=error), 7)
    assert isinstance(answer, JSONRPCError) and answer.id == 7 and answer.error.message == "Parse error"
