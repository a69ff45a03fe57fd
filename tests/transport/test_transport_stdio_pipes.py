"""The stdio transport's pipes without tasks of their own, on every platform's path.

The server's stdout is read in the task that asks for the next message, and
each message is written in the sender's own task. On Linux one epoll watches
stdout, stderr and the process's exit; elsewhere two helper tasks watch
stderr and the exit. Each behaviour here runs both ways (``pipes``).

R-CFG-9, R-RACE-5, R-TOOL-4, R-TOOL-5, R-TOOL-12.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from presets import FAST_TRANSPORT
from session_support import connected_session
from transport_support import config_for

from wave_actors import DialError, ServerState, ServerUnavailable, ToolCallError
from wave_actors._transport import TransportOptions, open_connection, stdout as stdout_module
from wave_actors.testing import count_tasks, fault_server_entry


def entry(**flags: Any) -> dict[str, Any]:
    return fault_server_entry(**flags)


@pytest.fixture(params=["epoll", "helper tasks"])
def pipes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways of watching a server's pipes and exit: one epoll (Linux), or helper tasks."""
    if request.param == "epoll" and not stdout_module._MULTIPLEXED:  # pyright: ignore[reportPrivateUsage]
        pytest.skip("no epoll or pidfd here")
    if request.param == "helper tasks":
        monkeypatch.setattr(stdout_module, "_MULTIPLEXED", False)
    yield request.param


async def test_calls_concurrent_and_sequential(pipes: str) -> None:
    async with open_connection(config_for(entry()), options=FAST_TRANSPORT) as connection:
        for index in range(20):
            result = await connection.call_tool("echo", {"text": f"call {index}"}, timeout=5)
            assert result.content[0].text == f"call {index}"  # type: ignore[union-attr]
        answers: dict[int, str] = {}

        async def call(index: int) -> None:
            result = await connection.call_tool("echo", {"text": f"concurrent {index}"}, timeout=5)
            answers[index] = result.content[0].text  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for index in range(50):
                nursery.start_soon(call, index)
        assert answers == {index: f"concurrent {index}" for index in range(50)}


async def test_exit_on_start_reports_code_and_stderr(pipes: str) -> None:
    with pytest.raises(DialError) as caught, trio.fail_after(10):
        async with open_connection(config_for(entry(exit_on_start=7)), options=FAST_TRANSPORT):
            pass
    assert "code 7" in str(caught.value)
    assert "stderr" in str(caught.value)


async def test_crash_is_reported_with_its_code(pipes: str) -> None:
    async with open_connection(config_for(entry()), options=FAST_TRANSPORT) as connection:
        with pytest.raises(ServerUnavailable):
            await connection.call_tool("crash", {"code": 5}, timeout=5)
        with trio.fail_after(2):
            assert "code 5" in await connection.wait_lost()


async def test_crash_is_reported_while_a_grandchild_holds_stdout(pipes: str) -> None:
    config = config_for(entry(grandchild=True, grandchild_inherit_stdio=True))
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        with pytest.raises(ServerUnavailable):
            await connection.call_tool("crash", {"code": 9}, timeout=5)
        with trio.fail_after(3):
            assert "code 9" in await connection.wait_lost()


# R-TOOL-12: a line over the limit is skipped unread; the request it answered fails alone, naming the limit.


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
async def test_an_answer_over_the_message_limit_fails_its_call_alone_and_the_connection_goes_on(
    pipes: str, id_last: bool
) -> None:
    # Even one that arrives within one read of the pipe; and whether the id comes first (the Python
    # SDK's order) or last (the TypeScript SDK's).
    options = TransportOptions(graces=FAST_TRANSPORT.graces, max_message_bytes=20_000)
    config = config_for(entry(huge_response=30_000, id_last=id_last, tools=1))
    with trio.fail_after(20):
        async with open_connection(config, options=options) as connection:
            slept: list[str] = []

            async def sleep() -> None:
                result = await connection.call_tool("sleep", {"seconds": 0.5}, timeout=10)
                slept.append(result.content[0].text)  # type: ignore[union-attr]

            async with trio.open_nursery() as nursery:
                nursery.start_soon(sleep)
                with pytest.raises(ToolCallError, match=r"limit of 20000 bytes .*max_message_bytes") as raised:
                    await connection.call_tool("echo", {"text": "x"}, timeout=10)
                assert "connection closed" not in str(raised.value)
            assert slept == ["slept 0.5"]  # the call in flight meanwhile was not touched
            assert not connection.lost
            result = await connection.call_tool("tool_1", {"text": "after"}, timeout=10)
            assert result.content[0].text == "tool_1: after"  # type: ignore[union-attr]


