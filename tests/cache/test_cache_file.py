"""The tool snapshot cache file: atomic, shared safely between processes, tolerant of anything on disk (R-CACHE-1..5)."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings, strategies as st

from wave_actors import ServerConfig, ServerState, load_config
from wave_actors._cache import (
    CACHE_FILE_NAME,
    EMPTY_CACHE,
    CachedServer,
    ToolCacheWriter,
    cache_file,
    read_cache,
    update_cache,
)
from wave_actors._listing import ServerTool

WORKDIR = "/projects/alpha"


def entry(
    server: str, *, workdir: str = WORKDIR, fingerprint: str = "f1", tools: tuple[str, ...] = ("t",)
) -> CachedServer:
    return CachedServer(
        server,
        fingerprint,
        workdir,
        1767225600.5,
        tuple(ServerTool(name, f"{name} things", {"type": "object"}, name.startswith("read")) for name in tools),
    )


def write(path: Path, *updates: CachedServer, workdir: str = WORKDIR, configured: Any = None) -> None:
    keys = [update.key for update in updates] if configured is None else configured
    update_cache(path, workdir=workdir, configured=keys, updates=updates)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return cache_file(tmp_path / "home")


def test_the_cache_lives_in_the_home_directory(tmp_path: Path) -> None:
    assert cache_file(tmp_path) == tmp_path / "mcp-tools-cache.json" == tmp_path / CACHE_FILE_NAME


def test_a_write_round_trips_and_creates_the_home(path: Path) -> None:
    # R-CACHE-1: keyed by server name and fingerprint.
    write(path, entry("files", tools=("read_file", "write_file")), entry("files", fingerprint="f2", tools=()))
    cache = read_cache(path)
    files = cache.lookup("files", "f1")
    assert files is not None and [tool.name for tool in files.tools] == ["read_file", "write_file"]
    assert files.tools[0] == ServerTool("read_file", "read_file things", {"type": "object"}, True)
    assert files.last_connected == 1767225600.5 and files.workdir == WORKDIR
    assert cache.lookup("files", "f2") is not None and cache.lookup("files", "other") is None
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_what_a_listing_skipped_is_recorded_with_its_tools(path: Path) -> None:
    # R-CACHE-1 with R-TOOL-9: the tools a listing skipped as invalid are part of the snapshot.
    skipped = ("tool 'broken' skipped: the MCP SDK rejects its listing: inputSchema.type: Input should be 'object'",)
    write(path, attrs.evolve(entry("files"), warnings=skipped))
    cached = read_cache(path).lookup("files", "f1")
    assert cached is not None and cached.warnings == skipped
    write(path, entry("files"))  # a listing that skipped nothing clears them
    cleared = read_cache(path).lookup("files", "f1")
    assert cleared is not None and cleared.warnings == ()


def test_an_entry_written_before_warnings_were_recorded_reads_without_any(path: Path) -> None:
    older = {"server": "ok", "fingerprint": "f", "workdir": WORKDIR, "last_connected": 2.0, "tools": [{"name": "t"}]}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "servers": [older]}))
    cached = read_cache(path).lookup("ok", "f")
    assert cached is not None and cached.warnings == ()


def test_a_new_snapshot_replaces_the_old_one_and_an_empty_list_overwrites(path: Path) -> None:
    write(path, entry("files", tools=("a", "b")))
    write(path, entry("files", tools=()))
    cached = read_cache(path).lookup("files", "f1")
    assert cached is not None and cached.tools == ()


def test_pruning_removes_only_the_writers_workdir_entries_that_are_no_longer_configured(path: Path) -> None:
    # R-CACHE-4: another project's snapshots survive whatever this project does.
    beta = "/projects/beta"
    write(path, entry("a", fingerprint="a1"), entry("b", fingerprint="b1"))
    write(path, entry("a", fingerprint="a9", workdir=beta), entry("c", fingerprint="c9", workdir=beta), workdir=beta)
    write(path, entry("a", fingerprint="a2"), configured=[("a", "a2")])
    assert set(read_cache(path).entries) == {("a", "a2"), ("a", "a9"), ("c", "c9")}
    assert set(read_cache(path, workdir=beta).entries) == {("a", "a9"), ("c", "c9")}
    assert set(read_cache(path, workdir=WORKDIR).entries) == {("a", "a2")}


def test_an_update_for_a_server_no_longer_configured_is_dropped(path: Path) -> None:
    write(path, entry("gone"), configured=[])
    assert read_cache(path) == EMPTY_CACHE


# Anything on disk is an empty cache, silently, and the next write repairs it (R-CACHE-3).


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _huge(path: Path) -> None:
    with open(path, "wb") as file:
        file.truncate(64 * 1024 * 1024)  # sparse: too big to read, nothing to write


CORRUPT: dict[str, bytes | Callable[[Path], None]] = {
    "empty": b"",
    "truncated": b'{"format":1,"servers":[{"server":"files","fingerprint":"f1","workdir":"/projects/al',
    "binary": bytes(range(256)),
    "not-utf8": b'{"format":1,"servers":[],"x":"\xff"}',
    "array": b"[1, 2, 3]",
    "null": b"null",
    "other-format": b'{"format":2,"servers":[]}',
    "no-format": b'{"servers":[]}',
    "servers-object": b'{"format":1,"servers":{}}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "fifo": _fifo,
    "directory": _directory,
    "huge": _huge,
}


@pytest.mark.parametrize("variant", list(CORRUPT))
def test_a_corrupt_cache_is_an_empty_cache_and_the_next_write_repairs_it(
    path: Path, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    path.parent.mkdir(parents=True)
    content = CORRUPT[variant]
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        content(path)
    with caplog.at_level(logging.DEBUG, logger="wave_actors._cache"):
        assert read_cache(path) is EMPTY_CACHE
    assert any("ignored" in record.getMessage() for record in caplog.records)
    assert all(record.levelno == logging.DEBUG for record in caplog.records)
    write(path, entry("files"))
    assert read_cache(path).lookup("files", "f1") is not None


@pytest.mark.parametrize(
    "bad",
    [
        {"server": 1, "fingerprint": "f", "workdir": WORKDIR, "last_connected": 1.0, "tools": []},
        {"server": "s", "fingerprint": "f", "workdir": WORKDIR, "last_connected": "yesterday", "tools": []},
        {"server": "s", "fingerprint": "f", "workdir": WORKDIR, "last_connected": True, "tools": []},
        {"server": "s", "fingerprint": "f", "workdir": WORKDIR, "last_connected": 1.0, "tools": [{"name": 5}]},
        {
            "server": "s",
            "fingerprint": "f",
            "workdir": WORKDIR,
            "last_connected": 1.0,
            "tools": [{"name": "t", "input_schema": []}],
        },
        {"server": "s", "fingerprint": "f", "last_connected": 1.0, "tools": []},
        {"server": "s", "fingerprint": "f", "workdir": WORKDIR, "last_connected": 1.0, "tools": [], "warnings": "x"},
        {"server": "s", "fingerprint": "f", "workdir": WORKDIR, "last_connected": 1.0, "tools": [], "warnings": [1]},
        "a string",
    ],
)
def test_an_entry_of_the_wrong_shape_is_skipped_alone(path: Path, bad: object) -> None:
    good = {"server": "ok", "fingerprint": "f", "workdir": WORKDIR, "last_connected": 2.0, "tools": [{"name": "t"}]}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "servers": [bad, good]}))
    assert set(read_cache(path).entries) == {("ok", "f")}


def test_a_missing_cache_is_empty_without_a_word(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="wave_actors._cache"):
        assert read_cache(path) is EMPTY_CACHE
    assert not caplog.records


# Two processes, one file (R-CACHE-4).

_WRITER = """
import sys
from pathlib import Path
from wave_actors._cache import CachedServer, update_cache
from wave_actors._listing import ServerTool

