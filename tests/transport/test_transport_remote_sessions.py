"""The http and sse transports against the SDK's reference server: sessions ended and renewed, big answers,
named HTTP statuses, the client's identity, and progress (R-KILL-8, R-TOOL-9, R-TOOL-10)."""

from __future__ import annotations

import functools
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Literal, cast

import attrs
import pytest
import trio
from polling import poll_until
from presets import FAST_TRANSPORT
from remote_support import forget_sessions, refusing_server, server_sessions

from wave_actors import DialError, ServerConfig, Source, ToolCallError
from wave_actors._transport import TransportOptions, open_connection
from wave_actors._transport.connection import Connection
from wave_actors.testing import serve_reference_server

# Importing mcp.server and uvicorn takes over a second; leave room on a busy machine.
pytestmark = pytest.mark.timeout(90)

QUIET = attrs.evolve(FAST_TRANSPORT, ping_interval=None)  # no heartbeat pings in the servers' logs
MIB = 1024 * 1024


def remote(kind: str, url: str, origin: str = "constructor") -> ServerConfig:
    return ServerConfig(name=f"ref-{kind}", source=Source.CONSTRUCTOR, origin=origin, type=kind, url=url)


def served(kind: str) -> Literal["streamable-http", "sse"]:
    return "sse" if kind == "sse" else "streamable-http"


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined,no-any-return]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]


# R-KILL-8: the server-side session ends when the connection closes, unless the connection was lost.


async def test_closing_an_http_connection_ends_its_server_session() -> None:
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=QUIET) as connection:
                await connection.call_tool("echo", {"text": "hi"}, timeout=10)
                [opened] = (await server_sessions(url))["opened"]
            assert (await server_sessions(url))["ended_by_client"] == [opened]


async def test_a_connection_closed_by_cancellation_still_ends_its_server_session() -> None:
    # Disconnect, destroy, reconfigure and host exit all close a transport by cancelling it.
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            with trio.CancelScope() as scope:
                async with open_connection(remote("http", url), options=QUIET):
                    scope.cancel()
                    await trio.sleep_forever()
            sessions = await server_sessions(url)
            assert sessions["ended_by_client"] == sessions["opened"] and len(sessions["opened"]) == 1


async def test_a_lost_connection_sends_no_goodbye() -> None:
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=QUIET) as connection:
                connection.mark_lost("the test says so")
            sessions = await server_sessions(url)
            assert len(sessions["opened"]) == 1 and sessions["ended_by_client"] == []


async def test_the_goodbye_to_a_server_that_does_not_answer_is_bounded() -> None:
    # R-KILL-8: bounded in time; a frozen server costs close_timeout, not the HTTP client's 30 s.
    options = TransportOptions(ping_interval=None, close_timeout=0.5)
    async with serve_reference_server() as url:
        pid = 0
        try:
            with trio.fail_after(30):
                async with open_connection(remote("http", url), options=options) as connection:
                    pid = int(text_of(await connection.call_tool("pid", {}, timeout=10)))
                    os.kill(pid, signal.SIGSTOP)
                    started = trio.current_time()
            assert trio.current_time() - started < 4 * options.close_timeout + 1
        finally:
            if pid:
                os.kill(pid, signal.SIGCONT)


