"""``wave-actors serve --stdio`` through the MCP SDK's client: what a client sees, and where its calls go (R-SERVE-1).

Each test runs the command as a desktop client would (``stdio_client`` starts
it, ``ClientSession`` speaks to it), on a project whose ``.mcp.json`` names
fault servers; leaving the client closes serve's stdin, and the suite's leak
check proves every process went with it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import mcp_types as types
import pytest
import trio
from mcp.client.session import IncomingMessage
from polling import poll_until
from serve_support import INITIALIZE, serve_client, serve_command, text, write_project

from wave_actors.testing import fault_server_entry

pytestmark = pytest.mark.timeout(60)


def calls(log: Path) -> list[str]:
    return [json.loads(line)["tool"] for line in log.read_text().splitlines()] if log.exists() else []


async def test_full_mode_lists_every_tool_by_its_stable_name_with_sanitized_schemas_and_annotations(
    tmp_path: Path,
) -> None:
    # R-TOOL-1, R-TOOL-2, R-TOOL-7 through serve: the names, schemas and hints are the library's.
    workdir = write_project(
        tmp_path / "project", {"alpha": fault_server_entry(read_only=["echo"]), "beta": fault_server_entry(tools=1)}
    )
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, result):
        assert result.server_info.name == "wave-actors"
        assert result.capabilities.tools is not None and result.capabilities.tools.list_changed is True
        assert result.instructions is None  # no server has instructions of its own
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert {"mcp__alpha__echo", "mcp__alpha__sleep", "mcp__beta__echo", "mcp__beta__tool_1"} <= set(tools)
    assert "$schema" not in tools["mcp__alpha__echo"].input_schema
    assert "exclusiveMinimum" not in tools["mcp__alpha__sleep"].input_schema["properties"]["seconds"]
    assert tools["mcp__alpha__echo"].annotations is not None
    assert tools["mcp__alpha__echo"].annotations.read_only_hint is True
    assert tools["mcp__beta__echo"].annotations is None  # not annotated by its server: nothing is made up


async def test_each_servers_own_instructions_are_announced_naming_it_in_both_modes(tmp_path: Path) -> None:
    # R-INS-2: the library's announcement, once, in the initialize answer; the working set comes first.
    workdir = write_project(
        tmp_path / "project",
        {"alpha": fault_server_entry(instructions="Use echo to say things."), "beta": fault_server_entry()},
    )
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (_, result):
        assert result.instructions is not None
        assert "Use echo to say things." in result.instructions and "alpha" in result.instructions
    async with serve_client(workdir, tmp_path / "home") as (_, result):
        assert result.instructions is not None
        said = result.instructions
        assert said.index("beta") < said.index("Use echo to say things.")  # the working set, then the announcement


async def test_each_call_reaches_the_server_its_name_says(tmp_path: Path) -> None:
    alpha_log, beta_log = tmp_path / "alpha.jsonl", tmp_path / "beta.jsonl"
    workdir = write_project(
        tmp_path / "project",
        {"alpha": fault_server_entry(call_log=alpha_log), "beta": fault_server_entry(tools=1, call_log=beta_log)},
    )
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, _):
        assert text(await session.call_tool("mcp__beta__tool_1", {"text": "hi"})) == "tool_1: hi"
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "a"})) == "a"
        assert text(await session.call_tool("mcp__beta__echo", {"text": "b"})) == "b"
    assert calls(alpha_log) == ["echo"]
    assert calls(beta_log) == ["tool_1", "echo"]


async def test_working_set_mode_offers_the_gateway_and_tells_the_working_set_as_instructions(tmp_path: Path) -> None:
    # R-WS-3, R-WS-4: the section and the two tools are the session's.
    log = tmp_path / "calls.jsonl"
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry(read_only=["echo"], call_log=log)})
    async with serve_client(workdir, tmp_path / "home") as (session, result):
        assert result.instructions is not None
        assert "alpha" in result.instructions and "echo [read-only]" in result.instructions
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"mcp_call", "mcp_describe"}
        assert tools["mcp_describe"].annotations is not None and tools["mcp_describe"].annotations.read_only_hint
        called = await session.call_tool("mcp_call", {"server": "alpha", "tool": "echo", "arguments": {"text": "via"}})
        assert text(called) == "via"
        described = await session.call_tool("mcp_describe", {"server": "alpha", "tool": "echo"})
        assert not described.is_error and "text" in text(described)
        # A model-visible name still resolves in working-set mode, as the library's call_tool does.
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "direct"})) == "direct"
    assert calls(log) == ["echo", "echo"]


async def test_errors_are_tool_results_that_say_why_and_the_connection_goes_on(tmp_path: Path) -> None:
    # R-WS-6: an unknown tool, a server that cannot start, a mistake in the gateway: each is a result.
    workdir = write_project(
        tmp_path / "project", {"alpha": fault_server_entry(), "broken": fault_server_entry(exit_on_start=7)}
    )
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, _):
        unknown = await session.call_tool("mcp__alpha__no_such_tool", {})
        assert unknown.is_error and "mcp__alpha__no_such_tool" in text(unknown)
        gateway = await session.call_tool("mcp_call", {"server": "alpha", "tool": "echo"})
        assert gateway.is_error and "full" in text(gateway)
        failed = await session.call_tool("mcp__alpha__fail", {"message": "on purpose"})
        assert failed.is_error and text(failed) == "on purpose"
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "still here"})) == "still here"
    async with serve_client(workdir, tmp_path / "home") as (session, result):
        assert (
            result.instructions is not None and "broken" in result.instructions and "unavailable" in result.instructions
        )
        down = await session.call_tool("mcp_call", {"server": "broken", "tool": "echo", "arguments": {}})
        assert down.is_error
        nowhere = await session.call_tool("mcp_call", {"server": "gamma", "tool": "echo", "arguments": {}})
        assert nowhere.is_error and "alpha" in text(nowhere)


async def test_a_changed_tool_list_is_announced_with_list_changed(tmp_path: Path) -> None:
    # R-RACE-7 through serve: the server's change reaches the library, and the client is told.
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry()})
    changed = trio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with serve_client(workdir, tmp_path / "home", "--mode", "full", message_handler=on_message) as (session, _):
        assert "mcp__alpha__added" not in {tool.name for tool in (await session.list_tools()).tools}
        await session.call_tool("mcp__alpha__notify_list_changed", {"add_tool": "added"})
        with trio.fail_after(10):
            await changed.wait()
        assert "mcp__alpha__added" in {tool.name for tool in (await session.list_tools()).tools}


async def test_progress_of_a_call_reaches_the_client_that_asked_for_it(tmp_path: Path) -> None:
    # R-TOOL-10 through serve: the client's progress token, the server's notifications.
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry(progress_tool=True)})
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, _):
        result = await session.call_tool("mcp__alpha__progress", {"steps": 3}, progress_callback=on_progress)
        assert not result.is_error
    assert [progress for progress, _ in seen] == [1, 2, 3]


async def test_a_cancelled_call_is_cancelled_at_the_server(tmp_path: Path) -> None:
    # R-TOOL-4 through serve: the client's notifications/cancelled reaches the server, which sends nothing.
    stderr_log = tmp_path / "alpha.stderr"
    entry = fault_server_entry(call_log=tmp_path / "calls.jsonl")
    # The server's stderr to a file of the test's: the library keeps its own copy bounded and private.
    wrapped = {
        "command": "/bin/sh",
        "args": ["-c", f'exec "$0" "$@" 2>>{stderr_log}', entry["command"], *entry["args"]],  # type: ignore[misc]
    }
    workdir = write_project(tmp_path / "project", {"alpha": wrapped})
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, _):
        with pytest.raises(Exception, match=r"(?i)timed out|timeout"):
            await session.call_tool("mcp__alpha__sleep", {"seconds": 30}, read_timeout_seconds=0.5)
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "after"})) == "after"

        def cancelled() -> bool:
            return "cancelled" in stderr_log.read_text()

        await poll_until(cancelled, limit=10, what="the server logged the cancellation")


async def test_a_line_that_is_not_json_rpc_costs_only_itself(tmp_path: Path) -> None:
    # A client is untrusted: garbage on the wire is answered (or dropped) and the next request is served.
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry()})
    command = serve_command(workdir, tmp_path / "home", "--stdio", "--mode", "full")
    lines = [b"this is not json\n", b'{"jsonrpc": "2.0", "id": [1, 2]}\n', json.dumps(INITIALIZE).encode() + b"\n"]
    process = await trio.lowlevel.open_process(
        command, stdin=-1, stdout=-1, env=dict(os.environ), stderr=sys.stderr.fileno()
    )
    assert process.stdin is not None and process.stdout is not None
    async with process.stdin, process.stdout:
        for line in lines:
            await process.stdin.send_all(line)
        received = b""
        with trio.fail_after(30):
            while b'"id":1' not in received.replace(b" ", b""):
                chunk = await process.stdout.receive_some(65536)
                assert chunk, "serve closed its stdout"
                received += chunk
        answers = [json.loads(line) for line in received.splitlines() if line.strip()]
        assert answers[-1]["result"]["serverInfo"]["name"] == "wave-actors"
    with trio.fail_after(10):
        assert await process.wait() == 0  # stdin closed: serve ends by itself


async def test_a_failure_tells_the_client_what_failed_and_never_the_servers_stderr(tmp_path: Path) -> None:
    # The stderr tail the library keeps in a failure's detail lines is the host's to read, not a client's (R-WS-5).
    marker = tmp_path / "started-once"
    entry = fault_server_entry()
    # Starts once; every restart after the crash fails, saying something on stderr that must not travel.
    once = f'if [ -e {marker} ]; then echo private-stderr-line >&2; exit 3; fi; touch {marker}; exec "$0" "$@"'
    wrapped = {"command": "/bin/sh", "args": ["-c", once, entry["command"], *entry["args"]]}  # type: ignore[misc]
    workdir = write_project(tmp_path / "project", {"alpha": wrapped})
    async with serve_client(workdir, tmp_path / "home", "--mode", "full") as (session, _):
        crashed = await session.call_tool("mcp__alpha__crash", {"code": 9})
        assert crashed.is_error
        answers: list[types.CallToolResult] = []

        async def gave_up() -> bool:  # each answer is a fresh look at the server, which gives up after its budget
            answers.append(await session.call_tool("mcp__alpha__echo", {"text": "x"}))
            return "gave up" in text(answers[-1])

        await poll_until(gave_up, limit=60, interval=0.5, what="the server given up on, as the client is told")
    assert all(answer.is_error for answer in answers)
    said = text(answers[-1])
    assert "alpha" in said and "exited with code 3" in said
    assert "\n" not in said and "private-stderr-line" not in said