path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
workdir = f"/projects/{name}"
configured = []
print("ready", flush=True)
sys.stdin.readline()
for index in range(count):
    key = (f"{name}-{index}", "f")
    configured.append(key)
    entry = CachedServer(key[0], "f", workdir, float(index), (ServerTool("t"),))
    update_cache(path, workdir=workdir, configured=configured, updates=[entry])
print("done", flush=True)
"""

WRITES_PER_PROCESS = 200


@pytest.mark.timeout(120)
def test_two_processes_writing_at_once_lose_no_entry(path: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), name, str(WRITES_PER_PROCESS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        for writer in writers:  # both start together
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        outputs = [writer.communicate(timeout=100)[0] for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    assert outputs == ["done\n", "done\n"], [writer.returncode for writer in writers]
    entries = read_cache(path).entries
    expected = {(f"{name}-{index}", "f") for name in ("alpha", "beta") for index in range(WRITES_PER_PROCESS)}
    assert set(entries) == expected


# A writer killed mid-write (R-CACHE-4).

_STUCK_WRITER = """
import os, signal, sys
from pathlib import Path
from wave_actors._cache import CachedServer, update_cache
from wave_actors._listing import ServerTool

def stuck(descriptor):
    print("writing", flush=True)  # the temporary file is written, not yet flushed nor renamed
    signal.pause()  # stuck here until the test kills it

