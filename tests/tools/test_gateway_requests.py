"""Gateway tools, the pure part: declarations, reading the model's arguments, resolving within a snapshot (R-WS-4)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tools_support import SCHEMA, files_server, server, snapshot, tool

from wave_actors import ServerState, ToolInfo
from wave_actors._tools import (
    MCP_CALL,
    MCP_DESCRIBE,
    GatewayRequest,
    call_gateway,
    describe_document,
    error_result,
    gateway_declarations,
    json_result,
    parse_request,
    requested_tool,
    resolve,
)


def test_the_declarations_are_exactly_mcp_call_and_mcp_describe_with_json_schemas() -> None:
    call, describe = gateway_declarations()
    assert (call.name, describe.name) == ("mcp_call", "mcp_describe")
    assert dict(call.input_schema)["required"] == ["server", "tool"]
    assert set(dict(call.input_schema)["properties"]) == {"server", "tool", "arguments"}
    assert dict(call.input_schema)["properties"]["arguments"]["type"] == "object"
    assert set(dict(describe.input_schema)["properties"]) == {"server", "tool"}
    json.dumps([dict(call.input_schema), dict(describe.input_schema)])  # plain JSON
    assert gateway_declarations() == (call, describe)


# Reading the arguments -------------------------------------------------------------


def test_a_call_is_read_with_its_inner_arguments() -> None:
    request = parse_request(MCP_CALL, {"server": "fs", "tool": "read", "arguments": {"path": "/a"}})
    assert request == GatewayRequest(MCP_CALL, "fs", "read", {"path": "/a"})


def test_missing_inner_arguments_are_an_empty_object() -> None:
    assert parse_request(MCP_CALL, {"server": "fs", "tool": "read"}) == GatewayRequest(MCP_CALL, "fs", "read", {})
    assert parse_request(MCP_CALL, {"server": "fs", "tool": "read", "arguments": None}) == GatewayRequest(
        MCP_CALL, "fs", "read", {}
    )


def test_arguments_given_as_json_text_are_read_as_json() -> None:
    outer = json.dumps({"server": "fs", "tool": "read", "arguments": json.dumps({"path": "/a"})})
    assert parse_request(MCP_CALL, outer) == GatewayRequest(MCP_CALL, "fs", "read", {"path": "/a"})


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (None, "not null"),
        (["fs", "read"], "not an array"),
        ("{not json", "not a string that is not a JSON object"),
        (7, "not a number"),
        ({"tool": "read"}, '"server" must be a non-empty string and is missing'),
        ({"server": "", "tool": "read"}, '"server" must be a non-empty string'),
        ({"server": "fs", "tool": 3}, '"tool" must be a non-empty string'),
        ({"server": "fs", "tool": "read", "arguments": [1]}, '"arguments" must be a JSON object, not an array'),
        ({"server": "fs", "tool": "read", "arguments": "[1]"}, '"arguments" must be a JSON object'),
        ({"server": "fs", "tool": "read", "path": "/a"}, 'unexpected "path" (put the tool\'s own arguments inside'),
    ],
)
def test_unusable_call_arguments_are_refused_saying_what_is_wrong(arguments: Any, expected: str) -> None:
    # R-WS-4: bad JSON is an error and nothing is sent.
    refusal = parse_request(MCP_CALL, arguments)
    assert isinstance(refusal, str)
    assert expected in refusal and refusal.startswith("mcp_call") and refusal.endswith("Nothing was sent.")


def test_describe_takes_only_server_and_tool() -> None:
    assert parse_request(MCP_DESCRIBE, {"server": "fs", "tool": "read"}) == GatewayRequest(MCP_DESCRIBE, "fs", "read")
    refusal = parse_request(MCP_DESCRIBE, {"server": "fs", "tool": "read", "arguments": {}})
    assert isinstance(refusal, str) and 'unexpected "arguments"' in refusal


def test_the_requested_pair_is_read_even_from_otherwise_unusable_arguments() -> None:
    assert requested_tool({"server": "fs", "tool": "read", "path": "/a"}) == ("fs", "read")
    assert requested_tool('{"server": "fs", "tool": "read"}') == ("fs", "read")
    assert requested_tool({"server": "fs"}) is None
    assert requested_tool("garbage") is None
    assert requested_tool({"server": "fs", "tool": ""}) is None


DEEP_TEXTS = ["[" * 100_000, '{"a": ' * 100_000, '{"server": "fs", "tool": "read", "arguments": ' + "[" * 100_000]


@pytest.mark.parametrize("deep", DEEP_TEXTS, ids=["array", "object", "inside"])
@pytest.mark.parametrize("gateway", [MCP_CALL, MCP_DESCRIBE])
def test_json_text_nested_too_deeply_is_a_refusal_never_an_exception(gateway: str, deep: str) -> None:
    # R-WS-6: the decoder gives up with RecursionError long before the text ends; the model is told.
    refusal = parse_request(gateway, deep)
    assert isinstance(refusal, str) and refusal.endswith("Nothing was sent.")
    assert "nested too deeply" in refusal or "not a string that is not a JSON object" in refusal
    assert requested_tool(deep) is None


def test_inner_arguments_nested_too_deeply_are_refused_naming_them() -> None:
    # R-WS-6
    refusal = parse_request(MCP_CALL, {"server": "fs", "tool": "read", "arguments": "[" * 100_000})
    assert refusal == (
        'mcp_call needs {"server": ..., "tool": ..., "arguments": {...}}: "arguments" must be a JSON object, '
        "not JSON text nested too deeply to read. Nothing was sent."
    )


async def test_a_deep_call_through_the_gateway_is_an_error_result() -> None:
    # R-WS-6: call_gateway, the path Session.call_tool takes, answers; nothing reaches the call.
    sent: list[str] = []

    async def call_tool(name: str, arguments: Any) -> Any:
        sent.append(name)
        raise AssertionError("nothing may be sent")

    for deep in DEEP_TEXTS:
        for gateway in (MCP_CALL, MCP_DESCRIBE):
            result = await call_gateway(gateway, deep, snapshot(files_server()), call_tool)
            assert result.is_error and "Nothing was sent." in result.content[0].text  # type: ignore[union-attr]
    assert sent == []


HUGE = "x" * 10_485_760


def test_an_unknown_servers_name_is_quoted_back_cut_with_its_length() -> None:
    # R-WS-6: a 10 MB name does not come back as a 10 MB answer.
    message = resolve(describe(HUGE, "read_file"), snapshot(files_server()))
    assert isinstance(message, str) and len(message) < 500
    assert '"' + "x" * 120 + '"… (10485760 characters, the first 120 shown)' in message


def test_an_unknown_tools_name_is_quoted_back_cut_with_its_length() -> None:
    # R-WS-6
    message = resolve(describe("filesystem", "y" * 5000), snapshot(files_server()))
    assert isinstance(message, str) and len(message) < 500 and "5000 characters" in message


def test_unexpected_keys_are_named_a_few_at_a_time_each_cut() -> None:
    # R-WS-6: many keys, or one huge key, cost the model a few lines.
    many = {"server": "fs", "tool": "read", **{f"k{index:06}": 1 for index in range(100_000)}}
    refusal = parse_request(MCP_CALL, many)
    assert isinstance(refusal, str) and len(refusal) < 1000 and "and 99990 more" in refusal
    huge_key = parse_request(MCP_CALL, {"server": "fs", "tool": "read", HUGE: 1})
    assert isinstance(huge_key, str) and len(huge_key) < 1000 and "10485760 characters" in huge_key


async def test_a_reason_quoting_the_models_keys_is_bounded() -> None:
    # R-WS-6: the TypeError of an unsendable argument names the path to it, keys included.
    async def call_tool(name: str, arguments: Any) -> Any:
        raise TypeError(f"arguments[{HUGE!r}] of {name!r}: bytes cannot be sent; nothing was sent")

    arguments = {"server": "filesystem", "tool": "read_file", "arguments": {"path": "/"}}
    result = await call_gateway(MCP_CALL, arguments, snapshot(files_server()), call_tool)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and len(text) < 1500 and "characters, the first 1000 shown" in text


def test_names_in_answers_are_quoted_with_line_breaks_and_invisible_characters_escaped() -> None:
    # R-WS-5: the gateway's answers name servers and tools as the section does.
    status = server("s\u2028### x", [tool("s\u2028### x", "t\U000e0041")])
    message = resolve(describe("s\u2028### x", "nope\u2029- y"), snapshot(status))
    assert isinstance(message, str) and message.isprintable()
    assert '"s\\u2028### x"' in message and '"nope\\u2029- y"' in message and '"t\\udb40\\udc41"' in message


# Resolving within the session ------------------------------------------------------


def describe(server_name: str, tool_name: str) -> GatewayRequest:
    return GatewayRequest(MCP_DESCRIBE, server_name, tool_name)


def test_a_listed_tool_resolves_to_its_record() -> None:
    found = resolve(describe("filesystem", "read_file"), snapshot(files_server()))
    assert isinstance(found, ToolInfo) and found.name == "mcp__filesystem__read_file"


def test_an_unknown_server_lists_the_enabled_servers() -> None:
    session = snapshot(files_server(), server("git"), server("off", enabled=False))
    answer = resolve(describe("github", "x"), session)
    assert answer == 'There is no MCP server "github" in this session. Servers: "filesystem", "git". Nothing was sent.'


def test_a_disabled_server_is_unknown_to_the_gateway() -> None:
    session = snapshot(server("off", [tool("off", "t")], enabled=False, state=ServerState.DISABLED))
    answer = resolve(describe("off", "t"), session)
    assert isinstance(answer, str) and answer.startswith('There is no MCP server "off"') and "Servers: none" in answer


def test_names_resolve_exactly() -> None:
    answer = resolve(describe("FileSystem", "read_file"), snapshot(files_server()))
    assert isinstance(answer, str) and "no MCP server" in answer


def test_an_unknown_tool_lists_that_servers_tools() -> None:
    answer = resolve(describe("filesystem", "delete"), snapshot(files_server()))
    assert answer == (
        'Server "filesystem" has no tool "delete". Its tools: "list_directory", "move_file", "read_file", '
        '"write_file". Nothing was sent.'
    )


def test_an_empty_list_after_a_failed_sync_is_told_apart_from_no_such_tool() -> None:
    failed = server("github", state=ServerState.ERROR, error="server 'github': connect failed: timed out")
    answer = resolve(describe("github", "create_issue"), snapshot(failed))
    assert answer == (
        'The tool list of server "github" is empty because the server failed to sync: connect failed: timed out. '
        "Do not retry it in this turn. Nothing was sent."
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (server("s", state=ServerState.DISCONNECTED), 'Server "s" is not connected, so its tools are not known.'),
        (server("s", state=ServerState.CONNECTING), 'Server "s" is connecting, so its tools are not known.'),
        (server("s", state=ServerState.DISCONNECTED, manually_disconnected=True), 'Server "s" is disconnected'),
        (server("s"), 'Server "s" lists no tools.'),
    ],
)
def test_other_empty_lists_say_why_they_are_empty(status: Any, expected: str) -> None:
    answer = resolve(describe("s", "t"), snapshot(status))
    assert isinstance(answer, str) and answer.startswith(expected) and "has no tool" not in answer


def test_cached_tools_are_not_resolved() -> None:
    # R-TOOL-3: a list from the cache is not callable.
    cached = server("s", [tool("s", "t")], state=ServerState.DISCONNECTED, cached=True)
    answer = resolve(describe("s", "t"), snapshot(cached))
    assert isinstance(answer, str) and "not connected" in answer


def test_a_reconnecting_servers_kept_list_still_resolves() -> None:
    # R-RACE-4: describing works; calling fails like a direct call would.
    flaky = server("s", [tool("s", "t")], state=ServerState.RECONNECTING, error="lost")
    assert isinstance(resolve(describe("s", "t"), snapshot(flaky)), ToolInfo)


# Answers -----------------------------------------------------------------------------


def test_describe_document_has_the_sanitized_schema_read_only_ness_and_guidance() -> None:
    read = tool("filesystem", "read_file", hint=True, guidance="Paths are absolute.", description="Read a file")
    document = describe_document(read, files_server())
    assert document == {
        "server": "filesystem",
        "tool": "read_file",
        "description": "Read a file",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
        "readOnly": True,
        "guidance": "Paths are absolute.",
    }
    assert "$schema" in SCHEMA  # the record keeps what the server sent


def test_describe_document_says_when_the_server_cannot_be_called_now() -> None:
    flaky = server("s", [tool("s", "t")], state=ServerState.RECONNECTING, error="lost")
    assert describe_document(flaky.tools[0], flaky)["unavailable"] == "reconnecting after: lost"


def test_answers_are_call_tool_results() -> None:
    error = error_result("no")
    assert error.is_error and error.content[0].text == "no"  # type: ignore[union-attr]
    success = json_result({"a": 1})
    assert not success.is_error and success.structured_content == {"a": 1}
    assert json.loads(success.content[0].text) == {"a": 1}  # type: ignore[union-attr]
