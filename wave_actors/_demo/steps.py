"""The demo's steps, on one host: each says what it expects, checks it, and counts the processes left."""

from __future__ import annotations

import os
import sys
import time
from typing import Final

import trio

from wave_actors import Host, LoadMode, ServerState, ServerUnavailable, Session, WaveActorsError
from wave_actors._demo.report import Walkthrough
from wave_actors.testing import (
    StateNotReached,
    fault_server_entry,
    process_census,
    reference_server_entry,
    wait_for_state,
)

__all__ = ["ECHO_INIT_DELAY", "NOTES_INIT_DELAY", "RUN_VARIABLE", "SLOW_INIT_DELAY", "Demo", "count_processes"]

RUN_VARIABLE: Final = "WAVE_ACTORS_DEMO_RUN"
"""Overlaid on every demo server's environment, to find its processes however they were re-parented."""

ECHO_INIT_DELAY: Final = 1.0
NOTES_INIT_DELAY: Final = 2.0
SLOW_INIT_DELAY: Final = 5.0
_RECONNECT_TIMEOUT: Final = 10.0
_POLL_INTERVAL: Final = 0.02


def count_processes(run: str) -> int:
    """How many processes of this run are alive (blocking: it reads ``/proc``)."""
    return len(process_census(RUN_VARIABLE, run))


def _text(result: object) -> str:
    content = getattr(result, "content", [])
    return " ".join(getattr(block, "text", f"[{getattr(block, 'type', '?')}]") for block in content)