os.fsync = stuck
entry = CachedServer("new", "f", "/projects/alpha", 2.0, (ServerTool("t"),))
update_cache(Path(sys.argv[1]), workdir="/projects/alpha", configured=[("old", "f"), ("new", "f")], updates=[entry])
"""


def test_a_writer_killed_mid_write_leaves_the_old_file_readable_and_the_lock_free(path: Path) -> None:
    write(path, entry("old", fingerprint="f"))
    before = path.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", _STUCK_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    assert path.read_bytes() == before
    assert set(read_cache(path).entries) == {("old", "f")}
    leftovers = [name for name in os.listdir(path.parent) if name.endswith(".tmp")]
    assert len(leftovers) == 1  # the dead writer's temporary file: it did die mid-write
    started = time.monotonic()
    update_cache(
        path,
        workdir=WORKDIR,
        configured=[("old", "f"), ("next", "f")],
        updates=[entry("next", fingerprint="f")],
        lock_timeout=5,
    )
    assert time.monotonic() - started < 1  # the kernel released the dead writer's lock
    assert set(read_cache(path).entries) == {("old", "f"), ("next", "f")}
    assert not [name for name in os.listdir(path.parent) if name.endswith(".tmp")]  # cleared under the lock


_BUSY_WRITER = """
import sys
from pathlib import Path
from wave_actors._cache import CachedServer, update_cache
from wave_actors._listing import ServerTool

tools = tuple(ServerTool(f"t{i}", "d" * 2000, {"type": "object"}) for i in range(100))
print("ready", flush=True)
index = 0
while True:
    index += 1
    entry = CachedServer(f"s{index % 7}", "f", "/projects/alpha", float(index), tools[: index % 100])
    update_cache(Path(sys.argv[1]), workdir="/projects/alpha", configured=[(f"s{i}", "f") for i in range(7)], updates=[entry])
    print(index, flush=True)
