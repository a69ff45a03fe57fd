"""The process census finds what a program started, re-parented grandchildren included (R-KILL-1, R-KILL-4).

Host authors build their leak checks on it, as this suite does (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from process_support import plant_stale_cache_entry
from session_support import connected_session

from wave_actors.testing import (
    FAMILY_VARIABLE,
    FAULT_SERVER_PATH,
    describe,
    entry_command,
    fault_server_entry,
    is_alive,
    kill_processes,
    leftover_processes,
    process_census,
)

MARK_VARIABLE = "WAVE_ACTORS_CENSUS_TEST"


@contextmanager
def fault_server(mark: str, **behaviour: bool) -> Iterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """A fault server on pipes, marked with ``mark``, once it answered ``initialize``; its grandchildren's pids."""
    server = subprocess.Popen(
        entry_command(fault_server_entry(**behaviour)),  # type: ignore[arg-type]
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, MARK_VARIABLE: mark},
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        # Grandchildren are spawned before the server reads its first request: an answer means they exist.
        for request in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pid", "arguments": {}}},
        ):
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            answer = json.loads(server.stdout.readline())
        grandchildren: list[int] = json.loads(answer["result"]["content"][0]["text"])["grandchildren"]
        yield server, grandchildren
    finally:
        server.kill()
        server.wait()
        server.stdin.close()
        server.stdout.close()


def test_a_setsid_grandchild_that_left_the_tree_is_found_by_its_mark() -> None:
    mark = uuid.uuid4().hex
    with fault_server(mark, setsid_grandchild=True) as (server, [grandchild]):
        assert {process.pid for process in process_census()} >= {server.pid, grandchild}
    # The server is dead: its setsid grandchild was re-parented away from us and keeps running.
    assert grandchild not in {process.pid for process in process_census()}
    marked = process_census(MARK_VARIABLE, mark)
    assert [process.pid for process in marked] == [grandchild]
    assert process_census(MARK_VARIABLE, uuid.uuid4().hex, descendants=False) == []
    assert kill_processes(marked) == []
    assert not is_alive(grandchild)
    assert leftover_processes(MARK_VARIABLE, mark, settle=5.0) == []


def test_a_marked_process_whose_pid_was_reused_is_counted() -> None:
    # R-KILL-4: the census reads the process table now; psutil's cache of an earlier process
    # at the same pid (a long test run wraps pids around) hides nothing.
    mark = uuid.uuid4().hex
    with fault_server(mark, setsid_grandchild=True) as (server, [grandchild]):
        for pid in (server.pid, grandchild):
            plant_stale_cache_entry(pid)
        assert {process.pid for process in process_census(MARK_VARIABLE, mark, descendants=False)} == {
            server.pid,
            grandchild,
        }
    assert [process.pid for process in process_census(MARK_VARIABLE, mark, descendants=False)] == [grandchild]
    assert kill_processes([psutil.Process(grandchild)]) == []


def test_only_marked_processes_count_without_descendants() -> None:
    mark = uuid.uuid4().hex
    with fault_server(mark, grandchild=True) as (server, [grandchild]):
        unmarked = subprocess.Popen(entry_command(fault_server_entry()), stdin=subprocess.PIPE)
        try:
            everyone = {process.pid for process in process_census(MARK_VARIABLE, mark)}
            family = {process.pid for process in process_census(MARK_VARIABLE, mark, descendants=False)}
            assert everyone >= {server.pid, grandchild, unmarked.pid}
            assert family == {server.pid, grandchild}
        finally:
            unmarked.kill()
            unmarked.wait()
            assert unmarked.stdin is not None
            unmarked.stdin.close()
        kill_processes([psutil.Process(grandchild)])


def test_a_zombie_is_not_counted() -> None:
    child = subprocess.Popen(["true"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        assert not is_alive(child.pid)
        assert child.pid not in {process.pid for process in process_census()}
    finally:
        child.wait()


async def test_every_server_the_runtime_spawns_carries_the_family_variable(tmp_path: Path) -> None:
    async with connected_session(tmp_path, {"a": fault_server_entry(), "b": fault_server_entry()}):
        # Other programs on the machine carry the variable too: only the census of ours is looked at.
        servers = [p for p in process_census() if str(FAULT_SERVER_PATH) in p.cmdline()]
        families = {server.environ()[FAMILY_VARIABLE] for server in servers}
        assert len(servers) == 2 and len(families) == 2  # one fresh value per spawn
        assert {p.pid for p in servers} <= {p.pid for p in process_census(FAMILY_VARIABLE, descendants=False)}


def test_a_mark_needs_its_variable() -> None:
    with pytest.raises(ValueError, match="mark_variable"):
        process_census(mark="orphan")
    with pytest.raises(ValueError, match="counts nothing"):
        process_census(descendants=False)


def test_describe_names_the_pid_and_the_command() -> None:
    me = psutil.Process()
    assert describe(me).startswith(f"pid {me.pid}: ") and "python" in describe(me)
