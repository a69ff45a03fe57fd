"""A server's malformed answers fail what they answer at once, and cost no more than that (R-TOOL-9, R-HOST-4).

An answer whose id is readable but whose body is not a valid JSON-RPC
response fails its own request immediately, naming what was wrong, instead
of leaving it to wait out its whole timeout. A tool whose listing the MCP SDK
rejects is skipped, with a warning in the server's status, and the server
keeps its other tools.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio
from presets import FAST_SESSION
from session_support import connected_session, idle_session

from wave_actors import DialError, LoadMode, ServerState, ToolCallError
from wave_actors.testing import fault_server_entry

# Long enough that waiting it out would fail the test's own deadline.
PATIENT = attrs.evolve(FAST_SESSION, dial_timeout=60.0)


async def test_a_malformed_answer_fails_its_call_at_once_and_the_connection_stays(tmp_path: Path) -> None:
    # R-TOOL-9: {"id": N, "result": "oops"} names request N; it fails now, not after tool_timeout_ms.
    entry = {**fault_server_entry(malformed_answer=["echo"]), "tool_timeout_ms": 60_000}
    async with connected_session(tmp_path, {"f": entry}) as session:
        generation = session.server("f").generation
        with trio.fail_after(5), pytest.raises(ToolCallError, match=r"'echo'.*not a valid JSON-RPC.*result.*string"):
            await session.call_tool("mcp__f__echo", {"text": "x"})
        status = session.server("f")
        assert status.state is ServerState.CONNECTED and status.generation == generation
        failed = await session.call_tool("mcp__f__fail", {"message": "still answering"})
        assert failed.is_error


async def test_a_tool_listing_nested_past_the_parsers_limit_fails_the_dial_at_once(tmp_path: Path) -> None:
    # R-TOOL-9: 150 levels of properties are 300 JSON levels, past what the SDK parses; the dial fails now.
    async with idle_session(tmp_path, {"f": fault_server_entry(deep_schema=150)}, options=PATIENT) as session:
        with trio.fail_after(10), pytest.raises(DialError, match=r"tools/list.*nest"):
            await session.connect("f")
        assert session.server("f").state is ServerState.ERROR


async def test_a_tool_whose_schema_the_sdk_rejects_is_skipped_and_the_others_stay(tmp_path: Path) -> None:
    # R-TOOL-9: one bad tool costs that tool, with a warning naming it and why; never the server.
    entry = fault_server_entry(invalid_schema=["broken"])
    async with connected_session(tmp_path, {"f": entry}, options=PATIENT) as session:
        status = session.server("f")
        assert status.state is ServerState.CONNECTED
        listed = {tool.tool for tool in status.tools}
        assert {"echo", "sleep", "fail"} <= listed and "broken" not in listed
        assert len(status.warnings) == 1
        assert "'broken'" in status.warnings[0] and "inputSchema" in status.warnings[0]
        declared = {declaration.name for declaration in session.tool_declarations(LoadMode.FULL)}
        assert "mcp__f__echo" in declared and "mcp__f__broken" not in declared
        result = await session.call_tool("mcp__f__echo", {"text": "fine"})
        assert result.content[0].text == "fine"  # type: ignore[union-attr]


async def test_a_server_with_only_valid_tools_has_no_warnings(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        assert session.server("f").warnings == ()


async def test_a_refreshed_listing_says_again_what_it_skipped(tmp_path: Path) -> None:
    # R-TOOL-9 with R-RACE-7: the warnings belong to the latest listing, refreshes included.
    entry = fault_server_entry(invalid_schema=["broken"])
    async with connected_session(tmp_path, {"f": entry}, options=PATIENT) as session:
        await session.call_tool("mcp__f__notify_list_changed", {"add_tool": "added"})
        with trio.fail_after(10):
            snapshot = await session.wait_for(lambda s: any(tool.tool == "added" for tool in s.server("f").tools))
        status = snapshot.server("f")
        assert len(status.warnings) == 1 and "'broken'" in status.warnings[0]
        await session.disconnect("f")
        assert session.server("f").warnings == ()  # cleared with the tools
