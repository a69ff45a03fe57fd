"""Answers nothing may wait for in vain, and tool listings that survive one bad tool (R-TOOL-9, R-TOOL-12).

Unit tests of ``wave_actors._transport.answers`` on SDK message objects, then
the same over a real stdio connection to the fault server.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from presets import FAST_TRANSPORT
from transport_support import config_for

from wave_actors import ToolCallError
from wave_actors._transport import open_connection
from wave_actors._transport.answers import (
    Refusal,
    ToolListingCheck,
    answered_id,
    malformed_answer,
    unsendable_request,
)
from wave_actors._transport.failures import Failure, classify, request_error
from wave_actors.testing import fault_server_entry


def parse_error(line: bytes) -> ValueError:
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as error:
        return error
    raise AssertionError(f"{line!r} is valid JSON-RPC")


def answer_to(line: bytes) -> SessionMessage | None:
    return malformed_answer("s", line, parse_error(line))


def error_of(message: SessionMessage | None) -> JSONRPCError:
    assert message is not None
    assert isinstance(message.message, JSONRPCError)
    return message.message


def nested_result(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(
    ("line", "what"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":"oops"}', 'its "result" is a string, not an object'),
        (b'{"jsonrpc":"2.0","id":7,"result":[1]}', 'its "result" is a list, not an object'),
        (b'{"jsonrpc":"2.0","id":7,"error":"bad"}', 'its "error" is not an object'),
        (b'{"jsonrpc":"2.0","id":7}', 'neither a "result" nor an "error"'),
        (b'{"jsonrpc":"1.0","id":7,"result":{}}', 'its "jsonrpc" is a string, not "2.0"'),
        (b'{"jsonrpc":"2.0","id":"7","result":null}', 'its "result" is null'),
    ],
)
def test_a_malformed_answer_with_a_readable_id_becomes_an_error_answer_naming_the_fault(line: bytes, what: str) -> None:
    error = error_of(answer_to(line))
    assert error.id in (7, "7")
    assert what in error.error.message
    assert error.error.data is Refusal.MALFORMED


def test_an_answer_nested_past_the_parsers_limit_names_the_nesting() -> None:
    line = b'{"jsonrpc":"2.0","id":3,"result":{"a":' + nested_result(300).encode() + b"}}"
    assert "nests JSON deeper" in error_of(answer_to(line)).error.message


def test_an_answer_too_deep_even_for_pythons_parser_is_still_answered_by_its_leading_id() -> None:
    line = b'{"jsonrpc": "2.0", "id": 12, "result": {"a": ' + nested_result(50_000).encode() + b"}}"
    error = error_of(answer_to(line))
    assert error.id == 12 and "nests JSON deeper" in error.error.message


def test_an_answer_too_deep_for_pythons_parser_is_answered_by_its_trailing_id_too() -> None:
    # The TypeScript SDK writes the result first and the id last.
    line = b'{"result": {"a": ' + nested_result(50_000).encode() + b'}, "jsonrpc": "2.0", "id": 13}'
    error = error_of(answer_to(line))
    assert error.id == 13 and "nests JSON deeper" in error.error.message


# R-TOOL-12: the id of an answer too large to keep is read at either end, and only at the top level.


@pytest.mark.parametrize(
    ("head", "tail", "request_id"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"text":"', b'xyz"}}', 7),
        (b'{"result":{"text":"', b'xyz"}},"jsonrpc":"2.0","id":9}', 9),
        (b'{ "error" : {"code": 1, "message": "', b'"} , "id" : "a-9" , "jsonrpc" : "2.0" }\r\n', "a-9"),
        (b'{"jsonrpc":"2.0","result":{"text":"', b'xyz"}},"id":-4}', -4),
        # An id nested in the result, or quoted inside a string, is not the answer's.
        (b'{"result":{"content":[', b',{"id":3}]}}', None),
        (b'{"result":{"a":1', b',"id":3}}', None),
        (b'{"result":"', b'\\"id\\":3}"}', None),
        # Not an answer: a request or a notification of the server's, or noise.
        (b'{"method":"sampling/createMessage","params":{', b'},"jsonrpc":"2.0","id":5}', None),
        (b'{"jsonrpc":"2.0","method":"notifications/message","params":{', b"}}", None),
        (b"\xff\xfe random", b',"id":5}', None),
    ],
)
def test_the_id_of_an_answer_too_large_to_keep_is_read_at_either_end(
    head: bytes, tail: bytes, request_id: int | str | None
) -> None:
    assert answered_id(head, tail) == request_id


@pytest.mark.parametrize(
    "line",
    [
        b"not json at all",
        b"\xff\xfe random bytes",
        b"[1, 2, 3]",
        b'{"jsonrpc":"2.0","id":true,"result":"oops"}',
        b'{"jsonrpc":"2.0","id":1.5,"result":"oops"}',
        b'{"jsonrpc":"2.0","id":4,"method":5}',  # a malformed request of the server's: nothing of ours waits
        b'{"jsonrpc":"2.0","result":"oops"}',
        b"[" * 50_000 + b"]" * 50_000,
    ],
)
def test_a_line_without_a_readable_answer_id_is_noise(line: bytes) -> None:
    assert answer_to(line) is None


def test_the_transports_own_answers_are_told_from_the_servers_errors() -> None:
    ours = error_of(answer_to(b'{"jsonrpc":"2.0","id":1,"result":"oops"}')).error
    assert classify(MCPError(ours.code, ours.message, ours.data)) is Failure.MALFORMED
    # A server sending the same code and text is still the server answering with an error.
    assert classify(MCPError(ours.code, ours.message, "malformed")) is Failure.ANSWERED
    mapped = request_error(
        MCPError(ours.code, ours.message, ours.data), server="s", request="tools/call 'x'", timeout=1, loss_reason=None
    )
    assert isinstance(mapped, ToolCallError) and "not a valid JSON-RPC response" in str(mapped)


def test_a_request_that_cannot_be_written_is_answered_with_a_type_error_for_its_caller() -> None:
    request = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=5, method="tools/call", params={"x": "\ud800"}))
    answer = error_of(unsendable_request(request, ValueError("surrogates not allowed")))
    assert answer.id == 5 and answer.error.data is Refusal.UNSENDABLE
    mapped = request_error(
        MCPError(answer.error.code, answer.error.message, answer.error.data),
        server="s",
        request="tools/call 'x'",
        timeout=1,
        loss_reason=None,
    )
    assert isinstance(mapped, TypeError) and "nothing was sent" in str(mapped)
    notification = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled"))
    assert unsendable_request(notification, ValueError("x")) is None


def listing_request(request_id: int | str) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list"))


def listing_answer(request_id: int | str, tools: list[Any]) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"tools": tools}))


GOOD = {"name": "good", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ({"name": "arr", "inputSchema": {"type": "array"}}, "inputSchema"),
        ({"name": "str", "inputSchema": "oops"}, "inputSchema"),
        ({"name": "none"}, "inputSchema"),
        ({"name": 5, "inputSchema": {"type": "object"}}, "name"),
        ("not a tool", "the tool"),
    ],
)
def test_a_listing_loses_only_the_tools_the_sdk_rejects(bad: Any, why: str) -> None:
    check = ToolListingCheck("s")
    check.protocol_version = "2025-11-25"
    check.sent(listing_request(3))
    answer = check.received(listing_answer("3", [GOOD, bad, GOOD]))  # the SDK correlates "3" with 3
    assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCResponse)
    assert answer.message.result["tools"] == [GOOD, GOOD]
    assert len(check.skipped) == 1 and why in check.skipped[0]


def test_only_answers_to_tool_listings_are_checked() -> None:
    check = ToolListingCheck("s")
    bad = {"name": "arr", "inputSchema": {"type": "array"}}
    check.sent(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call")))
    check.sent(listing_request(2))
    unrelated = check.received(listing_answer(1, [bad]))
    assert isinstance(unrelated, SessionMessage) and isinstance(unrelated.message, JSONRPCResponse)
    assert unrelated.message.result["tools"] == [bad]
    check.received(SessionMessage(JSONRPCError(jsonrpc="2.0", id=2, error=ErrorData(code=1, message="no"))))
    again = check.received(listing_answer(2, [bad]))  # answered once already: a late duplicate is not ours
    assert isinstance(again, SessionMessage) and isinstance(again.message, JSONRPCResponse)
    assert again.message.result["tools"] == [bad] and check.skipped == []


def test_unanswered_listings_are_forgotten_beyond_a_bound() -> None:
    check = ToolListingCheck("s")
    for request_id in range(1_000):
        check.sent(listing_request(request_id))
    answer = check.received(listing_answer(0, [{"name": "arr", "inputSchema": {"type": "array"}}]))
    assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCResponse)
    assert len(answer.message.result["tools"]) == 1  # id 0 was forgotten long ago


async def test_over_stdio_a_malformed_answer_fails_its_call_at_once() -> None:
    config = config_for(fault_server_entry(malformed_answer=["echo"]))
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            with pytest.raises(ToolCallError, match=r"'echo'.*\"result\" is a string"):
                await connection.call_tool("echo", {"text": "x"}, timeout=60)
            assert (await connection.call_tool("fail", {}, timeout=5)).is_error


async def test_over_stdio_an_invalid_tool_is_skipped_and_named() -> None:
    config = config_for(fault_server_entry(invalid_schema=["broken", "worse"]))
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            listing = await connection.list_tools()
            names = {tool.name for tool in listing.tools}
            assert "echo" in names and not names & {"broken", "worse"}
            assert [line.split()[1] for line in listing.skipped] == ["'broken'", "'worse'"]
            again = await connection.list_tools()
            assert len(again.skipped) == 2  # each listing says what it skipped, not what the last one did


async def test_over_stdio_a_listing_nested_too_deep_fails_at_once_naming_the_nesting() -> None:
    config = config_for(fault_server_entry(deep_schema=150))
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            with pytest.raises(ToolCallError, match=r"tools/list.*nests JSON deeper"):
                await connection.list_tools()


async def test_over_stdio_a_request_the_sdk_cannot_serialize_fails_alone() -> None:
    # The net under the caller-side check: a surrogate handed straight to the connection fails that call only.
    config = config_for(fault_server_entry())
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            with pytest.raises(TypeError, match="nothing was sent"):
                await connection.call_tool("echo", {"text": "\ud800"}, timeout=5)
            result = await connection.call_tool("echo", {"text": "fine"}, timeout=5)
            assert result.content[0].text == "fine"  # type: ignore[union-attr]
