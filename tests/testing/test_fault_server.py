"""The fault server is a real MCP server: the SDK's own client speaks to it.

Every test dials it the way the SDK does (``stdio_client`` + ``ClientSession``)
and checks one behaviour flag of :func:`wave_actors.testing.fault_server_entry`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
import psutil
import pytest
import trio
from mcp.client.session import ClientSession, IncomingMessage, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from wave_actors.testing import FAULT_SERVER_PATH, entry_command, escaped_processes, fault_server_entry, kill_processes


def _parameters(entry: dict[str, object]) -> StdioServerParameters:
    command, *args = entry_command(entry)
    # The SDK passes only a few variables by default; the whole environment
    # carries the suite's leak-detection mark into the server.
    return StdioServerParameters(command=command, args=args, env=dict(os.environ))


@asynccontextmanager
async def connected(
    entry: dict[str, object],
    *,
    message_handler: MessageHandlerFnT | None = None,
    errlog: TextIO | None = None,
) -> AsyncGenerator[tuple[ClientSession, types.InitializeResult], None]:
    """An initialized SDK client session on a fresh fault server."""
    transport = stdio_client(_parameters(entry), errlog=errlog) if errlog else stdio_client(_parameters(entry))
    async with (
        transport as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, message_handler=message_handler) as session,
    ):
        result = await session.initialize()
        yield session, result


def _text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def _call_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_entry_runs_the_server_by_path_without_package_imports() -> None:
    entry = fault_server_entry(init_delay=1.0, read_only=["echo", "sleep"], grandchild=True, exit_on_eof=False)
    assert entry["type"] == "stdio"
    args = entry_command(entry)[1:]
    assert "-m" not in args
    assert str(FAULT_SERVER_PATH) in args
    assert args[args.index("--init-delay") + 1] == "1.0"
    assert [args[i + 1] for i, arg in enumerate(args) if arg == "--read-only"] == ["echo", "sleep"]
    assert "--grandchild" in args and "--ignore-eof" in args


def test_entry_rejects_an_unknown_behaviour_by_name() -> None:
    with pytest.raises(TypeError, match="explode_slowly"):
        fault_server_entry(explode_slowly=True)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


async def test_initialize_reports_capabilities_server_info_and_instructions() -> None:
    async with connected(fault_server_entry(instructions="Use echo to say things.")) as (session, result):
        assert result.protocol_version == "2025-11-25"
        assert result.capabilities.tools is not None and result.capabilities.tools.list_changed is True
        assert result.server_info.name == "wave-actors-fault-server"
        assert session.instructions == "Use echo to say things."
        await session.send_ping()


async def test_no_instructions_unless_configured() -> None:
    async with connected(fault_server_entry()) as (session, _):
        assert session.instructions is None


async def test_lists_builtin_and_extra_tools_with_raw_schemas_and_annotations() -> None:
    async with connected(fault_server_entry(tools=3, read_only=["echo", "tool_2"])) as (session, _):
        listing = await session.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {"echo", "sleep", "fail", "crash", "pid", "notify_list_changed", "tool_1", "tool_2", "tool_3"}
    assert "$schema" in tools["echo"].input_schema
    assert tools["sleep"].input_schema["properties"]["seconds"]["exclusiveMinimum"] == 0
    read_only = {name for name, tool in tools.items() if tool.annotations and tool.annotations.read_only_hint}
    assert read_only == {"echo", "tool_2"}


async def test_echo_fail_sleep_and_extra_tools_answer() -> None:
    async with connected(fault_server_entry(tools=1)) as (session, _):
        echoed = await session.call_tool("echo", {"text": "hello"})
        assert _text(echoed) == "hello" and not echoed.is_error
        failed = await session.call_tool("fail", {"message": "broken on purpose"})
        assert failed.is_error is True and _text(failed) == "broken on purpose"
        slept = await session.call_tool("sleep", {"seconds": 0.05})
        assert _text(slept) == "slept 0.05"
        assert _text(await session.call_tool("tool_1", {"text": "x"})) == "tool_1: x"


async def test_unknown_tool_is_a_json_rpc_error() -> None:
    async with connected(fault_server_entry()) as (session, _):
        with pytest.raises(MCPError) as caught:
            await session.call_tool("no_such_tool", {})
    assert caught.value.code == -32602


async def test_slow_calls_run_concurrently() -> None:
    async with connected(fault_server_entry()) as (session, _):
        started = trio.current_time()
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(session.call_tool, "sleep", {"seconds": 0.5})
        assert trio.current_time() - started < 0.9


async def test_call_delay_is_applied_to_every_call() -> None:
    async with connected(fault_server_entry(call_delay=0.3)) as (session, _):
        started = trio.current_time()
        await session.call_tool("echo", {"text": "late"})
        assert trio.current_time() - started >= 0.3


async def test_read_timeout_cancels_the_call_which_was_received_once(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as errlog:
        async with connected(fault_server_entry(call_log=log), errlog=errlog) as (session, _):
            with pytest.raises(MCPError) as caught:
                await session.call_tool("sleep", {"seconds": 30}, read_timeout_seconds=0.3)
            assert caught.value.code == REQUEST_TIMEOUT
            # The session outlives the cancelled call.
            assert _text(await session.call_tool("echo", {"text": "still here"})) == "still here"
    calls = _call_log(log)
    assert [call["tool"] for call in calls] == ["sleep", "echo"]
    assert len({call["id"] for call in calls}) == 2
    # The SDK follows its timeout with notifications/cancelled, and the server saw it.
    assert f"request {calls[0]['id']} cancelled" in stderr_path.read_text()


async def test_cancel_log_names_each_request_the_client_cancelled_by_its_call_log_id(tmp_path: Path) -> None:
    calls, cancels = tmp_path / "calls.jsonl", tmp_path / "cancels.jsonl"
    async with connected(fault_server_entry(call_log=calls, cancel_log=cancels)) as (session, _):
        with pytest.raises(MCPError):
            await session.call_tool("sleep", {"seconds": 30}, read_timeout_seconds=0.3)
        await session.call_tool("echo", {"text": "not cancelled"})
    sleep, echo = _call_log(calls)
    assert [record["id"] for record in _call_log(cancels)] == [sleep["id"]] != [echo["id"]]
    assert {record["pid"] for record in _call_log(cancels)} == {sleep["pid"]}


async def test_list_changed_notification_reaches_the_message_handler() -> None:
    changed = trio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with connected(fault_server_entry(), message_handler=on_message) as (session, _):
        await session.call_tool("notify_list_changed", {})
        with trio.fail_after(5):
            await changed.wait()


async def test_list_changed_is_sent_periodically() -> None:
    count = 0
    thrice = trio.Event()

    async def on_message(message: IncomingMessage) -> None:
        nonlocal count
        if isinstance(message, types.ToolListChangedNotification):
            count += 1
            if count == 3:
                thrice.set()

    async with connected(fault_server_entry(list_changed_every=0.05), message_handler=on_message):
        with trio.fail_after(10):
            await thrice.wait()


async def test_init_delay_holds_back_the_initialize_answer() -> None:
    started = trio.current_time()
    async with connected(fault_server_entry(init_delay=0.5)):
        assert trio.current_time() - started >= 0.5


async def test_crash_tool_ends_the_connection() -> None:
    async with connected(fault_server_entry()) as (session, _):
        with pytest.raises(MCPError) as caught:
            await session.call_tool("crash", {"code": 7})
        assert caught.value.code == CONNECTION_CLOSED
        with pytest.raises(MCPError):
            await session.send_ping()


async def test_crash_after_calls_answers_the_earlier_calls_only(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with connected(fault_server_entry(crash_after_calls=2, call_log=log)) as (session, _):
        assert _text(await session.call_tool("echo", {"text": "one"})) == "one"
        with pytest.raises(MCPError) as caught:
            await session.call_tool("echo", {"text": "two"})
        assert caught.value.code == CONNECTION_CLOSED
    assert [call["tool"] for call in _call_log(log)] == ["echo", "echo"]


async def test_garbage_on_stdout_reaches_the_message_handler_and_the_session_survives() -> None:
    garbage: list[Exception] = []

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            garbage.append(message)

    async with connected(fault_server_entry(garbage_stdout=True), message_handler=on_message) as (session, _):
        assert _text(await session.call_tool("echo", {"text": "through the noise"})) == "through the noise"
        await session.send_ping()
    # One line at start, then one before each of the three answers; the SDK
    # turns each into a pydantic ValidationError (a ValueError) and goes on.
    assert len(garbage) >= 3
    assert all(isinstance(error, ValueError) for error in garbage)


async def test_stderr_flood_does_not_stall_the_server(tmp_path: Path) -> None:
    flood = 4 * 1024 * 1024
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as errlog:
        async with connected(fault_server_entry(stderr_flood=flood), errlog=errlog) as (session, _):
            assert _text(await session.call_tool("echo", {"text": "after the flood"})) == "after the flood"
    assert stderr_path.stat().st_size >= flood


async def test_huge_response_arrives_whole() -> None:
    size = 3 * 1024 * 1024
    async with connected(fault_server_entry(huge_response=size)) as (session, _):
        text = _text(await session.call_tool("echo", {"text": "abc"}))
    assert len(text) == size and text.startswith("abcabc")


async def test_pid_tool_and_pid_file_name_the_server_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    async with connected(fault_server_entry(pid_file=pid_file)) as (session, _):
        reported = json.loads(_text(await session.call_tool("pid", {})))
    assert reported["pid"] == int(pid_file.read_text())
    assert reported["grandchildren"] == []


async def test_an_escaping_grandchild_leaves_every_mark_behind() -> None:
    # Double-forked, in a session of its own, with an empty environment: only its label finds it.
    label = f"escaping-{uuid.uuid4().hex}"
    try:
        async with connected(fault_server_entry(escaping_grandchild=label)) as (session, _):
            reported = json.loads(_text(await session.call_tool("pid", {})))
            [daemon] = escaped_processes(label)
            assert reported["grandchildren"] == [daemon.pid]
            assert daemon.environ() == {}
            assert os.getsid(daemon.pid) not in (reported["sid"], daemon.pid)  # its parent's session, which left
            assert daemon.ppid() != reported["pid"]
            assert daemon.pid not in [child.pid for child in psutil.Process().children(recursive=True)]
        assert [process.pid for process in escaped_processes(label)] == [daemon.pid]  # the server's close leaves it
    finally:
        kill_processes(escaped_processes(label))
