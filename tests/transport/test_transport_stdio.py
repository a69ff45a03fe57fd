"""The stdio transport against real processes: the fault server and the SDK's server.

R-CFG-3, R-CFG-9, R-KILL-1, R-KILL-2, R-RACE-2, R-RACE-5, R-TOOL-4.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from presets import FAST_TRANSPORT
from transport_support import config_for

from wave_actors import ConfigError, DialError, ServerConfig, ServerUnavailable, Source, ToolTimeout
from wave_actors._transport import Graces, TransportOptions, open_connection
from wave_actors.testing import fault_server_entry, reference_server_entry


def gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


async def pids_of(connection: Any) -> list[int]:
    result = await connection.call_tool("pid", {}, timeout=5)
    info = json.loads(result.content[0].text)
    return [info["pid"], *info["grandchildren"]]


async def test_stdio_fault_server_handshake_tools_and_calls() -> None:
    config = config_for(fault_server_entry(instructions="use echo", read_only=["echo"]))
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            assert connection.instructions == "use echo"
            assert connection.pid is not None
            tools = {tool.name: tool for tool in (await connection.list_tools()).tools}
            assert {"echo", "sleep", "fail", "crash"} <= tools.keys()
            assert tools["echo"].annotations is not None and tools["echo"].annotations.read_only_hint
            result = await connection.call_tool("echo", {"text": "hi"}, timeout=5)
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            failed = await connection.call_tool("fail", {"message": "nope"}, timeout=5)
            assert failed.is_error  # tool errors are results, not exceptions (R-TOOL-6)


async def test_stdio_sdk_reference_server() -> None:
    config = config_for(reference_server_entry("stdio"), name="reference")
    with trio.fail_after(30):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            names = {tool.name for tool in (await connection.list_tools()).tools}
            assert "echo" in names
            result = await connection.call_tool("echo", {"text": "ref"}, timeout=10)
            assert not result.is_error
            assert "ref" in result.content[0].text  # type: ignore[union-attr]


async def test_child_environment_is_parent_overlaid_with_entry_env(tmp_path: Path) -> None:
    # R-CFG-9: no shell, parent env overlaid with the entry's env.
    script = tmp_path / "env_server.py"
    script.write_text(
        "import os, sys\n"
        "sys.stderr.write('MARK=' + os.environ.get('WAVE_ACTORS_TEST_MARK', '') + ' X=' + os.environ['X'] + '\\n')\n"
        "sys.stderr.flush()\n"
    )
    config = ServerConfig(
        name="env",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type="stdio",
        command=sys.executable,
        args=(str(script),),
        env={"X": "$HOME;rm -rf /"},
    )
    with pytest.raises(DialError) as caught, trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT):
            pass
    message = str(caught.value)
    assert "X=$HOME;rm -rf /" in message  # literal: no shell ever saw it
    assert "MARK=" in message and "MARK= " not in message


async def test_unknown_type_fails_at_connect_naming_server_and_value() -> None:
    # R-CFG-3
    config = ServerConfig(name="odd", source=Source.PROJECT, origin="/p/.mcp.json", type="websocket", url="ws://x")
    with pytest.raises(ConfigError, match=r"'odd'.*'websocket'"):
        async with open_connection(config):
            pass


async def test_missing_command_is_a_dial_error_naming_it() -> None:
    config = ServerConfig(
        name="ghost", source=Source.USER, origin="~/.wave/mcp.json", type="stdio", command="/no/such/binary-xyz"
    )
    with pytest.raises(DialError, match=r"'ghost'.*/no/such/binary-xyz"):
        async with open_connection(config):
            pass


async def test_server_exiting_on_start_reports_exit_code_and_stderr() -> None:
    config = config_for(fault_server_entry(exit_on_start=7))
    with pytest.raises(DialError) as caught, trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT):
            pass
    assert "code 7" in str(caught.value)
    assert "stderr" in str(caught.value)


async def test_crash_is_detected_promptly_with_exit_code() -> None:
    # R-RACE-5
    config = config_for(fault_server_entry())
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        with pytest.raises(ServerUnavailable):
            await connection.call_tool("crash", {"code": 5}, timeout=5)
        with trio.fail_after(2):
            reason = await connection.wait_lost()
        assert "code 5" in reason
        with pytest.raises(ServerUnavailable, match="code 5"):
            await connection.call_tool("echo", {"text": "after"}, timeout=5)


async def test_crash_is_detected_even_when_a_grandchild_holds_stdout_open() -> None:
    config = config_for(fault_server_entry(grandchild=True, grandchild_inherit_stdio=True))
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        pids = await pids_of(connection)
        with pytest.raises(ServerUnavailable):
            await connection.call_tool("crash", {"code": 9}, timeout=5)
        with trio.fail_after(3):
            reason = await connection.wait_lost()
        assert "code 9" in reason
    assert gone(pids)


@pytest.mark.parametrize("flags", [{"grandchild": True}, {"setsid_grandchild": True}])
async def test_close_reclaims_grandchildren(flags: dict[str, Any]) -> None:
    # R-KILL-1: the SDK's own client leaves these alive.
    config = config_for(fault_server_entry(**flags))
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        pids = await pids_of(connection)
        assert len(pids) == 2
    assert gone(pids)


async def test_sigterm_ignoring_server_with_grandchild_is_gone_within_graces() -> None:
    # R-KILL-1, R-KILL-2: EOF ignored, SIGTERM ignored, SIGKILL ends it.
    graces = Graces(eof=0.3, term=0.3, kill=1.0)
    config = config_for(fault_server_entry(ignore_sigterm=True, exit_on_eof=False, grandchild=True))
    async with open_connection(config, options=TransportOptions(graces=graces)) as connection:
        pids = await pids_of(connection)
        started = trio.current_time()
    elapsed = trio.current_time() - started
    assert gone(pids)
    assert elapsed < graces.total


async def test_close_is_not_blocked_by_cancellation() -> None:
    # R-KILL-2: the caller's scope is cancelled, reclamation still completes.
    config = config_for(fault_server_entry(ignore_sigterm=True, exit_on_eof=False, setsid_grandchild=True))
    pids: list[int] = []
    with trio.CancelScope() as scope:
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            pids = await pids_of(connection)
            scope.cancel()
            await trio.sleep_forever()
    assert pids and gone(pids)


async def test_cancelling_during_initialize_leaves_no_process_50_times() -> None:
    # R-RACE-2: a dial cancelled at any point of the handshake leaves nothing behind.
    config = config_for(fault_server_entry(init_delay=5.0, grandchild=True, setsid_grandchild=True))
    rng = random.Random(1234)
    for _ in range(50):
        with trio.move_on_after(rng.uniform(0.0, 0.15)) as scope:
            async with open_connection(config, options=FAST_TRANSPORT):
                pytest.fail("initialize answered although it was delayed 5 s")
        assert scope.cancelled_caught
    # The autouse fixture proves the rest: no process of this test is left.


async def test_call_timeout_cancels_on_server_and_is_not_replayed(tmp_path: Path) -> None:
    # R-TOOL-4
    log = tmp_path / "calls.jsonl"
    config = config_for(fault_server_entry(call_log=log))
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        with pytest.raises(ToolTimeout, match=r"'fault'.*sleep"):
            await connection.call_tool("sleep", {"seconds": 10}, timeout=0.3)
        # The connection is still usable, and the timed-out call was received once.
        result = await connection.call_tool("echo", {"text": "still here"}, timeout=5)
        assert not result.is_error
    received = [json.loads(line)["tool"] for line in log.read_text().splitlines()]
    assert received == ["sleep", "echo"]


async def test_slow_calls_run_concurrently() -> None:
    # R-TOOL-5: two 0.5 s calls on one connection take well under 1 s together.
    config = config_for(fault_server_entry())
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        started = trio.current_time()

        async def sleep_call() -> None:
            await connection.call_tool("sleep", {"seconds": 0.5}, timeout=5)

        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(sleep_call)
        assert trio.current_time() - started < 0.9


async def test_garbage_on_stdout_does_not_break_the_session() -> None:
    config = config_for(fault_server_entry(garbage_stdout=True))
    with trio.fail_after(10):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            result = await connection.call_tool("echo", {"text": "ok"}, timeout=5)
            assert result.content[0].text == "ok"  # type: ignore[union-attr]


async def test_stderr_flood_is_bounded_and_does_not_block() -> None:
    config = config_for(fault_server_entry(stderr_flood=5_000_000))
    options = TransportOptions(graces=FAST_TRANSPORT.graces, stderr_lines=50)
    with trio.fail_after(20):
        async with open_connection(config, options=options) as connection:
            result = await connection.call_tool("echo", {"text": "ok"}, timeout=10)
            assert not result.is_error
            assert connection.stderr is not None
            assert len(connection.stderr.lines()) <= 50


async def test_huge_response_arrives_whole() -> None:
    config = config_for(fault_server_entry(huge_response=3_000_000))
    async with open_connection(config, options=FAST_TRANSPORT) as connection:
        result = await connection.call_tool("echo", {"text": "x"}, timeout=20)
        assert len(result.content[0].text) == 3_000_000  # type: ignore[union-attr]


async def test_list_changed_notification_reaches_the_callback() -> None:
    # R-RACE-7 needs this signal.
    seen = trio.Event()

    def on_notification(notification: Any) -> None:
        if getattr(notification, "method", "") == "notifications/tools/list_changed":
            seen.set()

    config = config_for(fault_server_entry())
    async with open_connection(config, options=FAST_TRANSPORT, on_notification=on_notification) as connection:
        await connection.call_tool("notify_list_changed", {}, timeout=5)
        with trio.fail_after(5):
            await seen.wait()
