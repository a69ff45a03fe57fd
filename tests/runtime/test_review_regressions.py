"""Regressions from a review of the runtime: each test failed before its fix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp_types
import pytest
import trio
import trio.testing
from runtime_support import server_processes

from wave_actors import Host, ServerState, SessionOptions, ToolCallError, WaveActorsError, open_session
from wave_actors._actor.transport_task import list_server_tools as _list_tools
from wave_actors._config import ServerConfig, Source
from wave_actors.testing import fault_server_entry
from wave_actors._transport import open_connection


async def test_aclose_inside_open_session_ends_the_block_instead_of_deadlocking(
    tmp_path: Path, options: SessionOptions
) -> None:
    reached_after_aclose = False
    with trio.fail_after(10):
        async with open_session(
            workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=options
        ) as session:
            await session.prepare_turn()
            await session.aclose()
            await trio.sleep(0)  # the block is cancelled at its next checkpoint
            reached_after_aclose = True
    assert not reached_after_aclose
    assert server_processes() == []


async def test_two_concurrent_creates_with_one_id_give_one_session(tmp_path: Path, options: SessionOptions) -> None:
    outcomes: list[str] = []

    async def create(host: Host) -> None:
        try:
            await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="chat")
            outcomes.append("created")
        except WaveActorsError as error:
            outcomes.append(f"refused: {error}")

    with trio.fail_after(10):
        async with Host.open(home=tmp_path / "home", options=options) as host:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(create, host)
                nursery.start_soon(create, host)
            assert sorted(outcomes)[0] == "created" and "exists already" in sorted(outcomes)[1]
            assert [session.id for session in host.sessions()] == ["chat"]


async def test_a_json_rpc_error_answer_is_a_tool_call_error_not_an_outage(tmp_path: Path) -> None:
    entry = fault_server_entry()
    config = ServerConfig(
        name="f", source=Source.CONSTRUCTOR, origin="constructor", type="stdio",
        command=str(entry["command"]), args=tuple(entry["args"]),  # type: ignore[arg-type]
    )
    async with open_connection(config) as connection:
        with pytest.raises(ToolCallError, match="'f'") as caught:
            await connection.call_tool("no_such_tool", {}, timeout=5)
        assert caught.value.code is not None
        assert not (await connection.call_tool("echo", {"text": "fine"}, timeout=5)).is_error


async def test_arguments_that_are_not_json_raise_type_error(tmp_path: Path, options: SessionOptions) -> None:
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=options
    ) as session:
        await session.prepare_turn()
        with pytest.raises(TypeError, match="JSON"):
            await session.call_tool("mcp__f__echo", {"text": object()})
        assert session.server("f").state is ServerState.CONNECTED


async def test_a_tool_listed_twice_is_declared_once() -> None:
    def tool(name: str) -> mcp_types.Tool:
        return mcp_types.Tool(name=name, input_schema={"type": "object"})

    async def list_tools() -> list[mcp_types.Tool]:
        return [tool("dup"), tool("other"), tool("dup")]

    connection: Any = SimpleNamespace(
        server="s",
        initialize_result=SimpleNamespace(capabilities=SimpleNamespace(tools=object())),
        list_tools=list_tools,
    )
    assert [t.name for t in await _list_tools(connection)] == ["dup", "other"]


async def test_a_cancelled_reconfigure_does_not_retire_a_name_forever(tmp_path: Path, options: SessionOptions) -> None:
    entry = {**fault_server_entry(), "tool_timeout_ms": 10_000}
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": entry}, options=options
    ) as session:
        await session.prepare_turn()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.call_tool, "mcp__f__sleep", {"seconds": 0.5})
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.1):
                await session.reconfigure({})  # retiring f waits for the call; cancelled meanwhile
        result = await session.reconfigure({"f": entry})
        assert result.added == ("f",)
        assert (await session.connect("f")).state is ServerState.CONNECTED
