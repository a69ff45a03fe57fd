"""Reconfiguring a live session: removed servers retire, changed ones reload, new ones wait for a turn (R-STORE-5)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from runtime_support import server_processes
from session_support import connected_session

from wave_actors import Host, ServerState, SessionOptions, UnknownTool
from wave_actors.testing import count_tasks, fault_server_entry


async def test_reconfigure_retires_removed_reloads_changed_and_adds_new(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-STORE-5
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(
            tmp_path, {"keep": fault_server_entry(), "change": fault_server_entry(), "drop": fault_server_entry()}
        )
        await session.prepare_turn()
        old_change = session.server("change")
        result = await session.reconfigure(
            {"keep": fault_server_entry(), "change": fault_server_entry(instructions="v2"), "add": fault_server_entry()}
        )
        assert (result.added, result.removed, result.changed) == (("add",), ("drop",), ("change",))
        assert [status.name for status in session.servers()] == ["add", "change", "keep"]
        changed = session.server("change")
        assert changed.state is ServerState.CONNECTED and changed.instructions == "v2"
        assert changed.generation > old_change.generation
        assert session.server("add").state is ServerState.DISCONNECTED
        with pytest.raises(UnknownTool, match="its server 'drop' was removed from the configuration"):
            await session.call_tool("mcp__drop__echo", {"text": "x"})
        assert len(server_processes()) == 2


async def test_a_retired_server_keeps_no_task(tmp_path: Path, options: SessionOptions) -> None:
    # R-STORE-5, R-HOST-3: a session reconfigured for weeks does not pile up tasks of removed servers.
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"a": fault_server_entry()})
        baseline = count_tasks()
        for round_ in range(5):
            await session.reconfigure({f"s{round_}": fault_server_entry()})
            await session.prepare_turn()
        await trio.testing.wait_all_tasks_blocked()
        # One live actor (its loop, supervisor and transport tasks); none left by the four retired ones.
        assert count_tasks() - baseline <= 12
        assert len(server_processes()) == 1


async def test_a_cancelled_reconfigure_does_not_retire_a_name_forever(tmp_path: Path) -> None:
    # R-STORE-5: a reconfigure cancelled while it retires a server leaves the name free for the next one.
    entry = {**fault_server_entry(), "tool_timeout_ms": 10_000}
    async with connected_session(tmp_path, {"f": entry}) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.call_tool, "mcp__f__sleep", {"seconds": 0.5})
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.1):
                await session.reconfigure({})  # retiring f waits for the call; cancelled meanwhile
        result = await session.reconfigure({"f": entry})
        assert result.added == ("f",)
        assert (await session.connect("f")).state is ServerState.CONNECTED
