"""Project-scoped shared connections: one server process per (workdir, loaded entry), many sessions (R-SCOPE-1..5).

The acceptance list of project scopes, one test each:
sessions share one process and ending one keeps it; ending all starts the
idle timer, and ``0`` never closes; a configuration edit reloads in place
under the same tool names; a removal withdraws the tools from every session;
a destroy racing a reconcile leaves nothing; a crash moves every session's
view together; the first turn waits for the shared connection within its
budget, never failing.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing
from polling import poll_until
from runtime_support import failing_after_marker_entry, server_processes

from wave_actors import (
    Host,
    ProjectOptions,
    ServerState,
    ServerUnavailable,
    Session,
    SessionOptions,
    SessionSnapshot,
    SharedUse,
    UnknownTool,
)
from wave_actors.testing import fault_server_entry, process_census

LIMIT = 10.0


@asynccontextmanager
async def project_host(
    tmp_path: Path, options: SessionOptions, project: ProjectOptions | None = None, **flags: bool
) -> AsyncIterator[Host]:
    async with Host.open(home=tmp_path / "home", options=options, project=project or ProjectOptions(), **flags) as host:
        yield host


def write_project(workdir: Path, servers: dict[str, dict[str, object]]) -> None:
    """Write ``<workdir>/.mcp.json`` whole, as an editor or a settings page would (replacing the file)."""
    temporary = workdir / ".mcp.json.tmp"
    temporary.write_text(json.dumps({"mcpServers": servers}))
    temporary.replace(workdir / ".mcp.json")


async def wait_for(session: Session, predicate: object) -> SessionSnapshot:
    with trio.fail_after(LIMIT):
        return await session.wait_for(predicate)  # type: ignore[arg-type]


def pids(marker: str) -> set[int]:
    return {process.pid for process in server_processes(marker)}


async def test_two_sessions_share_one_process_and_ending_one_keeps_it(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-1: one connection per loaded entry (both sessions load the same); a destroyed session never
    # closes another's connection.
    entry = fault_server_entry(instructions="shared-one")
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, {"one": entry}, ownership="project")
        second = await host.create_session(tmp_path, {"one": entry}, ownership="project")
        assert first.ownership == second.ownership == "project"
        await first.prepare_turn()
        await second.prepare_turn()
        assert len(pids("shared-one")) == 1
        for session in (first, second):
            status = session.server("one")
            assert status.state is ServerState.CONNECTED
            assert status.shared == SharedUse(sessions=2)
        assert first.server("one").generation == second.server("one").generation == 1
        before = pids("shared-one")
        await host.destroy_session(first.id)
        assert second.server("one").shared == SharedUse(sessions=1)
        closed = first.server("one")  # a closed session lists its servers as disconnected, as in session mode
        assert closed.state is ServerState.DISCONNECTED and closed.shared is None
        result = await second.call_tool("mcp__one__echo", {"text": "still here"})
        assert result.content[0].text == "still here"  # type: ignore[union-attr]
        assert pids("shared-one") == before


async def test_sessions_of_other_workdirs_and_session_mode_get_their_own_process(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-1: the scope is the workdir; session ownership is untouched.
    other = tmp_path / "other"
    other.mkdir()
    entry = fault_server_entry(instructions="by-workdir")
    async with project_host(tmp_path, options) as host:
        sessions = [
            await host.create_session(tmp_path, {"s": entry}, ownership="project"),
            await host.create_session(tmp_path / ".", {"s": entry}, ownership="project"),  # the same project
            await host.create_session(other, {"s": entry}, ownership="project"),
            await host.create_session(tmp_path, {"s": entry}),
        ]
        for session in sessions:
            await session.prepare_turn()
        assert len(pids("by-workdir")) == 3
        assert sessions[3].server("s").shared is None


async def test_releasing_the_last_reference_starts_the_idle_timer(
    tmp_path: Path, options: SessionOptions, mock_clock: trio.testing.MockClock
) -> None:
    # R-SCOPE-2: registered servers (no process I/O pending), so the idle timer runs on the mock clock alone
    # (no watchdog either: its exit is polled in real time).
    async with project_host(tmp_path, options, ProjectOptions(idle_timeout=300.0), watchdog=False) as host:
        entries = {"a": fault_server_entry(), "b": fault_server_entry()}
        first = await host.create_session(tmp_path, entries, ownership="project")
        second = await host.create_session(tmp_path, entries, ownership="project")
        await host.destroy_session(first.id)
        assert [status.shared for status in host.project_servers(tmp_path)] == [SharedUse(1), SharedUse(1)]
        await host.destroy_session(second.id)
        deadline = trio.current_time() + 300.0
        assert [status.shared for status in host.project_servers(tmp_path)] == [SharedUse(0, deadline)] * 2
        mock_clock.jump(299.0)
        await trio.testing.wait_all_tasks_blocked()
        assert len(host.project_servers(tmp_path)) == 2
        # A new reference cancels the timer.
        third = await host.create_session(tmp_path, {"a": fault_server_entry()}, ownership="project")
        assert third.server("a").shared == SharedUse(1)
        mock_clock.jump(2.0)
        await trio.testing.wait_all_tasks_blocked()
        assert [status.name for status in host.project_servers(tmp_path)] == ["a"]  # b's timer fired
        await host.destroy_session(third.id)
        mock_clock.jump(300.0)
        await trio.testing.wait_all_tasks_blocked()
        assert host.project_servers(tmp_path) == []


async def test_the_idle_timer_closes_the_process_and_the_next_session_dials_afresh(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-2, real time: the connection outlives its sessions by the idle timeout, then its process goes.
    entry = fault_server_entry(instructions="idle-real")
    async with project_host(tmp_path, options, ProjectOptions(idle_timeout=0.3)) as host:
        session = await host.create_session(tmp_path, {"s": entry}, ownership="project")
        await session.prepare_turn()
        (pid,) = pids("idle-real")
        await host.destroy_session(session.id)
        assert pids("idle-real") == {pid}  # ending the session did not close it
        # The timer fires, the server is forgotten, then its process is reclaimed.
        await poll_until(
            lambda: not host.project_servers(tmp_path) and not pids("idle-real"),
            limit=LIMIT,
            what="the idle server forgotten and its process gone",
        )
        again = await host.create_session(tmp_path, {"s": entry}, ownership="project")
        assert again.server("s").state is ServerState.DISCONNECTED  # forgotten: dialed lazily again
        await again.prepare_turn()
        assert again.server("s").state is ServerState.CONNECTED and pids("idle-real") != {pid}


async def test_an_idle_timeout_of_zero_never_closes(
    tmp_path: Path, options: SessionOptions, mock_clock: trio.testing.MockClock
) -> None:
    # R-SCOPE-2: 0 = never close (until the host closes).
    async with project_host(tmp_path, options, ProjectOptions(idle_timeout=0), watchdog=False) as host:
        session = await host.create_session(tmp_path, {"a": fault_server_entry()}, ownership="project")
        await host.destroy_session(session.id)
        mock_clock.jump(10 * 365 * 24 * 3600.0)
        await trio.testing.wait_all_tasks_blocked()
        assert [status.shared for status in host.project_servers(tmp_path)] == [SharedUse(0, None)]


async def test_a_config_edit_reloads_in_place_with_the_same_tool_names(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-3: reconcile is the sync point; the old process is gone, the names stay.
    write_project(tmp_path, {"edit": fault_server_entry(instructions="edit-v1")})
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, ownership="project")
        second = await host.create_session(tmp_path, ownership="project")
        await first.prepare_turn()
        names = [tool.name for tool in first.server("edit").tools]
        (old,) = pids("edit-v1")
        write_project(tmp_path, {"edit": fault_server_entry(instructions="edit-v2")})
        result = await host.reconcile(tmp_path)
        assert (result.added, result.removed, result.changed) == ((), (), ("edit",))
        assert pids("edit-v1") == set() and len(pids("edit-v2")) == 1
        assert not psutil_alive(old)
        for session in (first, second):
            status = session.server("edit")
            assert status.state is ServerState.CONNECTED and status.instructions == "edit-v2"
            assert [tool.name for tool in status.tools] == names
        await second.call_tool("mcp__edit__echo", {"text": "after the edit"})


def psutil_alive(pid: int) -> bool:
    from wave_actors.testing import is_alive

    return is_alive(pid)


async def test_a_removal_withdraws_the_tools_from_every_session_and_ends_the_process(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-3, R-STORE-5: removed entries disappear from every attached session at once.
    write_project(
        tmp_path,
        {"keep": fault_server_entry(instructions="rm-keep"), "drop": fault_server_entry(instructions="rm-drop")},
    )
    async with project_host(tmp_path, options) as host:
        sessions = [await host.create_session(tmp_path, ownership="project") for _ in range(3)]
        await sessions[0].prepare_turn()
        assert len(pids("rm-drop")) == 1
        for session in sessions:  # each shows the tools to its model
            assert session.server("drop").tool_count > 0
        write_project(tmp_path, {"keep": fault_server_entry(instructions="rm-keep")})
        result = await host.reconcile(tmp_path)
        assert result.removed == ("drop",)
        assert pids("rm-drop") == set() and len(pids("rm-keep")) == 1
        for session in sessions:
            assert [status.name for status in session.servers()] == ["keep"]
            with pytest.raises(UnknownTool, match="removed from the configuration"):
                await session.call_tool("mcp__drop__echo", {"text": "x"})
        assert [status.name for status in host.project_servers(tmp_path)] == ["keep"]


async def test_an_added_entry_becomes_available_to_every_session(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-3: added entries are registered, disconnected, and dialed by the next turn.
    write_project(tmp_path, {"a": fault_server_entry()})
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, ownership="project")
        second = await host.create_session(tmp_path, ownership="project")
        write_project(tmp_path, {"a": fault_server_entry(), "b": fault_server_entry(instructions="added-b")})
        assert (await host.reconcile(tmp_path)).added == ("b",)
        assert first.server("b").state is ServerState.DISCONNECTED
        await second.prepare_turn()
        assert first.server("b").state is ServerState.CONNECTED and len(pids("added-b")) == 1


async def test_reconcile_reconfigures_every_session_mode_session_of_the_workdir(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-3, R-STORE-5: in session mode the same call reconfigures each live session.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_project(tmp_path, {"a": fault_server_entry()})
    write_project(elsewhere, {"a": fault_server_entry()})
    async with project_host(tmp_path, options) as host:
        mine = [await host.create_session(tmp_path) for _ in range(2)]
        other = await host.create_session(elsewhere)
        write_project(tmp_path, {"b": fault_server_entry()})
        result = await host.reconcile(tmp_path)
        assert (result.added, result.removed) == (("b",), ("a",))
        assert [[status.name for status in session.servers()] for session in mine] == [["b"], ["b"]]
        assert [status.name for status in other.servers()] == ["a"]


async def test_reconcile_without_plugins_takes_their_servers_away_in_both_modes(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-3: disabling a plugin disables its servers in every live session.
    plugin = ("tools-plugin", {"plug": fault_server_entry(instructions="plugin-server")})
    async with project_host(tmp_path, options) as host:
        shared = await host.create_session(tmp_path, plugins=[plugin], ownership="project")
        own = await host.create_session(tmp_path, plugins=[plugin])
        await shared.prepare_turn()
        await own.prepare_turn()
        assert len(pids("plugin-server")) == 2
        result = await host.reconcile(tmp_path, plugins=[])
        assert result.removed == ("plug",)
        assert shared.servers() == [] and own.servers() == []
        assert pids("plugin-server") == set()
        # The plugin list is kept: a later reconcile does not bring it back.
        await host.reconcile(tmp_path)
        assert shared.servers() == [] and own.servers() == []


async def test_an_edit_on_disk_is_picked_up_by_the_next_session_that_attaches(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-3: a hand edit without reconcile: the next attach retires the stale connection.
    write_project(tmp_path, {"hand": fault_server_entry(instructions="hand-v1")})
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, ownership="project")
        await first.prepare_turn()
        write_project(tmp_path, {"hand": fault_server_entry(instructions="hand-v2")})
        second = await host.create_session(tmp_path, ownership="project")
        await second.prepare_turn()
        snapshot = await wait_for(
            first,
            lambda s: s.server("hand").state is ServerState.CONNECTED and s.server("hand").instructions == "hand-v2",
        )
        assert snapshot.server("hand").shared == SharedUse(2)
        assert pids("hand-v1") == set() and len(pids("hand-v2")) == 1


async def test_a_dead_shared_connection_is_rebuilt_on_the_next_attach(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-2: a connection in error is not left for the user to restart the host.
    marker = tmp_path / "gate-closed"
    marker.touch()
    entry = failing_after_marker_entry(tmp_path, marker)
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, {"gate": entry}, ownership="project")
        await first.prepare_turn()
        assert first.server("gate").state is ServerState.ERROR
        await first.prepare_turn()  # a later turn of the same session does not retry (R-DIAL-4)
        assert first.server("gate").state is ServerState.ERROR
        marker.unlink()
        second = await host.create_session(tmp_path, {"gate": entry}, ownership="project")
        await second.prepare_turn()
        for session in (first, second):
            await wait_for(session, lambda s: s.server("gate").state is ServerState.CONNECTED)


NO_TOOL_SERVER = "no_tool_server.py"


def no_tool_server_entry(tmp_path: Path) -> dict[str, object]:
    """A stdio MCP server that answers the handshake and lists no tool at all, until end of file."""
    script = tmp_path / NO_TOOL_SERVER
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    message = json.loads(line)\n"
        "    if 'id' not in message:\n"
        "        continue\n"
        "    if message['method'] == 'initialize':\n"
        "        result = {'protocolVersion': message['params']['protocolVersion'], 'capabilities': {'tools': {}},\n"
        "                  'serverInfo': {'name': 'empty', 'version': '1'}}\n"
        "    else:\n"
        "        result = {'tools': []}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': message['id'], 'result': result}), flush=True)\n"
    )
    return {"command": sys.executable, "args": ["-I", "-S", str(script)]}


def no_tool_servers() -> list[int]:
    return [process.pid for process in process_census() if NO_TOOL_SERVER in " ".join(process.cmdline())]


async def test_a_connection_with_no_tool_past_the_threshold_is_rebuilt_on_the_next_attach(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-2: connected with zero tools for longer than dead_after counts as dead.
    entry = no_tool_server_entry(tmp_path)
    async with project_host(tmp_path, options, ProjectOptions(dead_after=0)) as host:
        first = await host.create_session(tmp_path, {"empty": entry}, ownership="project")
        await first.prepare_turn()
        status = first.server("empty")
        assert status.state is ServerState.CONNECTED and status.tools == () and status.generation == 1
        (old,) = no_tool_servers()
        second = await host.create_session(tmp_path, {"empty": entry}, ownership="project")
        await second.prepare_turn()
        rebuilt = await wait_for(
            first, lambda s: s.server("empty").generation == 2 and s.server("empty").state is ServerState.CONNECTED
        )
        assert rebuilt.server("empty").shared == SharedUse(2)
        (new,) = no_tool_servers()
        assert new != old


async def test_a_crash_moves_every_attached_session_to_reconnecting_together(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-1, R-RACE-4: status snapshots of every attached session change together.
    entry = fault_server_entry(instructions="crash-shared")
    async with project_host(tmp_path, options) as host:
        sessions = [await host.create_session(tmp_path, {"c": entry}, ownership="project") for _ in range(3)]
        await sessions[0].prepare_turn()
        seen: list[list[ServerState]] = [[] for _ in sessions]

        async def record(index: int, session: Session) -> None:
            async for snapshot in session.watch():
                state = snapshot.server("c").state
                if not seen[index] or seen[index][-1] is not state:
                    seen[index].append(state)

        async with trio.open_nursery() as watchers:
            for index, session in enumerate(sessions):
                watchers.start_soon(record, index, session)
            with pytest.raises(ServerUnavailable):
                await sessions[1].call_tool("mcp__c__crash", {"code": 3})
            # Told in the same step: no session can see the next state before every session saw this one.
            await trio.testing.wait_all_tasks_blocked()
            states = {session.server("c").state for session in sessions}
            assert len(states) == 1
            for session in sessions:
                await wait_for(session, lambda s: s.server("c").state is ServerState.CONNECTED)
            watchers.cancel_scope.cancel()
        for states_seen in seen:
            assert ServerState.RECONNECTING in states_seen and states_seen[-1] is ServerState.CONNECTED
        assert len(pids("crash-shared")) == 1


async def test_reconnect_from_one_session_moves_every_session_to_the_new_generation_of_one_process(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-6; source 002 "面板「重连」": tear the old connection down, build the new one, every live session follows.
    log = tmp_path / "calls.jsonl"
    entry = fault_server_entry(instructions="reconnect-shared", call_log=log)
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, {"r": entry}, ownership="project")
        second = await host.create_session(tmp_path, {"r": entry}, ownership="project")
        await first.prepare_turn()
        await second.prepare_turn()
        [old_pid] = pids("reconnect-shared")
        old_generation = first.server("r").generation
        assert second.server("r").generation == old_generation

        status = await second.reconnect("r")

        assert status.state is ServerState.CONNECTED and status.generation > old_generation
        for session in (first, second):
            seen = session.server("r")
            assert (seen.state, seen.generation, seen.shared) == (
                ServerState.CONNECTED,
                status.generation,
                SharedUse(2),
            )
        [new_pid] = pids("reconnect-shared")
        assert new_pid != old_pid  # one process: the old one is gone, the new one serves every session
        await first.call_tool("mcp__r__echo", {"text": "from the first"})
        await second.call_tool("mcp__r__echo", {"text": "from the second"})
    assert [json.loads(line)["pid"] for line in log.read_text().splitlines()] == [new_pid, new_pid]


async def test_a_destroy_racing_a_reconcile_leaves_no_process(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-3, R-RACE-2: whichever finishes first, nothing is left once the host closes (the autouse check).
    for round_ in range(6):
        write_project(tmp_path, {"r": fault_server_entry(instructions=f"race-{round_}")})
        async with project_host(tmp_path, options, ProjectOptions(idle_timeout=0.05)) as host:
            shared = await host.create_session(tmp_path, ownership="project")
            own = await host.create_session(tmp_path)
            await shared.prepare_turn()
            await own.prepare_turn()
            write_project(tmp_path, {"r": fault_server_entry(instructions=f"race-{round_}-edited")})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(host.reconcile, tmp_path)
                for _ in range(round_):
                    await trio.lowlevel.checkpoint()
                nursery.start_soon(host.destroy_session, shared.id)
                nursery.start_soon(host.destroy_session, own.id)
        assert server_processes() == []


async def test_manual_disconnect_is_per_project_and_no_lazy_dial_undoes_it(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-DIAL-6 in a project: switching a server off ends its process for every session.
    entry = fault_server_entry(instructions="manual-off")
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, {"m": entry}, ownership="project")
        second = await host.create_session(tmp_path, {"m": entry}, ownership="project")
        await first.prepare_turn()
        await second.disconnect("m")
        assert pids("manual-off") == set()
        third = await host.create_session(tmp_path, {"m": entry}, ownership="project")
        for session in (first, second, third):
            await session.prepare_turn()
            status = session.server("m")
            assert status.state is ServerState.DISCONNECTED and status.manually_disconnected
        assert pids("manual-off") == set()
        await third.connect("m")
        assert first.server("m").state is ServerState.CONNECTED and len(pids("manual-off")) == 1


async def test_the_first_turn_waits_within_the_ready_budget_and_never_fails(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-4: a slow server makes the turn wait the budget, then go on; it shows connecting.
    slow = fault_server_entry(init_delay=3.0)
    async with project_host(tmp_path, options, ProjectOptions(ready_budget=0.3)) as host:
        session = await host.create_session(tmp_path, {"slow": slow, "fast": fault_server_entry()}, ownership="project")
        started = trio.current_time()
        await session.prepare_turn()
        waited = trio.current_time() - started
        assert 0.25 <= waited < 2.0
        assert session.server("slow").state is ServerState.CONNECTING
        assert session.server("fast").state is ServerState.CONNECTED
        # A second session attaching meanwhile waits for the dial in flight, not for a new one.
        other = await host.create_session(tmp_path, {"slow": slow}, ownership="project")
        with trio.fail_after(LIMIT):
            while other.server("slow").state is not ServerState.CONNECTED:
                await other.prepare_turn()
        assert other.server("slow").generation == 1


async def test_a_ready_budget_of_zero_does_not_wait(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-4: 0 = the turn starts the dials and returns.
    async with project_host(tmp_path, options, ProjectOptions(ready_budget=0)) as host:
        session = await host.create_session(tmp_path, {"s": fault_server_entry()}, ownership="project")
        with trio.testing.assert_no_checkpoints():
            await session.prepare_turn()
        await wait_for(session, lambda s: s.server("s").state is ServerState.CONNECTED)


async def test_the_host_notices_a_file_edit_and_reconciles(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-3: with watch_config, another process's edit reaches live sessions without a call.
    write_project(tmp_path, {"w": fault_server_entry(), "gone": fault_server_entry()})
    async with project_host(tmp_path, options, watch_config=True) as host:
        shared = await host.create_session(tmp_path, ownership="project")
        own = await host.create_session(tmp_path)
        write_project(tmp_path, {"w": fault_server_entry()})
        for session in (shared, own):
            await wait_for(session, lambda s: [status.name for status in s.servers] == ["w"])


async def test_bad_ownership_and_options_are_refused_clearly(tmp_path: Path, options: SessionOptions) -> None:
    async with project_host(tmp_path, options) as host:
        with pytest.raises(ValueError, match="ownership must be"):
            await host.create_session(tmp_path, ownership="team")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"pass options to Host.open"):
            await host.create_session(tmp_path, options=options, ownership="project")
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="idle_timeout"):
            ProjectOptions(idle_timeout=bad)


async def test_concurrent_first_sessions_of_a_project_share_one_scope(tmp_path: Path, options: SessionOptions) -> None:
    # R-SCOPE-5: sessions created at once, before the project's scope exists, still get one connection.
    entry = fault_server_entry(instructions="first-rush")
    async with project_host(tmp_path, options) as host:
        sessions: list[Session] = []

        async def create() -> None:
            sessions.append(await host.create_session(tmp_path, {"s": entry}, ownership="project"))

        async with trio.open_nursery() as nursery:
            for _ in range(12):
                nursery.start_soon(create)
        await sessions[0].prepare_turn()
        assert {session.server("s").shared for session in sessions} == {SharedUse(12)}
        assert len(pids("first-rush")) == 1


async def test_a_server_whose_idle_timer_runs_when_a_reconcile_starts_is_kept_for_the_session_that_loads_it(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-2, R-SCOPE-3: a reconcile that keeps (or re-adds) an unused server for a session that now loads it
    # never fails on the name, whenever its idle timer fires while a changed server re-dials.
    idle = fault_server_entry(instructions="idle-during-reconcile")
    async with project_host(tmp_path, options, ProjectOptions(idle_timeout=0.2)) as host:
        user = await host.create_session(tmp_path, {"idle": idle}, ownership="project")
        await host.destroy_session(user.id)  # "idle" is unused: its timer runs
        session = await host.create_session(tmp_path, {"slow": fault_server_entry()}, ownership="project")
        await session.prepare_turn()
        # The reload of "slow" takes a second (its new process answers initialize late); the timer fires meanwhile.
        result = await session.reconfigure({"slow": fault_server_entry(init_delay=1.0), "idle": idle})
        assert result.changed == ("slow",) and result.added == ("idle",)
        assert session.server("slow").state is ServerState.CONNECTED
        assert session.server("idle").state is ServerState.DISCONNECTED
        assert session.server("idle").shared == SharedUse(sessions=1, idle_deadline=None)
        await session.prepare_turn()
        assert session.server("idle").state is ServerState.CONNECTED


async def test_sessions_given_different_entries_for_one_name_get_a_connection_each(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-1, R-CFG-10: a connection is shared by the sessions that loaded the same entry, never replaced.
    mine, theirs = fault_server_entry(instructions="token-a"), fault_server_entry(instructions="token-b")
    async with project_host(tmp_path, options) as host:
        first = await host.create_session(tmp_path, {"x": mine}, ownership="project")
        await first.prepare_turn()
        second = await host.create_session(tmp_path, {"x": theirs}, ownership="project")
        third = await host.create_session(tmp_path, {"x": mine}, ownership="project")
        for session in (second, third):
            await session.prepare_turn()
        assert len(pids("token-a")) == 1 and len(pids("token-b")) == 1
        assert [session.server("x").instructions for session in (first, second, third)] == [
            "token-a",
            "token-b",
            "token-a",
        ]
        assert first.server("x").generation == 1  # never reloaded for another session's entry
        assert [status.shared for status in host.project_servers(tmp_path)] == [SharedUse(2), SharedUse(1)]
        # A manual disconnect ends that connection, for the sessions that use it.
        await second.disconnect("x")
        assert pids("token-b") == set() and len(pids("token-a")) == 1
        assert first.server("x").state is ServerState.CONNECTED
        # A reconcile keeps each session on its own entry.
        await host.reconcile(tmp_path)
        assert [session.server("x").instructions for session in (first, third)] == ["token-a", "token-a"]
        assert second.server("x").manually_disconnected


async def test_a_session_whose_entry_changes_moves_to_the_connection_of_its_new_entry(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-SCOPE-3: the connection of the entry others still load stays; the session follows its own entry.
    async with project_host(tmp_path, options) as host:
        write_project(tmp_path, {})
        first = await host.create_session(tmp_path, {"x": fault_server_entry(instructions="old")}, ownership="project")
        second = await host.create_session(tmp_path, {"x": fault_server_entry(instructions="old")}, ownership="project")
        await first.prepare_turn()
        (old,) = pids("old")
        await first.reconfigure(mcp_servers={"x": fault_server_entry(instructions="new")})
        await first.prepare_turn()
        assert first.server("x").instructions == "new" and second.server("x").instructions == "old"
        assert pids("old") == {old} and len(pids("new")) == 1
