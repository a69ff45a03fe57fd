"""A session's lifecycle at its edges: host teardown, closing under a waiting caller, cancelled reconfigures.

Each test pins one promise of the lifecycle (R-KILL-4, R-KILL-5, R-HOST-2,
R-HOST-3, R-HOST-4) at a moment where two things happen at once.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio
import trio.lowlevel
from presets import FAST_SESSION
from session_support import connected_session, idle_session

from wave_actors import Host, ServerState, ServerUnavailable, SessionSnapshot, WaveActorsError
from wave_actors.testing import count_tasks, fault_server_entry, wait_for_state


async def test_a_session_created_while_the_host_closes_is_refused_and_the_host_exits(tmp_path: Path) -> None:
    # R-KILL-4: the host's teardown lists the sessions to destroy once; a create
    # still loading its configuration then must not add one it never destroys.
    outcome: list[BaseException | str] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as outer, Host.open(home=tmp_path / "home") as host:

            async def create() -> None:
                try:
                    await host.create_session(tmp_path, {"f": fault_server_entry()})
                    outcome.append("created")
                except WaveActorsError as error:
                    outcome.append(error)

            outer.start_soon(create)
            await trio.lowlevel.checkpoint()  # the create is now loading its configuration
    assert len(outcome) == 1
    assert outcome[0] == "created" or "closing" in str(outcome[0])


async def test_a_transition_observer_that_raises_never_takes_a_server_or_the_host_down(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # R-HOST-4: the observer is the host's code; its bug is logged, nothing else.
    def observer(transition: object) -> None:
        raise ValueError("observer bug")

    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        other = await host.create_session(tmp_path, {"x": fault_server_entry()})
        session = await host.create_session(
            tmp_path, {"a": fault_server_entry()}, options=attrs.evolve(FAST_SESSION, transition_observer=observer)
        )
        await session.prepare_turn()
        await other.prepare_turn()
        assert session.server("a").state is ServerState.CONNECTED
        assert not (await session.call_tool("mcp__a__echo", {"text": "still up"})).is_error
        assert other.server("x").state is ServerState.CONNECTED
    assert "transition observer raised" in caplog.text


async def test_a_connect_waiting_when_the_session_closes_is_released_with_an_error(tmp_path: Path) -> None:
    # R-KILL-4: the caller of connect is released as the session closes (no later than
    # the destroy returns), and told why: it did not get a connected server.
    slow = fault_server_entry(init_delay=30)
    released: list[float] = []
    failure: list[BaseException] = []
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        session = await host.create_session(tmp_path, {"slow": slow})

        async def connect() -> None:
            try:
                await session.connect("slow")
            except ServerUnavailable as error:
                failure.append(error)
            released.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(connect)
            await wait_for_state(session, "slow", ServerState.CONNECTING)
            await host.destroy_session(session.id)
            destroyed = trio.current_time()
    assert failure and "closed while server 'slow' was connecting" in str(failure[0])
    assert released[0] <= destroyed


async def test_a_cancelled_reconfigure_still_shows_the_servers_it_removed_gone(tmp_path: Path) -> None:
    # R-HOST-2: the snapshot (and every watcher) sees the removal even when the
    # reconfigure is cancelled while it drains a call on the removed server.
    entries = {"a": fault_server_entry(), "b": fault_server_entry()}
    async with connected_session(tmp_path, entries) as session, trio.open_nursery() as nursery:

        async def slow_call() -> None:
            try:
                await session.call_tool("mcp__a__sleep", {"seconds": 3})
            except ServerUnavailable:
                pass

        async def watcher() -> None:
            async for _ in session.watch():  # builds every snapshot as it comes
                pass

        nursery.start_soon(slow_call)
        nursery.start_soon(watcher)
        await trio.testing.wait_all_tasks_blocked()
        before = session.snapshot().version
        with trio.move_on_after(0.5):
            await session.reconfigure({"b": entries["b"]})  # retiring a waits for the call
        # At once, while the call still holds a's retirement open:
        assert [status.name for status in session.servers()] == ["b"]
        assert session.snapshot().version > before
        nursery.cancel_scope.cancel()


async def test_wait_for_keeps_the_answer_of_the_first_snapshot_that_held(tmp_path: Path) -> None:
    # A reconfigure makes several changes without a checkpoint between them: a
    # predicate that held once is not asked again, so a later snapshot cannot undo it.
    entries = {"a": fault_server_entry(), "b": fault_server_entry()}
    async with idle_session(tmp_path, entries) as session:
        first = session.snapshot().version
        held_at: list[int] = []

        def predicate(snapshot: SessionSnapshot) -> bool:
            if held_at and snapshot.version > held_at[0]:
                raise KeyError("asked again after it held")
            if snapshot.version > first:
                held_at.append(snapshot.version)
                return True
            return False

        async with trio.open_nursery() as nursery:
            answer: list[int] = []

            async def waiter() -> None:
                answer.append((await session.wait_for(predicate)).version)

            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            # Two kept servers with new settings: several changes, no checkpoint between them.
            await session.reconfigure({name: {**entry, "tool_timeout_ms": 1234} for name, entry in entries.items()})
        assert answer == held_at


async def test_reconfiguring_servers_never_dialed_starts_no_task(tmp_path: Path) -> None:
    # R-HOST-3: an idle server costs no task, before and after its entry changes or it is disconnected.
    entries = {f"s{index}": fault_server_entry() for index in range(20)}
    async with idle_session(tmp_path, entries) as session:
        before = count_tasks()
        await session.reconfigure({name: fault_server_entry(tools=1) for name in entries})
        await session.disconnect("s0")
        assert count_tasks() == before
        assert session.server("s0").manually_disconnected
        assert {status.state for status in session.servers()} == {ServerState.DISCONNECTED}
