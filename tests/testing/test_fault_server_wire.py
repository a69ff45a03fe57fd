"""The fault server on the wire and as a process: what the SDK client hides.

These tests drive the server with raw newline-delimited JSON-RPC over trio
pipes, so they can see exit codes, absent answers and stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from polling import poll_until

from wave_actors.testing import CRASH_AFTER_CALLS_EXIT_CODE, entry_command, fault_server_entry, is_alive, kill_processes

JSONObject = dict[str, Any]

# Set by tests/conftest.py in the suite's environment; the fault server's
# children must inherit it for the leak check to find them.
_MARK = "WAVE_ACTORS_TEST_MARK"


class RawClient:
    """Newline-delimited JSON-RPC over a server process's pipes."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._buffer = b""
        self._next_id = 0

    async def send(self, message: JSONObject) -> None:
        await self._stdin.send_all(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: JSONObject | None = None) -> int:
        self._next_id += 1
        message: JSONObject = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return self._next_id

    async def read_line(self) -> bytes | None:
        """The next stdout line, or ``None`` at EOF."""
        while b"\n" not in self._buffer:
            chunk = await self._stdout.receive_some()
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    async def receive(self) -> JSONObject:
        line = await self.read_line()
        assert line is not None, "server closed stdout"
        return json.loads(line)

    async def call(self, method: str, params: JSONObject | None = None) -> JSONObject:
        request_id = await self.request(method, params)
        answer = await self.receive()
        assert answer["id"] == request_id
        return answer

    async def initialize(self, version: str = "2025-11-25") -> JSONObject:
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        answer = await self.call("initialize", params)
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    async def close_stdin(self) -> None:
        await self._stdin.aclose()

    async def wait_exit(self, timeout: float = 10) -> int:
        with trio.fail_after(timeout):
            return await self.process.wait()


@asynccontextmanager
async def raw_server(entry: dict[str, object], *, stderr: int | None = None) -> AsyncGenerator[RawClient, None]:
    """A fault server on pipes; killed (shielded, bounded) when the block exits."""
    process = await trio.lowlevel.open_process(
        entry_command(entry), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )
    try:
        yield RawClient(process)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            if process.returncode is None:
                process.kill()
            await process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    await pipe.aclose()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_a_known_protocol_version_is_echoed(version: str) -> None:
    async with raw_server(fault_server_entry()) as client:
        assert (await client.initialize(version))["protocolVersion"] == version


async def test_an_unknown_protocol_version_gets_the_latest() -> None:
    async with raw_server(fault_server_entry()) as client:
        assert (await client.initialize("2099-01-01"))["protocolVersion"] == "2025-11-25"


async def test_list_twice_lists_a_tool_twice() -> None:
    # A broken server's tools/list, for the runtime's de-duplication (R-TOOL-1).
    async with raw_server(fault_server_entry(list_twice=["echo"])) as client:
        await client.initialize()
        names = [tool["name"] for tool in (await client.call("tools/list", {}))["result"]["tools"]]
        assert names.count("echo") == 2 and names.count("sleep") == 1


async def test_json_rpc_error_answers_a_tools_calls_with_an_error() -> None:
    async with raw_server(fault_server_entry(json_rpc_error=["fail"])) as client:
        await client.initialize()
        answer = await client.call("tools/call", {"name": "fail", "arguments": {}})
        assert answer["error"]["code"] == -32602 and "result" not in answer
        assert "result" in await client.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})


async def test_malformed_answer_answers_a_tools_calls_with_a_result_that_is_not_an_object() -> None:
    async with raw_server(fault_server_entry(malformed_answer=["echo"])) as client:
        await client.initialize()
        answer = await client.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert answer == {"jsonrpc": "2.0", "id": answer["id"], "result": "oops"}
        assert "content" in (await client.call("tools/call", {"name": "fail", "arguments": {}}))["result"]


async def test_invalid_schema_adds_a_tool_whose_input_schema_is_not_an_object() -> None:
    async with raw_server(fault_server_entry(invalid_schema=["broken"])) as client:
        await client.initialize()
        tools = {tool["name"]: tool for tool in (await client.call("tools/list", {}))["result"]["tools"]}
        assert tools["broken"]["inputSchema"] == {"type": "array"}
        assert tools["echo"]["inputSchema"]["type"] == "object"


async def test_deep_schema_nests_the_deep_tools_properties() -> None:
    async with raw_server(fault_server_entry(deep_schema=3)) as client:
        await client.initialize()
        tools = {tool["name"]: tool for tool in (await client.call("tools/list", {}))["result"]["tools"]}
        schema = tools["deep"]["inputSchema"]
        for _ in range(3):
            schema = schema["properties"]["inner"]
        assert schema == {"type": "object"}


async def test_random_stdout_comes_before_the_first_answer_and_ends_with_a_newline() -> None:
    async with raw_server(fault_server_entry(random_stdout=4096)) as client:
        await client.request("ping")
        lines: list[bytes] = []
        while (line := await client.read_line()) is not None:
            lines.append(line)
            if line.startswith(b'{"jsonrpc"'):
                break
    assert sum(len(line) + 1 for line in lines[:-1]) == 4096 + 1
    assert json.loads(lines[-1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_an_unknown_method_is_method_not_found() -> None:
    async with raw_server(fault_server_entry()) as client:
        await client.initialize()
        answer = await client.call("server/discover", {})
        assert answer["error"]["code"] == -32601


async def test_a_cancelled_call_sends_no_answer() -> None:
    async with raw_server(fault_server_entry()) as client:
        await client.initialize()
        cancelled = await client.request("tools/call", {"name": "sleep", "arguments": {"seconds": 0.2}})
        await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancelled}})
        # Had the cancelled 0.2 s sleep answered, it would arrive before this 0.6 s one.
        later = await client.request("tools/call", {"name": "sleep", "arguments": {"seconds": 0.6}})
        with trio.fail_after(10):
            answer = await client.receive()
        assert answer["id"] == later