class Demo:
    """The steps, sharing one host and the processes counted between them."""

    def __init__(self, walk: Walkthrough, host: Host, run: str) -> None:
        self.walk = walk
        self.host = host
        self.run = run
        self.destroy_log: list[tuple[str, int]] = []

    async def processes(self) -> int:
        return await trio.to_thread.run_sync(count_processes, self.run)

    async def before_destroy(self, session: Session) -> None:
        """The host's destroy hook: it runs while the session's servers are still up (R-KILL-3)."""
        self.destroy_log.append((session.id, await self.processes()))

    async def create(self, workdir: str) -> tuple[Session, Session]:
        walk = self.walk
        walk.step("Create two sessions: servers are registered, nothing is spawned (R-DIAL-1)")
        env = {RUN_VARIABLE: self.run}
        chat = await self.host.create_session(
            workdir,
            {
                "echo": {**fault_server_entry(init_delay=ECHO_INIT_DELAY, read_only=["echo"]), "env": env},
                "notes": {**fault_server_entry(init_delay=NOTES_INIT_DELAY, setsid_grandchild=True), "env": env},
                "reference": {**reference_server_entry("stdio"), "env": env},
            },
            session_id="chat-1",
        )
        slow = await self.host.create_session(
            workdir,
            {"slow": {**fault_server_entry(init_delay=SLOW_INIT_DELAY), "env": env}},
            session_id="chat-2",
        )
        statuses = [*chat.servers(), *slow.servers()]
        walk.check(
            all(status.state is ServerState.DISCONNECTED for status in statuses),
            f"{len(statuses)} servers registered in 2 sessions, all disconnected",
        )
        count = await self.processes()
        walk.check(count == 0, f"{count} processes spawned (psutil: descendants of pid {os.getpid()} and marked ones)")
        await self.host_death_defences()
        walk.table(self.host)
        return chat, slow

    async def host_death_defences(self) -> None:
        """Say what protects the families if this host dies without closing (R-KILL-6, R-KILL-7, R-KILL-10)."""
        with trio.move_on_after(_RECONNECT_TIMEOUT):
            # The watchdog names itself a few milliseconds after the host opened.
            while self.host.orphan_protection().watchdog and self.host.orphan_protection().watchdog_pid is None:
                await trio.sleep(_POLL_INTERVAL)
        protection = self.host.orphan_protection()
        on = {True: "on", False: "off"}
        watchdog = f"watchdog pid {protection.watchdog_pid}" if protection.watchdog_pid else "no watchdog"
        text = (
            f"if this host dies (SIGKILL included): {watchdog}, parent-death signal "
            f"{on[protection.parent_death_signal]}, subreaper {on[protection.subreaper]}, "
            f"a cgroup per server {on[protection.cgroups]}"
        )
        if sys.platform.startswith("linux"):
            self.walk.check(protection.watchdog_pid is not None, text)
        else:
            self.walk.show(f"   {text} (Linux only; families are reclaimed when the host closes)")

    async def first_turn(self, chat: Session) -> None:
        walk = self.walk
        walk.step("First turn: prepare_turn() dials every due server concurrently (R-DIAL-2)")
        started_wall = time.time()
        started = time.monotonic()
        await chat.prepare_turn()
        wall = time.monotonic() - started
        statuses = chat.servers()
        walk.check(
            all(status.state is ServerState.CONNECTED for status in statuses),
            "connected: " + ", ".join(f"{status.name} ({status.state.value})" for status in statuses),
        )
        dials = {
            status.name: status.last_connected - started_wall
            for status in statuses
            if status.last_connected is not None
        }
        if len(dials) == len(statuses):
            slowest = max(dials, key=lambda name: dials[name])
            total = sum(dials.values())
            each = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in dials.items())
            walk.check(
                wall <= dials[slowest] + 0.25 and wall < 0.8 * total,
                f"wall time {wall:.2f} s = the slowest dial ({slowest}), not the sum ({total:.2f} s); "
                f"dials: {each} (init delays: echo {ECHO_INIT_DELAY:.1f} s, notes {NOTES_INIT_DELAY:.1f} s)",
            )
        count = await self.processes()
        walk.check(count == 4, f"{count} processes: 3 servers and the setsid grandchild of notes")
        walk.table(self.host)

    async def calls(self, chat: Session) -> None:
        walk = self.walk
        walk.step("Calls: declarations from live connections, results as CallToolResult (R-TOOL-1..6)")
        declarations = chat.tool_declarations(LoadMode.FULL)
        names = {declaration.name for declaration in declarations}
        walk.check(
            {"mcp__echo__echo", "mcp__notes__crash", "mcp__reference__add"} <= names,
            f"{len(declarations)} tools declared (LoadMode.FULL), e.g. mcp__echo__echo, mcp__reference__add",
        )
        result = await chat.call_tool("mcp__echo__echo", {"text": "hello"})
        walk.check(
            _text(result) == "hello" and not result.is_error,
            f'call_tool("mcp__echo__echo", {{"text": "hello"}}) -> {_text(result)!r}',
        )
        result = await chat.call_tool("mcp__reference__add", {"a": 2, "b": 3})
        walk.check(
            _text(result) == "5" and not result.is_error,
            f'call_tool("mcp__reference__add", {{"a": 2, "b": 3}}) -> {_text(result)!r} (the SDK\'s own server)',
        )
        result = await chat.call_tool("mcp__echo__fail", {"message": "no such file"})
        walk.check(
            result.is_error is True,
            f"a tool error is a result, not an exception: mcp__echo__fail -> isError, {_text(result)!r}",
        )

    async def manual_disconnect(self, chat: Session) -> None:
        walk = self.walk
        walk.step("Manual disconnect stays down, even across the next turn (R-DIAL-6, R-KILL-1)")
        before = await self.processes()
        await chat.disconnect("notes")
        after = await self.processes()
        walk.check(
            chat.server("notes").state is ServerState.DISCONNECTED and after == before - 2,
            f'disconnect("notes") -> {chat.server("notes").state.value}; its server and setsid grandchild '
            f"reclaimed ({before} -> {after} processes)",
        )
        generations = {status.name: status.generation for status in chat.servers()}
        await chat.prepare_turn()
        notes = chat.server("notes")
        walk.check(
            notes.state is ServerState.DISCONNECTED and notes.generation == generations["notes"],
            f"next prepare_turn(): notes still {notes.state.value}, not re-dialed",
        )
        reused = all(chat.server(name).generation == generations[name] for name in ("echo", "reference"))
        walk.check(reused, "echo and reference reused, not re-dialed: generations unchanged (R-DIAL-3)")
        walk.table(self.host)

    async def crash(self, chat: Session) -> None:
        walk = self.walk
        walk.step("Crash and automatic reconnect (R-RACE-4, R-RACE-5)")
        first = chat.server("echo").generation
        seen: list[str] = []
        recovered = trio.Event()

        async def watch(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            async for snapshot in chat.watch():
                status = snapshot.server("echo")
                label = status.state.value
                if not seen or seen[-1] != label:
                    seen.append(label)
                if len(seen) == 1:
                    task_status.started()
                if status.state is ServerState.CONNECTED and status.generation > first:
                    recovered.set()
                    return

        started = time.monotonic()
        async with trio.open_nursery() as nursery:
            await nursery.start(watch)
            try:
                await chat.call_tool("mcp__echo__crash", {"code": 7})
                walk.check(False, 'call_tool("mcp__echo__crash") returned: the process did not die')
            except ServerUnavailable as error:
                walk.check(
                    "code 7" in str(error),
                    f'call_tool("mcp__echo__crash", {{"code": 7}}) raised {type(error).__name__}: {error}',
                )
            with trio.move_on_after(_RECONNECT_TIMEOUT):
                await recovered.wait()
            nursery.cancel_scope.cancel()
        elapsed = time.monotonic() - started
        echo = chat.server("echo")
        path = " -> ".join(seen)
        walk.check(
            recovered.is_set() and "reconnecting" in seen[1:] and echo.state is ServerState.CONNECTED,
            f"watch(): {path}; generation {first} -> {echo.generation} in {elapsed:.2f} s "
            f"(backoff, then init delay {ECHO_INIT_DELAY:.1f} s; timeout {_RECONNECT_TIMEOUT:.0f} s)",
        )
        if echo.state is ServerState.CONNECTED:
            result = await chat.call_tool("mcp__echo__echo", {"text": "back"})
            walk.check(_text(result) == "back", f"call after reconnect -> {_text(result)!r}")
        walk.table(self.host)

    async def destroy_mid_dial(self, chat: Session, slow: Session) -> None:
        walk = self.walk
        walk.step(
            f"A dial cancelled by destroy: chat-2's server takes {SLOW_INIT_DELAY:.0f} s to initialize (R-RACE-2)"
        )
        before = await self.processes()
        chat_generations = {status.name: status.generation for status in chat.servers()}
        outcome: list[str] = []

        async def turn() -> None:
            try:
                await slow.prepare_turn()
                outcome.append("returned")
            except WaveActorsError as error:
                outcome.append(f"raised {error}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            try:
                await wait_for_state(slow, "slow", ServerState.CONNECTING, timeout=5.0)
                dialing = True
            except StateNotReached:
                dialing = False
            spawned = False
            deadline = time.monotonic() + 5.0
            while dialing and time.monotonic() < deadline:
                if await self.processes() > before:
                    spawned = True
                    break
                await trio.sleep(_POLL_INTERVAL)
            walk.check(dialing and spawned, "prepare_turn() in chat-2: slow is connecting, its process is up")
            walk.table(self.host)
            started = time.monotonic()
            await self.host.destroy_session(slow.id)
            elapsed = time.monotonic() - started
            walk.check(
                elapsed < SLOW_INIT_DELAY,
                f'destroy_session("chat-2") returned in {elapsed:.2f} s, before the dial could finish',
            )
        after = await self.processes()
        walk.check(after == before, f"its process is gone: {after} processes, as before the dial")
        walk.check(outcome == ["returned"], f"the cancelled prepare_turn() {outcome[0] if outcome else 'never ended'}")
        untouched = all(
            chat.server(name).generation == generation and chat.server(name).state is not ServerState.ERROR
            for name, generation in chat_generations.items()
        )
        walk.check(untouched, "chat-1 untouched: same states and generations")

    async def destroy(self, chat: Session) -> None:
        walk = self.walk
        walk.step("Destroy: hooks first, then every process reclaimed before it returns (R-KILL-3, R-KILL-4)")
        before = await self.processes()
        walk.table(self.host)
        started = time.monotonic()
        await self.host.destroy_session(chat.id)
        elapsed = time.monotonic() - started
        after = await self.processes()
        hook = [count for session_id, count in self.destroy_log if session_id == chat.id]
        walk.check(
            hook == [before],
            f"the before_destroy hook ran first, while chat-1's {before} processes were still up",
        )
        walk.check(
            after == 0 and chat.closed,
            f'destroy_session("chat-1") returned in {elapsed:.2f} s with {after} processes left',
        )
        await self.host.destroy_session(chat.id)
        walk.check(not self.host.sessions(), "destroying it again is a no-op (idempotent); no live sessions")
