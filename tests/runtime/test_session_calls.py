"""Tool calls through a session: naming, declarations, deadlines, concurrency, failures (R-TOOL-1..6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
import trio.testing
from process_support import tools_called
from session_support import connected_session, idle_session

from wave_actors import LoadMode, ServerState, ServerUnavailable, ToolCallError, ToolTimeout, UnknownTool
from wave_actors.testing import fault_server_entry


async def test_call_by_model_visible_name_and_tool_errors_are_results(tmp_path: Path) -> None:
    # R-TOOL-1, R-TOOL-6: "git hub" normalizes to "git_hub", so the names carry a hash of the raw pair.
    async with connected_session(tmp_path, {"git hub": fault_server_entry()}) as session:
        names = {declaration.name for declaration in session.tool_declarations(LoadMode.FULL)}
        assert "mcp__git_hub__echo_dcc0b026" in names
        assert session.resolve_tool("mcp__git_hub__echo_dcc0b026") == ("git hub", "echo")
        result = await session.call_tool("mcp__git_hub__echo_dcc0b026", {"text": "hi"})
        assert result.content[0].text == "hi"  # type: ignore[union-attr]
        failed = await session.call_tool("mcp__git_hub__fail_fbfab63b", {"message": "no"})
        assert failed.is_error


async def test_declared_schemas_are_sanitized_and_read_only_is_kept(tmp_path: Path) -> None:
    # R-TOOL-2, R-TOOL-7, R-TOOL-8
    entry = {**fault_server_entry(read_only=["echo"]), "tool_overrides": {"sleep": {"read_only": True}}}
    async with connected_session(tmp_path, {"f": entry}) as session:
        declarations = session.tool_declarations(LoadMode.FULL)
        text = json.dumps({d.name: dict(d.input_schema) for d in declarations})
        assert "$schema" not in text and "exclusiveMinimum" not in text
        snapshot = session.snapshot()
        tools = {snapshot.tool(d.name).tool: snapshot.tool(d.name) for d in declarations}
        assert tools["echo"].read_only and tools["sleep"].read_only
        assert not tools["fail"].read_only


async def test_unknown_tool_lists_the_servers_tools(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        with pytest.raises(UnknownTool, match=r"mcp__f__nope.*echo"):
            await session.call_tool("mcp__f__nope", {})
        with pytest.raises(TypeError, match="JSON object"):
            await session.call_tool("mcp__f__echo", ["not", "a", "mapping"])  # type: ignore[arg-type]


async def test_call_timeout_is_cancelled_and_never_replayed(tmp_path: Path) -> None:
    # R-TOOL-4
    log = tmp_path / "calls.jsonl"
    entry = {**fault_server_entry(call_log=log), "tool_timeout_ms": 300}
    async with connected_session(tmp_path, {"f": entry}) as session:
        started = trio.current_time()
        with pytest.raises(ToolTimeout, match="'f'"):
            await session.call_tool("mcp__f__sleep", {"seconds": 5})
        assert trio.current_time() - started < 2.0
        assert session.server("f").state is ServerState.CONNECTED
        await session.call_tool("mcp__f__echo", {"text": "after"})
    received = tools_called(log)
    assert received == ["sleep", "echo"]


async def test_slow_call_blocks_neither_calls_nor_status_nor_disconnect(tmp_path: Path) -> None:
    # R-TOOL-5
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        slow_failed = trio.Event()

        async def slow_call() -> None:
            with pytest.raises(ServerUnavailable):
                await session.call_tool("mcp__f__sleep", {"seconds": 20})
            slow_failed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(3):
                result = await session.call_tool("mcp__f__echo", {"text": "fast"})
                assert not result.is_error
                assert session.server("f").state is ServerState.CONNECTED
                await session.disconnect("f")
                await slow_failed.wait()


async def test_transport_lost_mid_call_fails_the_call_at_once(tmp_path: Path) -> None:
    # R-RACE-5, R-TOOL-6
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        outcome: list[BaseException] = []

        async def slow_call() -> None:
            try:
                await session.call_tool("mcp__f__sleep", {"seconds": 20})
            except ServerUnavailable as error:
                outcome.append(error)

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_call)
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(ServerUnavailable):
                    await session.call_tool("mcp__f__crash", {"code": 6})
        assert outcome and "code 6" in str(outcome[0])


async def test_a_callers_earlier_deadline_ends_the_call_and_it_is_not_replayed(tmp_path: Path) -> None:
    # R-TOOL-4: a caller's cancel ends the call sooner; the connection stays usable.
    log = tmp_path / "calls.jsonl"
    async with connected_session(tmp_path, {"f": fault_server_entry(call_log=log)}) as session:
        with trio.move_on_after(0.3) as scope:
            await session.call_tool("mcp__f__sleep", {"seconds": 20})
        assert scope.cancelled_caught
        assert session.server("f").state is ServerState.CONNECTED
        assert not (await session.call_tool("mcp__f__echo", {"text": "still"})).is_error
    received = tools_called(log)
    assert received == ["sleep", "echo"]


async def test_arguments_that_are_not_json_raise_type_error(tmp_path: Path) -> None:
    # R-TOOL-6: refused before anything is sent; the connection is untouched.
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        with pytest.raises(TypeError, match="JSON"):
            await session.call_tool("mcp__f__echo", {"text": object()})
        assert session.server("f").state is ServerState.CONNECTED


async def test_a_json_rpc_error_answer_is_a_tool_call_error_not_an_outage(tmp_path: Path) -> None:
    # R-TOOL-6: the server answered, with a protocol error: that is the call's failure; the connection stays.
    async with connected_session(tmp_path, {"f": fault_server_entry(json_rpc_error=["fail"])}) as session:
        generation = session.server("f").generation
        with pytest.raises(ToolCallError, match="'f'") as caught:
            await session.call_tool("mcp__f__fail", {})
        assert caught.value.code is not None
        assert not (await session.call_tool("mcp__f__echo", {"text": "fine"})).is_error
        status = session.server("f")
        assert status.state is ServerState.CONNECTED and status.generation == generation


async def test_a_tool_listed_twice_is_declared_once(tmp_path: Path) -> None:
    # R-TOOL-1: a model API refuses two declarations of one name; the first listing wins.
    async with connected_session(tmp_path, {"f": fault_server_entry(list_twice=["echo"])}) as session:
        assert [tool.tool for tool in session.server("f").tools].count("echo") == 1
        names = [declaration.name for declaration in session.tool_declarations(LoadMode.FULL)]
        assert names.count("mcp__f__echo") == 1 and "mcp__f__sleep" in names
        assert not (await session.call_tool("mcp__f__echo", {"text": "once"})).is_error


# Known names are state (R-TOOL-1, R-CACHE-2): where a call goes never depends on what was read before it.


@pytest.mark.parametrize("looked_before", [False, True], ids=["nothing read", "a snapshot read"])
async def test_a_listed_tool_whose_server_was_disconnected_is_unavailable(tmp_path: Path, looked_before: bool) -> None:
    log = tmp_path / "calls.jsonl"
    async with idle_session(tmp_path, {"a": fault_server_entry(call_log=log)}) as session:
        await session.prepare_turn()
        if looked_before:
            session.tool_declarations(LoadMode.FULL)
        await session.disconnect("a")
        with pytest.raises(ServerUnavailable, match="'a' was disconnected; connect it explicitly"):
            await session.call_tool("mcp__a__echo", {"text": "down"})
        await session.connect("a")
        assert (await session.call_tool("mcp__a__echo", {"text": "up"})).content[0].text == "up"  # type: ignore[union-attr]
    assert tools_called(log) == ["echo"]


async def test_a_tool_only_the_cache_showed_is_never_sent_to_the_live_server(tmp_path: Path) -> None:
    # The cache lists "wipe" (an earlier process of the same entry added it); the live process does not,
    # and once it is up the session's cache holds its live listing.
    log = tmp_path / "calls.jsonl"
    servers = {"live": fault_server_entry(call_log=log)}
    async with connected_session(tmp_path, servers) as first:
        await first.call_tool("mcp__live__notify_list_changed", {"add_tool": "wipe"})
        with trio.fail_after(10):
            await first.wait_for(lambda snapshot: "wipe" in [tool.tool for tool in snapshot.server("live").tools])
    async with idle_session(tmp_path, servers) as second:
        cached = second.server("live")
        assert cached.tools_cached and "mcp__live__wipe" in [tool.name for tool in cached.tools]
        await second.prepare_turn()
        assert second.server("live").state is ServerState.CONNECTED
        with pytest.raises(
            UnknownTool, match=r"'live' is connected; its tools: echo, .*notify_list_changed; nothing was sent"
        ):
            await second.call_tool("mcp__live__wipe", {})
    assert tools_called(log) == ["notify_list_changed"]


async def test_a_tool_the_server_withdrew_is_refused_and_never_sent(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with connected_session(tmp_path, {"f": fault_server_entry(tools=2, call_log=log)}) as session:
        assert session.resolve_tool("mcp__f__tool_1") == ("f", "tool_1")
        await session.call_tool("mcp__f__notify_list_changed", {"remove_tool": "tool_1"})
        with trio.fail_after(10):
            await session.wait_for(lambda snapshot: "tool_1" not in [tool.tool for tool in snapshot.server("f").tools])
        with pytest.raises(UnknownTool, match="'f' listed 'tool_1' earlier and has withdrawn it"):
            await session.call_tool("mcp__f__tool_1", {"text": "x"})
        await session.disconnect("f")
        with pytest.raises(UnknownTool, match="withdrawn"):
            await session.call_tool("mcp__f__tool_1", {"text": "x"})
        with pytest.raises(ServerUnavailable, match="'f' was disconnected"):
            await session.call_tool("mcp__f__tool_2", {"text": "x"})
    assert tools_called(log) == ["notify_list_changed"]