async def test_a_line_over_the_limit_whose_request_cannot_be_told_is_dropped_and_the_connection_goes_on(
    pipes: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A notification of 30 000 bytes: no request to fail, nothing held, a warning, and the call's answer follows.
    options = TransportOptions(graces=FAST_TRANSPORT.graces, max_message_bytes=20_000)
    config = config_for(entry(huge_notification=30_000))
    with trio.fail_after(20):
        async with open_connection(config, options=options) as connection:
            result = await connection.call_tool("echo", {"text": "fine"}, timeout=10)
            assert result.content[0].text == "fine"  # type: ignore[union-attr]
            assert not connection.lost
    [warning] = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert "dropped a message of over 20000 bytes" in warning and "no request id could be read" in warning


async def test_stderr_is_kept_while_calls_go_on(pipes: str) -> None:
    options = TransportOptions(graces=FAST_TRANSPORT.graces, stderr_lines=20)
    with trio.fail_after(20):
        async with open_connection(config_for(entry(stderr_flood=2_000_000)), options=options) as connection:
            result = await connection.call_tool("echo", {"text": "ok"}, timeout=10)
            assert not result.is_error
            assert connection.stderr is not None
            assert 0 < len(connection.stderr.lines()) <= 20


async def test_a_large_answer_and_a_large_argument_arrive_whole(pipes: str) -> None:
    async with open_connection(config_for(entry(huge_response=2_000_000)), options=FAST_TRANSPORT) as connection:
        result = await connection.call_tool("echo", {"text": "x" * 3_000_000}, timeout=20)
        assert len(result.content[0].text) == 2_000_000  # type: ignore[union-attr]


async def test_a_sender_cancelled_mid_message_leaves_the_stream_whole(pipes: str, tmp_path: Path) -> None:
    # A message larger than the pipe is finished by the transport, so a cancelled
    # sender never leaves half a line that would garble the next message.
    log = tmp_path / "calls.jsonl"
    async with open_connection(config_for(entry(call_log=log)), options=FAST_TRANSPORT) as connection:
        for size in (1_000_000, 4_000_000):
            with trio.move_on_after(0.001):
                await connection.call_tool("echo", {"text": "y" * size}, timeout=20)
            with trio.fail_after(20):
                result = await connection.call_tool("echo", {"text": f"after {size}"}, timeout=20)
            assert result.content[0].text == f"after {size}"  # type: ignore[union-attr]
        assert not connection.lost


async def test_a_connected_stdio_server_costs_at_most_three_tasks(tmp_path: Path) -> None:
    # Structure, not speed: the actor's mailbox loop (which holds the supervisor),
    # the transport child, and the SDK's receive loop (which reads the pipes itself).
    if not stdout_module._MULTIPLEXED:  # pyright: ignore[reportPrivateUsage]
        pytest.skip("without epoll, stderr and the exit take a task each")
    servers = {f"s{index}": fault_server_entry() for index in range(6)}
    async with connected_session(tmp_path, {"first": fault_server_entry()}) as session:
        before = count_tasks()
        await session.reconfigure(mcp_servers={"first": fault_server_entry(), **servers})
        await session.prepare_turn()
        assert all(status.state is ServerState.CONNECTED for status in session.servers())
        await session.call_tool("mcp__s0__echo", {"text": "hello"})
        assert count_tasks() - before <= 3 * len(servers)