# R-TOOL-9: answers of several MiB arrive; an answer over the limit fails alone, naming the limit.


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_result_of_several_mib_arrives(kind: str) -> None:
    async with serve_reference_server(served(kind)) as url:
        with trio.fail_after(60):
            async with open_connection(remote(kind, url), options=QUIET) as connection:
                result = await connection.call_tool("big", {"size": 5 * MIB}, timeout=30)
                assert len(text_of(result)) == 5 * MIB


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_an_answer_over_the_limit_fails_alone_naming_the_limit(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    options = TransportOptions(ping_interval=None, max_message_bytes=MIB)
    async with serve_reference_server(served(kind)) as url:
        with trio.fail_after(60):
            async with open_connection(remote(kind, url), options=options) as connection:
                limit = r"limit of 1048576 bytes .*max_message_bytes"
                with caplog.at_level(logging.DEBUG), pytest.raises(ToolCallError, match=limit) as raised:
                    await connection.call_tool("big", {"size": 2 * MIB}, timeout=30)
                assert "connection closed" not in str(raised.value)
                # The connection is fine: not lost, not redialed, and the next call works.
                assert not connection.lost
                assert text_of(await connection.call_tool("echo", {"text": "after"}, timeout=10)) == "after"
    # Nothing a host without logging configured would see on stderr (warnings and above, tracebacks).
    loud = [record for record in caplog.records if record.levelno >= logging.WARNING or record.exc_info]
    assert loud == []


# Refused requests name the HTTP status; 401 and 403 name the credentials and the entry's file.


@pytest.mark.parametrize("kind", ["http", "sse"])
@pytest.mark.parametrize(
    ("status", "phrase"), [(401, "Unauthorized"), (403, "Forbidden"), (500, "Internal Server Error")]
)
async def test_a_refused_dial_names_the_http_status(kind: str, status: int, phrase: str) -> None:
    origin = "/home/me/project/.mcp.json"
    with refusing_server(status, b'{"error": "no"}', "application/json") as base:
        config = remote(kind, base + ("/sse" if kind == "sse" else "/mcp"), origin=origin)
        with pytest.raises(DialError) as raised, trio.fail_after(20):
            async with open_connection(config, options=QUIET):
                pass
    message = str(raised.value)
    assert f"server 'ref-{kind}': connect failed: the server answered HTTP {status} {phrase}" in message
    if status in (401, 403):
        assert f"refused the credentials or headers sent; check the entry's headers in {origin}" in message
    else:
        assert "credentials" not in message
    assert "Server returned an error response" not in message


# Identity: servers are told who the client is.


@pytest.mark.parametrize(
    ("client_info", "expected"), [(None, "wave-actors 0.1.0"), (("my-host", "2.5.1"), "my-host 2.5.1")]
)
async def test_servers_are_told_the_client_name_and_version(client_info: tuple[str, str] | None, expected: str) -> None:
    options = TransportOptions(ping_interval=None, client_info=client_info)
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=options) as connection:
                assert text_of(await connection.call_tool("client_info", {}, timeout=10)) == expected


def test_client_info_must_be_a_pair_of_names() -> None:
    with pytest.raises(TypeError, match="client_info"):
        TransportOptions(client_info=("only-a-name",))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="max_message_bytes"):
        TransportOptions(max_message_bytes=0)


# A session the server forgot (404) is renewed once, and only the requests it refused are sent again.


async def test_a_forgotten_session_is_renewed_once_for_all_the_requests_it_refused() -> None:
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=QUIET) as connection:
                assert text_of(await connection.call_tool("echo", {"text": "first"}, timeout=10)) == "first"
                assert await forget_sessions(url) == 1
                answers: dict[int, str] = {}

                async def call(index: int) -> None:
                    answers[index] = text_of(await connection.call_tool("echo", {"text": f"n{index}"}, timeout=10))

                async with trio.open_nursery() as nursery:
                    for index in range(8):
                        nursery.start_soon(call, index)
                assert answers == {index: f"n{index}" for index in range(8)}
                assert not connection.lost
                sessions = await server_sessions(url)
                assert len(sessions["opened"]) == 2  # the first, and one renewal shared by all eight
            # The goodbye ends the renewed session, the one that is current.
            assert (await server_sessions(url))["ended_by_client"] == [sessions["opened"][1]]


async def test_a_renewed_session_lists_its_tools_again() -> None:
    listed = trio.Event()

    def on_notification(notification: object) -> None:
        if getattr(notification, "method", None) == "notifications/tools/list_changed":
            listed.set()

    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(
                remote("http", url), options=QUIET, on_notification=on_notification
            ) as connection:
                await forget_sessions(url)
                await connection.call_tool("echo", {"text": "again"}, timeout=10)
                await listed.wait()