async def test_stdin_eof_exits_zero() -> None:
    async with raw_server(fault_server_entry(), stderr=subprocess.DEVNULL) as client:
        await client.initialize()
        await client.close_stdin()
        assert await client.wait_exit() == 0


async def test_ignore_eof_keeps_running_until_killed() -> None:
    async with raw_server(fault_server_entry(exit_on_eof=False), stderr=subprocess.DEVNULL) as client:
        await client.initialize()
        await client.close_stdin()
        # stdout stays open and the process alive; only a signal ends it.
        with trio.move_on_after(0.5) as still_running:
            await client.process.wait()
        assert still_running.cancelled_caught
        client.process.send_signal(signal.SIGTERM)
        assert await client.wait_exit() == -signal.SIGTERM


async def test_exit_on_start_explains_itself_on_stderr() -> None:
    result = await trio.run_process(
        entry_command(fault_server_entry(exit_on_start=5)), capture_stderr=True, check=False
    )
    assert result.returncode == 5
    assert b"exit-on-start" in result.stderr


async def test_crash_tool_exits_with_the_given_code() -> None:
    async with raw_server(fault_server_entry(), stderr=subprocess.DEVNULL) as client:
        await client.initialize()
        await client.request("tools/call", {"name": "crash", "arguments": {"code": 42}})
        assert await client.read_line() is None
        assert await client.wait_exit() == 42


async def test_crash_after_calls_exits_on_receiving_the_nth_call() -> None:
    async with raw_server(fault_server_entry(crash_after_calls=2), stderr=subprocess.DEVNULL) as client:
        await client.initialize()
        assert "result" in await client.call("tools/call", {"name": "echo", "arguments": {"text": "1"}})
        await client.request("tools/call", {"name": "echo", "arguments": {"text": "2"}})
        assert await client.read_line() is None
        assert await client.wait_exit() == CRASH_AFTER_CALLS_EXIT_CODE


async def test_ignore_sigterm_survives_sigterm_but_not_sigkill() -> None:
    async with raw_server(fault_server_entry(ignore_sigterm=True)) as client:
        await client.initialize()
        client.process.send_signal(signal.SIGTERM)
        assert "result" in await client.call("ping")
        client.process.kill()
        assert await client.wait_exit() == -signal.SIGKILL


async def test_garbage_stdout_interleaves_non_json_lines() -> None:
    async with raw_server(fault_server_entry(garbage_stdout=True)) as client:
        await client.request("ping")
        lines = [await client.read_line() for _ in range(3)]
    assert lines[0] == lines[1] == b"fault_server: this line is not JSON-RPC"
    assert lines[2] is not None and json.loads(lines[2])["id"] == 1


async def test_call_log_is_written_on_receipt_before_the_answer(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with raw_server(fault_server_entry(call_log=log)) as client:
        await client.initialize()
        request_id = await client.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
        # A ping answered proves the call before it was read and logged.
        assert "result" in await client.call("ping")
        [record] = [json.loads(line) for line in log.read_text().splitlines()]
        assert record["id"] == request_id and record["tool"] == "sleep"
        assert record["pid"] == client.process.pid


async def test_initialize_with_pid_file_reports_the_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    async with raw_server(fault_server_entry(pid_file=pid_file)) as client:
        await client.initialize()
        assert int(pid_file.read_text()) == client.process.pid


def _kill_all(pids: list[int]) -> None:
    processes: list[psutil.Process] = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    kill_processes(processes)


async def _grandchildren(client: RawClient) -> tuple[JSONObject, list[int]]:
    answer = await client.call("tools/call", {"name": "pid", "arguments": {}})
    reported: JSONObject = json.loads(answer["result"]["content"][0]["text"])
    return reported, reported["grandchildren"]


async def test_grandchild_stays_in_the_group_and_outlives_the_server() -> None:
    grandchildren: list[int] = []
    try:
        async with raw_server(fault_server_entry(grandchild=True), stderr=subprocess.DEVNULL) as client:
            await client.initialize()
            reported, grandchildren = await _grandchildren(client)
            [pid] = grandchildren
            grandchild = psutil.Process(pid)
            assert os.getpgid(pid) == reported["pgid"]
            assert os.getsid(pid) == reported["sid"]
            await client.close_stdin()
            assert await client.wait_exit() == 0
        assert is_alive(grandchild)
        # It carries the environment, so a leak hunter can find it by marker.
        assert grandchild.environ().get(_MARK) == os.environ[_MARK]
        grandchild.terminate()
        await poll_until(lambda: not is_alive(grandchild), limit=10, what="the grandchild gone after SIGTERM")
    finally:
        _kill_all(grandchildren)


async def test_setsid_grandchild_escapes_to_its_own_session() -> None:
    grandchildren: list[int] = []
    try:
        entry = fault_server_entry(setsid_grandchild=True, ignore_sigterm=True)
        async with raw_server(entry, stderr=subprocess.DEVNULL) as client:
            await client.initialize()
            reported, grandchildren = await _grandchildren(client)
            [pid] = grandchildren
            assert os.getsid(pid) == pid != reported["sid"]
            assert os.getpgid(pid) != reported["pgid"]
        grandchild = psutil.Process(pid)
        assert grandchild.is_running()
        # The server's ignored SIGTERM is not inherited: the grandchild dies of it.
        grandchild.terminate()
        await poll_until(lambda: not is_alive(grandchild), limit=10, what="the grandchild gone after SIGTERM")
    finally:
        _kill_all(grandchildren)
