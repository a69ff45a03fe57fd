"""Observing a session: wait_for, watch, versions across a host, the transition observer (R-HOST-2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from wave_actors import (
    EffectKind,
    Host,
    MessageKind,
    ServerState,
    Session,
    SessionOptions,
    SessionSnapshot,
    Transition,
    WaveActorsError,
    open_session,
)
from wave_actors.testing import fault_server_entry


def connected(name: str) -> Callable[[SessionSnapshot], bool]:
    def holds(snapshot: SessionSnapshot) -> bool:
        return snapshot.server(name).state is ServerState.CONNECTED

    return holds


async def test_wait_for_returns_the_snapshot_in_which_the_predicate_first_held(
    tmp_path: Path, options: SessionOptions
) -> None:
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry(init_delay=0.2)}, options=options
    ) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prepare_turn)
            with trio.fail_after(10):
                snapshot = await session.wait_for(connected("f"))
        assert snapshot.server("f").state is ServerState.CONNECTED
        assert snapshot.server("f").tool_count > 0


async def test_wait_for_returns_at_once_when_the_predicate_already_holds(
    tmp_path: Path, options: SessionOptions
) -> None:
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=options
    ) as session:
        with trio.CancelScope() as scope:
            scope.cancel()  # no checkpoint may be reached
            snapshot = await session.wait_for(lambda s: s.server("f").state is ServerState.DISCONNECTED)
        assert snapshot.version == session.snapshot().version


async def test_a_predicate_that_raises_fails_the_caller_not_the_server(tmp_path: Path, options: SessionOptions) -> None:
    calls = 0

    def flaky(snapshot: SessionSnapshot) -> bool:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise LookupError("predicate broke")
        return False

    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=options
    ) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.prepare_turn)
            with trio.fail_after(10), pytest.raises(LookupError, match="predicate broke"):
                await session.wait_for(flaky)
        with trio.fail_after(10):
            await session.wait_for(connected("f"))
        result = await session.call_tool("mcp__f__echo", {"text": "still here"})
        assert not result.is_error


async def test_wait_for_ends_with_an_error_when_the_session_closes_first(
    tmp_path: Path, options: SessionOptions
) -> None:
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"f": fault_server_entry()})
        failure: list[BaseException] = []

        async def waiter() -> None:
            try:
                await session.wait_for(lambda s: False)
            except WaveActorsError as error:
                failure.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            await host.destroy_session(session.id)
        assert failure and "closed" in str(failure[0])


async def test_watch_ends_with_a_snapshot_of_the_closed_session(tmp_path: Path, options: SessionOptions) -> None:
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(tmp_path, {"f": fault_server_entry()})
        await session.prepare_turn()
        seen: list[SessionSnapshot] = []

        async def watcher() -> None:
            async for snapshot in session.watch():
                seen.append(snapshot)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watcher)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(10):
                await host.destroy_session(session.id)
        assert seen[-1].server("f").state is ServerState.DISCONNECTED
        assert [s.version for s in seen] == sorted({s.version for s in seen})


async def test_versions_grow_across_the_sessions_of_a_host_even_when_an_id_is_reused(tmp_path: Path) -> None:
    # R-HOST-2: a view that keeps the highest version it saw must not ignore a new session of the same id.
    async with Host.open(home=tmp_path / "home") as host:
        first = await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="chat")
        old = first.snapshot().version
        await host.destroy_session("chat")
        second = await host.create_session(tmp_path, {"f": fault_server_entry()}, session_id="chat")
        assert second.snapshot().version > old


async def test_the_transition_observer_sees_every_message_in_order(tmp_path: Path, options: SessionOptions) -> None:
    seen: list[Transition] = []
    observed = attrs.evolve(options, transition_observer=seen.append)
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=observed
    ) as session:
        await session.prepare_turn()
        await session.disconnect("f")
    kinds = [t.message for t in seen]
    assert kinds[:3] == [MessageKind.CONNECT, MessageKind.STARTED, MessageKind.UP]
    assert MessageKind.DISCONNECT in kinds
    connect, started, up = seen[:3]
    assert connect.effects == (EffectKind.START_TRANSPORT,) and not connect.explicit
    assert started.live_after == up.generation and up.state_after is ServerState.CONNECTED
    assert all(t.server == "f" for t in seen)


def test_sessions_and_hosts_have_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="create_session"):
        Session()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no public constructor"):
        Host()  # type: ignore[call-arg]