async def test_notifications_and_progress_still_arrive_after_a_renewal() -> None:
    # R-RACE-7, R-TOOL-10: after a renewal the server's own stream and the calls' streams are the new session's.
    marks: list[object] = []

    def on_notification(notification: object) -> None:
        if getattr(notification, "method", None) == "notifications/tools/list_changed":
            meta: object = getattr(getattr(notification, "params", None), "meta", None)
            marks.append(cast("dict[str, object]", meta).get("mark") if isinstance(meta, dict) else None)

    def told(connection: Connection, mark: str) -> Callable[[], Awaitable[bool]]:
        async def ask() -> bool:
            # The server drops what it sends while the client's stream for it is not open yet: ask until it is.
            assert text_of(await connection.call_tool("notify_list_changed", {"mark": mark}, timeout=10)) == "sent"
            return mark in marks

        return ask

    async with serve_reference_server() as url:
        with trio.fail_after(60):
            async with open_connection(
                remote("http", url), options=QUIET, on_notification=on_notification
            ) as connection:
                await poll_until(told(connection, "before"), limit=20, what="a list_changed", interval=0.1)
                assert await forget_sessions(url) == 1
                assert text_of(await connection.call_tool("echo", {"text": "renew"}, timeout=10)) == "renew"
                assert None in marks  # the renewal's own: the tools are listed again
                await poll_until(
                    told(connection, "after"), limit=20, what="a list_changed from the new session", interval=0.1
                )
                first, second = await progress_of_two_calls(connection)
                assert first == [(float(step), 3.0, f"step {step} of 3") for step in range(1, 4)]
                assert second == [(float(step), 5.0, f"step {step} of 5") for step in range(1, 6)]
                assert not connection.lost
                assert len((await server_sessions(url))["opened"]) == 2  # one renewal


# R-TOOL-13: requests of the server's are answered, on the session they came on.


async def test_the_servers_pings_are_answered_over_http() -> None:
    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=QUIET) as connection:
                # One after the other: never more than one waiting, however many in all.
                result = await connection.call_tool("ping_client", {"times": 100}, timeout=20)
                assert text_of(result) == "100 pongs" and not connection.lost


# R-TOOL-10: progress reaches the call that asked for it, in order, and no other.


async def progress_of_two_calls(connection: Connection) -> tuple[list[tuple[float, float | None, str | None]], ...]:
    first: list[tuple[float, float | None, str | None]] = []
    second: list[tuple[float, float | None, str | None]] = []

    async def run(steps: int, into: list[tuple[float, float | None, str | None]]) -> None:
        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            into.append((progress, total, message))

        result = await connection.call_tool("progress", {"steps": steps}, timeout=10, on_progress=on_progress)
        assert text_of(result) == f"{steps} steps"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, 3, first)
        nursery.start_soon(run, 5, second)
        # A call that did not ask sees no difference.
        nursery.start_soon(functools.partial(connection.call_tool, "progress", {"steps": 2}, timeout=10))
    return first, second


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_progress_is_delivered_to_its_own_call_in_order(kind: str) -> None:
    async with serve_reference_server(served(kind)) as url:
        with trio.fail_after(30):
            async with open_connection(remote(kind, url), options=QUIET) as connection:
                first, second = await progress_of_two_calls(connection)
    assert first == [(float(step), 3.0, f"step {step} of 3") for step in range(1, 4)]
    assert second == [(float(step), 5.0, f"step {step} of 5") for step in range(1, 6)]


async def test_a_progress_callback_that_raises_costs_nothing_but_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def broken(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("host bug")

    async with serve_reference_server() as url:
        with trio.fail_after(30):
            async with open_connection(remote("http", url), options=QUIET) as connection:
                result = await connection.call_tool("progress", {"steps": 2}, timeout=10, on_progress=broken)
                assert text_of(result) == "2 steps" and not connection.lost
    assert any("progress callback raised" in record.getMessage() for record in caplog.records)
