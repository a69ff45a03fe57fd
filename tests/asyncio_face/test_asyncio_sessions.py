"""The core scenarios through the asyncio face, under the standard loop and uvloop (R-AIO-1).

The rules are the trio session's (R-DIAL, R-RACE, R-TOOL, R-KILL), reached
from an asyncio program; what these tests add is what crosses between the two
threads: results, exceptions, callbacks and snapshots.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from asyncio_support import connected_session, idle_session, no_server_left, until
from presets import FAST_SESSION
from process_support import requests_cancelled, server_processes, tools_called

from wave_actors import (
    LoadMode,
    LoginState,
    ServerState,
    ServerUnavailable,
    ToolTimeout,
    UnknownServer,
    UnknownTool,
    WaveActorsError,
)
from wave_actors.asyncio import Host, Session
from wave_actors.testing import fault_server_entry

Run = Callable[[Coroutine[Any, Any, Any]], Any]


def _text(result: Any) -> str:
    return result.content[0].text


def test_lazy_dial_spawns_nothing_until_prepare_turn_then_dials_every_server(tmp_path: Path, run: Run) -> None:
    # R-DIAL-1, R-DIAL-2
    async def scenario() -> None:
        servers = {"a": fault_server_entry(init_delay=0.3), "b": fault_server_entry(init_delay=0.3)}
        async with idle_session(tmp_path, servers) as session:
            assert [status.state for status in session.servers()] == [ServerState.DISCONNECTED] * 2
            assert server_processes() == []
            started = time.monotonic()
            await session.prepare_turn()
            assert time.monotonic() - started < 0.6 + 2.0  # concurrent: about the slowest dial, not the sum
            assert [status.state for status in session.servers()] == [ServerState.CONNECTED] * 2
            assert len(server_processes()) == 2
            await session.prepare_turn()  # nothing due: connected servers are reused (R-DIAL-3)
            assert len(server_processes()) == 2
        assert no_server_left()

    run(scenario())


def test_calls_return_results_and_a_tool_error_is_a_result(tmp_path: Path, run: Run) -> None:
    # R-TOOL-6
    async def scenario() -> None:
        async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
            assert _text(await session.call_tool("mcp__f__echo", {"text": "hello"})) == "hello"
            failed = await session.call_tool("mcp__f__fail", {"message": "no"})
            assert failed.is_error
            results = await asyncio.gather(*(session.call_tool("mcp__f__echo", {"text": str(n)}) for n in range(20)))
            assert [_text(result) for result in results] == [str(n) for n in range(20)]

    run(scenario())


def test_a_trio_side_failure_reaches_the_caller_as_the_same_exception_with_its_traceback(
    tmp_path: Path, run: Run
) -> None:
    # R-AIO-2
    async def scenario() -> None:
        async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
            with pytest.raises(UnknownTool, match=r"mcp__f__nope.*echo") as caught:
                await session.call_tool("mcp__f__nope", {})
            frames = [frame.filename for frame in traceback.extract_tb(caught.value.__traceback__)]
            assert any(name.endswith("wave_actors/_session.py") for name in frames), frames  # raised in trio
            assert frames[0].endswith("test_asyncio_sessions.py")  # and reached this task
            with pytest.raises(UnknownServer):
                await session.connect("nope")
            with pytest.raises(TypeError, match="JSON object"):
                await session.call_tool("mcp__f__echo", ["not", "a", "mapping"])  # type: ignore[arg-type]

    run(scenario())


def test_progress_reaches_the_loop_thread_in_order_in_the_callers_context_before_the_result(
    tmp_path: Path, run: Run
) -> None:
    # R-TOOL-10
    request = contextvars.ContextVar("request", default="none")

    async def scenario() -> None:
        seen: list[tuple[float, str, bool]] = []
        loop_thread = threading.current_thread()

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, request.get(), threading.current_thread() is loop_thread))

        async with connected_session(tmp_path, {"f": fault_server_entry(progress_tool=True)}) as session:
            request.set("conversation-7")
            result = await session.call_tool("mcp__f__progress", {"steps": 5}, on_progress=on_progress)
            assert [step for step, _, _ in seen] == [1.0, 2.0, 3.0, 4.0, 5.0]  # all of them, before the result
            assert {(context, in_loop) for _, context, in_loop in seen} == {("conversation-7", True)}
            assert _text(result) == "5 steps"

    run(scenario())


def test_getters_answer_at_once_from_the_snapshot_each_command_left(tmp_path: Path, run: Run) -> None:
    # R-HOST-1, R-HOST-2, R-WS-2..4
    async def scenario() -> None:
        async with idle_session(tmp_path, {"f": fault_server_entry(read_only=["echo"])}) as session:
            before = session.snapshot().version
            status = await session.connect("f")
            assert status.state is ServerState.CONNECTED
            assert session.server("f") == status  # read after the command: at least what it left
            assert session.snapshot().version > before
            names = [declaration.name for declaration in session.tool_declarations(LoadMode.FULL)]
            assert "mcp__f__echo" in names
            gateway = [declaration.name for declaration in session.tool_declarations(LoadMode.WORKING_SET)]
            assert gateway == ["mcp_call", "mcp_describe"]
            assert "echo [read-only]" in session.working_set().render()
            assert session.resolve_tool("mcp__f__echo") == ("f", "echo")
            assert next(tool.name for tool in session.search_tools("echo")) == "mcp__f__echo"
            with pytest.raises(UnknownServer, match="configured: f"):
                session.server("nope")
            described = await session.call_tool("mcp_describe", {"server": "f", "tool": "echo"})
            assert not described.is_error

    run(scenario())


def test_watch_yields_the_current_snapshot_then_newer_ones_and_ends_once_the_session_closes(
    tmp_path: Path, run: Run
) -> None:
    # R-HOST-2
    async def scenario() -> None:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            session = await host.create_session(tmp_path, {"f": fault_server_entry()})
            seen: list[tuple[int, ServerState]] = []

            async def follow() -> None:
                async for snapshot in session.watch():
                    seen.append((snapshot.version, snapshot.server("f").state))

            follower = asyncio.create_task(follow())
            await session.prepare_turn()
            await session.wait_for(lambda snapshot: snapshot.server("f").state is ServerState.CONNECTED)
            await host.destroy_session(session.id)
            await asyncio.wait_for(follower, 5)  # it ended by itself
            versions = [version for version, _ in seen]
            assert versions == sorted(set(versions))
            assert seen[0][1] is ServerState.DISCONNECTED
            assert ServerState.CONNECTED in {state for _, state in seen}
            assert seen[-1][1] is ServerState.DISCONNECTED  # closed: nothing connected any more
            assert session.closed

    run(scenario())


def test_wait_for_runs_the_predicate_in_the_loop_and_fails_when_the_session_closes_first(
    tmp_path: Path, run: Run
) -> None:
    async def scenario() -> None:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            session = await host.create_session(tmp_path, {"f": fault_server_entry()})
            threads: set[threading.Thread] = set()

            def never(_: object) -> bool:
                threads.add(threading.current_thread())
                return False

            waiting = asyncio.create_task(session.wait_for(never))
            await asyncio.sleep(0.05)
            await host.destroy_session(session.id)
            with pytest.raises(WaveActorsError, match="closed before"):
                await asyncio.wait_for(waiting, 5)
            assert threads == {threading.current_thread()}

    run(scenario())


def test_manual_disconnect_is_not_undone_by_reconnect_or_a_turn(tmp_path: Path, run: Run) -> None:
    # R-DIAL-6, R-RACE-3
    async def scenario() -> None:
        async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
            status = await session.disconnect("f")
            assert status.state is ServerState.DISCONNECTED and status.manually_disconnected
            assert server_processes() == []
            await session.prepare_turn()
            await asyncio.sleep(0.5)  # past the reconnect backoff
            assert session.server("f").state is ServerState.DISCONNECTED
            assert server_processes() == []
            with pytest.raises(ServerUnavailable):
                await session.call_tool("mcp__f__echo", {"text": "down"})
            assert (await session.connect("f")).state is ServerState.CONNECTED  # only an explicit connect

    run(scenario())


def test_a_crash_is_followed_by_a_reconnect_to_a_new_generation(tmp_path: Path, run: Run) -> None:
    # R-RACE-4, R-RACE-5
    async def scenario() -> None:
        async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
            first = session.server("f").generation
            with pytest.raises(ServerUnavailable):
                await session.call_tool("mcp__f__crash", {"code": 7})
            snapshot = await asyncio.wait_for(
                session.wait_for(
                    lambda snapshot: (
                        snapshot.server("f").state is ServerState.CONNECTED and snapshot.server("f").generation > first
                    )
                ),
                10,
            )
            assert snapshot.server("f").generation > first
            assert _text(await session.call_tool("mcp__f__echo", {"text": "back"})) == "back"
            assert len(server_processes()) == 1

    run(scenario())


def test_a_call_past_its_timeout_is_cancelled_on_the_server_and_never_replayed(tmp_path: Path, run: Run) -> None:
    # R-TOOL-4
    calls, cancels = tmp_path / "calls.jsonl", tmp_path / "cancels.jsonl"

    async def scenario() -> None:
        entry = {**fault_server_entry(call_log=calls, cancel_log=cancels), "tool_timeout_ms": 300}
        async with connected_session(tmp_path, {"f": entry}) as session:
            started = time.monotonic()
            with pytest.raises(ToolTimeout, match="'f'"):
                await session.call_tool("mcp__f__sleep", {"seconds": 5})
            assert time.monotonic() - started < 2.0
            await until(lambda: len(requests_cancelled(cancels)) == 1, limit=5, what="the server told of the cancel")
            assert session.server("f").state is ServerState.CONNECTED
            await session.call_tool("mcp__f__echo", {"text": "after"})
        assert tools_called(calls) == ["sleep", "echo"]

    run(scenario())


def test_a_call_answered_while_the_loop_is_blocked_is_a_result_not_a_timeout(tmp_path: Path, run: Run) -> None:
    # R-AIO-1: the trio thread keeps reading the server and keeps the call's deadline true while the loop is blocked.
    async def scenario() -> None:
        calls = tmp_path / "calls.jsonl"
        entry = {**fault_server_entry(call_log=calls), "tool_timeout_ms": 600}
        async with connected_session(tmp_path, {"f": entry}) as session:
            call = asyncio.create_task(session.call_tool("mcp__f__sleep", {"seconds": 0.3}))
            await until(lambda: tools_called(calls) == ["sleep"], limit=5, what="the call reached its server")
            # The scenario itself, not a wait for something: a host blocks its loop (a synchronous library
            # call, say) past the call's 600 ms deadline, while the server answers at 300 ms. Nothing is
            # awaited here: a blocked loop is the input, so it blocks the thread for a fixed time.
            time.sleep(1.2)
            result = await call
            assert not result.is_error

    run(scenario())


def test_reconfigure_adds_and_removes_servers_and_returns_what_changed(tmp_path: Path, run: Run) -> None:
    # R-STORE-5
    async def scenario() -> None:
        async with connected_session(tmp_path, {"a": fault_server_entry()}) as session:
            result = await session.reconfigure({"b": fault_server_entry()})
            assert (result.added, result.removed) == (("b",), ("a",))
            assert [status.name for status in session.servers()] == ["b"]
            await until(lambda: server_processes() == [], limit=5, what="a's process reclaimed")
            assert not session.reconfiguring

    run(scenario())


def test_the_host_lists_its_sessions_and_forgets_a_destroyed_one(tmp_path: Path, run: Run) -> None:
    # R-HOST-1, R-KILL-4
    async def scenario() -> None:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            one = await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="one")
            two = await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="two")
            assert host.sessions() == [one, two] and host.get_session("two") is two
            await asyncio.gather(one.prepare_turn(), two.prepare_turn())
            assert len(server_processes()) == 2
            await host.destroy_session("one")
            assert len(server_processes()) == 1  # destroy returns once its processes are gone
            assert host.sessions() == [two] and one.closed
            with pytest.raises(KeyError):
                host.get_session("one")
            await host.destroy_session("one")  # idempotent
            await two.aclose()
            assert host.sessions() == [] and no_server_left()
            assert host.pending_destroys() == []
            assert host.orphan_protection().watchdog_pid is not None
            with pytest.raises(WaveActorsError, match="closed"):
                await one.connect("f")

    run(scenario())


def test_leaving_the_host_block_reclaims_every_session_and_then_refuses_commands(tmp_path: Path, run: Run) -> None:
    # R-KILL-4
    async def scenario() -> Session:
        async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
            session = await host.create_session(tmp_path, {"f": fault_server_entry(grandchild=True)})
            await session.prepare_turn()
            assert len(server_processes()) == 1
        assert no_server_left() and session.closed
        with pytest.raises(WaveActorsError, match="closed"):
            await session.prepare_turn()
        with pytest.raises(WaveActorsError, match="closed"):
            host.orphan_protection()
        return session

    run(scenario())


def test_before_destroy_hooks_run_as_tasks_of_the_loop_with_the_sessions_face(tmp_path: Path, run: Run) -> None:
    # R-KILL-3
    async def scenario() -> None:
        seen: list[tuple[str, bool, int]] = []

        async def save_transcript(session: Session) -> None:
            await asyncio.sleep(0.01)
            seen.append((session.id, asyncio.current_task() is not None, len(server_processes())))

        async with Host.open(home=tmp_path / "home", options=FAST_SESSION, before_destroy=[save_transcript]) as host:
            session = await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="chat")
            await session.prepare_turn()
            await host.destroy_session("chat")
            assert seen == [("chat", True, 1)]  # before its server was closed
            assert no_server_left()

    run(scenario())


def test_a_hook_past_its_timeout_is_cancelled_in_the_loop_and_the_destroy_goes_on(tmp_path: Path, run: Run) -> None:
    # R-KILL-3, R-AIO-2: a trio-side cancellation reaches the asyncio task.
    async def scenario() -> None:
        cancelled = asyncio.Event()

        async def stuck(session: Session) -> None:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async with Host.open(
            home=tmp_path / "home", options=FAST_SESSION, before_destroy=[stuck], hook_timeout=0.2
        ) as host:
            session = await host.create_session(tmp_path, {"f": fault_server_entry()})
            await session.prepare_turn()
            started = time.monotonic()
            await host.destroy_session(session.id)
            assert time.monotonic() - started < 5
            await asyncio.wait_for(cancelled.wait(), 5)
            assert no_server_left()

    run(scenario())


def test_open_session_reclaims_on_exit_and_its_aclose_waits_for_the_reclamation(tmp_path: Path, run: Run) -> None:
    # R-KILL-4
    async def scenario() -> None:
        async with connected_session(tmp_path, {"f": fault_server_entry(grandchild=True)}) as session:
            assert len(server_processes()) == 1
            await session.aclose()
            assert session.closed and no_server_left()
            await session.aclose()  # idempotent
        async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
            assert len(server_processes()) == 1
        assert no_server_left()

    run(scenario())


def test_login_status_and_logout_cross_to_the_trio_session_with_its_answers_and_errors(
    tmp_path: Path, run: Run
) -> None:
    # R-AUTH-3 through the asyncio face: a server without a login has nothing to log out of; its
    # live connection is dialed again, as under trio, and the redial shows in the snapshot the
    # command hands over; an unknown name is the trio face's UnknownServer.
    async def scenario() -> None:
        async with connected_session(tmp_path, {"a": fault_server_entry()}) as session:
            generation = session.server("a").generation
            assert (await session.login_status("a")).state is LoginState.NONE
            assert await session.logout("a") is False
            assert (
                session.server("a").state is ServerState.CONNECTED and session.server("a").generation == generation + 1
            )
            with pytest.raises(UnknownServer):
                await session.logout("nope")
        assert no_server_left()

    run(scenario())