"""


def test_a_writer_killed_at_any_moment_leaves_a_whole_file(path: Path) -> None:
    write(path, entry("s0", fingerprint="f"))
    chance = random.Random(15)
    for _ in range(5):
        writer = subprocess.Popen([sys.executable, "-c", _BUSY_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
            for _ in range(chance.randint(1, 12)):  # a random moment: after some number of whole writes
                assert writer.stdout.readline()
            writer.send_signal(signal.SIGKILL)
        finally:
            writer.kill()
            writer.wait()
        data = json.loads(path.read_bytes())  # whole JSON, whatever the moment
        assert data["format"] == 1 and read_cache(path).entries


# No secrets (R-CACHE-5).


@attrs.frozen
class _Tool:
    name: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.field(factory=dict)
    read_only_hint: bool | None = None


@attrs.frozen
class _State:
    state: ServerState
    last_connected: float | None
    tools: tuple[_Tool, ...]
    warnings: tuple[str, ...] = ()


def _connected(config: ServerConfig, *tools: str, at: float = 5.0) -> tuple[ServerConfig, Any]:
    return config, _State(ServerState.CONNECTED, at, tuple(_Tool(name) for name in tools))


async def _observe(path: Path, workdir: str, *servers: tuple[ServerConfig, Any]) -> ToolCacheWriter:
    async with trio.open_nursery() as nursery:  # leaving it waits for the writer
        cache = ToolCacheWriter(
            path,
            workdir,
            EMPTY_CACHE,
            nursery=nursery,
            configured=lambda: [(c.name, c.fingerprint) for c, _ in servers],
        )
        cache.observe(servers)
    return cache


_secrets = st.text(st.characters(codec="utf-8", categories=("L", "N")), min_size=12, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=_secrets, header=_secrets, query=_secrets, password=_secrets)
def test_no_secret_of_a_configuration_ever_reaches_the_cache(
    tmp_path_factory: pytest.TempPathFactory, env: str, header: str, query: str, password: str
) -> None:
    home = tmp_path_factory.mktemp("home")
    loaded = load_config(
        home,
        home=home,
        constructor={
            "local": {"command": "server", "env": {"TOKEN": env}},
            "remote": {"url": f"https://user:{password}@mcp.example/mcp?key={query}", "headers": {"X-Key": header}},
        },
    )
    path = cache_file(home)
    servers = [_connected(config, "search") for config in loaded.servers.values()]
    trio.run(_observe, path, loaded.workdir, *servers)
    data = path.read_bytes().decode("ascii")
    assert len(read_cache(path).entries) == 2
    for secret in (env, header, query, password):
        assert secret not in data and json.dumps(secret)[1:-1] not in data


async def test_a_session_writes_after_each_connect_and_refresh_only(tmp_path: Path) -> None:
    # R-CACHE-1: a new connect (new time) or a new tool list is written; an unchanged state is not.
    [config] = load_config(tmp_path, home=tmp_path, constructor={"s": {"command": "server"}}).servers.values()
    path = cache_file(tmp_path)
    first = _connected(config, "a", at=1.0)
    await _observe(path, str(tmp_path), first)
    assert [tool.name for tool in read_cache(path).entries[("s", config.fingerprint)].tools] == ["a"]
    async with trio.open_nursery() as nursery:
        cache = ToolCacheWriter(
            path, str(tmp_path), EMPTY_CACHE, nursery=nursery, configured=lambda: [("s", config.fingerprint)]
        )
        cache.observe([first])
        refreshed = (config, attrs.evolve(first[1], tools=(_Tool("a"), _Tool("b"))))
        cache.observe([refreshed])
        cache.observe([refreshed])
        cache.observe([(config, attrs.evolve(refreshed[1], state=ServerState.DISCONNECTED))])
        assert [tool.name for tool in cache.cache.entries[("s", config.fingerprint)].tools] == ["a", "b"]
    assert [tool.name for tool in read_cache(path).entries[("s", config.fingerprint)].tools] == ["a", "b"]
    emptied = (config, attrs.evolve(first[1], last_connected=2.0, tools=()))
    await _observe(path, str(tmp_path), emptied)
    assert read_cache(path).entries[("s", config.fingerprint)].tools == ()


def test_sessions_of_a_workdir_share_one_read_and_never_a_stale_one(path: Path) -> None:
    # R-HOST-3: a thousand idle sessions of one project hold one copy of its tool schemas.
    write(path, entry("files"))
    first = read_cache(path, workdir=WORKDIR, shared=True)
    assert read_cache(path, workdir=WORKDIR, shared=True) is first
    assert read_cache(path, workdir=WORKDIR) is not first  # unshared reads parse afresh
    write(path, entry("files", tools=("a", "b")))
    changed = read_cache(path, workdir=WORKDIR, shared=True)
    assert changed is not first
    files = changed.lookup("files", "f1")
    assert files is not None and [tool.name for tool in files.tools] == ["a", "b"]
