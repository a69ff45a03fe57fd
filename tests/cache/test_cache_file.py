"""The tool snapshot cache on disk: a file per snapshot, atomic, never lost between processes, tolerant of
anything on disk (R-CACHE-1..5)."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings, strategies as st

from wave_actors import ServerConfig, ServerState, load_config
from wave_actors._cache import (
    CACHE_DIRECTORY_NAME,
    EMPTY_CACHE,
    CachedServer,
    ToolCache,
    ToolCacheWriter,
    cache_directory,
    read_cache,
    update_cache,
)
from wave_actors._cache.file import entry_path, workdir_directory
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


def write(directory: Path, *updates: CachedServer, workdir: str = WORKDIR, configured: Any = None) -> None:
    keys = [update.key for update in updates] if configured is None else configured
    update_cache(directory, workdir=workdir, configured=keys, updates=updates)


def read(directory: Path, *keys: tuple[str, str], workdir: str = WORKDIR, shared: bool = False) -> ToolCache:
    return read_cache(directory, workdir=workdir, keys=keys, shared=shared)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return cache_directory(tmp_path / "home")


def test_the_cache_lives_in_the_home_directory(tmp_path: Path) -> None:
    assert cache_directory(tmp_path) == tmp_path / "mcp-tools-cache" == tmp_path / CACHE_DIRECTORY_NAME


def test_a_write_round_trips_and_creates_the_home(directory: Path) -> None:
    # R-CACHE-1: keyed by server name and fingerprint; one file each, readable by its owner only.
    write(directory, entry("files", tools=("read_file", "write_file")), entry("files", fingerprint="f2", tools=()))
    cache = read(directory, ("files", "f1"), ("files", "f2"), ("files", "other"))
    files = cache.lookup("files", "f1")
    assert files is not None and [tool.name for tool in files.tools] == ["read_file", "write_file"]
    assert files.tools[0] == ServerTool("read_file", "read_file things", {"type": "object"}, True)
    assert files.last_connected == 1767225600.5 and files.workdir == WORKDIR
    assert cache.lookup("files", "f2") is not None and cache.lookup("files", "other") is None
    path = entry_path(directory, WORKDIR, "files", "f1")
    assert path.is_file() and os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(directory).st_mode & 0o777 == 0o700
    assert sorted(os.listdir(workdir_directory(directory, WORKDIR))) == sorted(
        [path.name, entry_path(directory, WORKDIR, "files", "f2").name]
    )


def test_a_reader_reads_the_snapshots_of_its_own_servers_only(directory: Path) -> None:
    # R-CACHE-6: what other servers and other projects cached never costs a reader a byte.
    write(directory, entry("a"), entry("b"))
    write(directory, entry("a", workdir="/projects/beta"), workdir="/projects/beta")
    assert set(read(directory, ("a", "f1")).entries) == {("a", "f1")}
    assert set(read(directory, ("a", "f1"), workdir="/projects/beta").entries) == {("a", "f1")}
    assert read(directory, ("b", "f1"), workdir="/projects/gamma") is EMPTY_CACHE


def test_what_a_listing_skipped_is_recorded_with_its_tools(directory: Path) -> None:
    # R-CACHE-1 with R-TOOL-9: the tools a listing skipped as invalid are part of the snapshot.
    skipped = ("tool 'broken' skipped: the MCP SDK rejects its listing: inputSchema.type: Input should be 'object'",)
    write(directory, attrs.evolve(entry("files"), warnings=skipped))
    cached = read(directory, ("files", "f1")).lookup("files", "f1")
    assert cached is not None and cached.warnings == skipped
    write(directory, entry("files"))  # a listing that skipped nothing clears them
    cleared = read(directory, ("files", "f1")).lookup("files", "f1")
    assert cleared is not None and cleared.warnings == ()


def test_a_new_snapshot_replaces_the_old_one_and_an_empty_list_overwrites(directory: Path) -> None:
    write(directory, entry("files", tools=("a", "b")))
    write(directory, entry("files", tools=()))
    cached = read(directory, ("files", "f1")).lookup("files", "f1")
    assert cached is not None and cached.tools == ()


def test_pruning_removes_only_the_writers_workdir_entries_that_are_no_longer_configured(directory: Path) -> None:
    # R-CACHE-4: another project's snapshots survive whatever this project does.
    beta = "/projects/beta"
    write(directory, entry("a", fingerprint="a1"), entry("b", fingerprint="b1"))
    write(
        directory, entry("a", fingerprint="a9", workdir=beta), entry("c", fingerprint="c9", workdir=beta), workdir=beta
    )
    write(directory, entry("a", fingerprint="a2"), configured=[("a", "a2")])
    assert set(read(directory, ("a", "a1"), ("b", "b1"), ("a", "a2")).entries) == {("a", "a2")}
    assert set(read(directory, ("a", "a9"), ("c", "c9"), workdir=beta).entries) == {("a", "a9"), ("c", "c9")}
    assert len(os.listdir(workdir_directory(directory, WORKDIR))) == 1


def test_an_update_for_a_server_no_longer_configured_is_dropped(directory: Path) -> None:
    write(directory, entry("gone"), configured=[])
    assert read(directory, ("gone", "f1")) is EMPTY_CACHE


def test_a_snapshot_too_big_for_one_file_is_not_written(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # R-CACHE-6: no single parse or encode of the cache may hold the GIL for long.
    monkeypatch.setattr("wave_actors._cache.codec.MAX_ENTRY_BYTES", 4096)  # where an entry is encoded
    write(directory, entry("small"), entry("big", tools=tuple(f"tool_{index}" for index in range(200))))
    assert set(read(directory, ("small", "f1"), ("big", "f1")).entries) == {("small", "f1")}


# Anything on disk is no entry, silently, and the next write repairs it (R-CACHE-3).


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _huge(path: Path) -> None:
    with open(path, "wb") as file:
        file.truncate(64 * 1024 * 1024)  # sparse: too big to read, nothing to write


def _elsewhere(path: Path) -> None:
    other = path.parents[2] / "elsewhere.json"  # a file of the user's, beside the cache
    other.write_text(json.dumps({"format": 2, **json.loads(entry_json())}))
    path.symlink_to(other)


def entry_json() -> str:
    return json.dumps(
        {"server": "files", "fingerprint": "f1", "workdir": WORKDIR, "last_connected": 1.0, "tools": [{"name": "t"}]}
    )


CORRUPT: dict[str, bytes | Callable[[Path], None]] = {
    "empty": b"",
    "truncated": b'{"format":2,"server":"files","fingerprint":"f1","workdir":"/projects/al',
    "binary": bytes(range(256)),
    "not-utf8": b'{"format":2,"server":"files","x":"\xff"}',
    "array": b"[1, 2, 3]",
    "null": b"null",
    "other-format": b'{"format":1,"servers":[]}',
    "no-format": entry_json().encode(),
    "another-key": json.dumps({"format": 2, **json.loads(entry_json()), "server": "other"}).encode(),
    "another-workdir": json.dumps({"format": 2, **json.loads(entry_json()), "workdir": "/elsewhere"}).encode(),
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "fifo": _fifo,
    "directory": _directory,
    "huge": _huge,
    "symbolic-link": _elsewhere,
}


@pytest.mark.parametrize("variant", list(CORRUPT))
def test_a_corrupt_entry_is_no_entry_and_the_next_write_repairs_it(
    directory: Path, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = entry_path(directory, WORKDIR, "files", "f1")
    path.parent.mkdir(parents=True, mode=0o700)
    content = CORRUPT[variant]
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        content(path)
    with caplog.at_level(logging.DEBUG, logger="wave_actors._cache"):
        assert read(directory, ("files", "f1")) is EMPTY_CACHE
    assert any("ignored" in record.getMessage() for record in caplog.records)
    assert all(record.levelno == logging.DEBUG for record in caplog.records)
    if variant == "directory":
        path.rmdir()  # a directory in an entry's place is never removed: it may hold anything
    write(directory, entry("files"))
    assert read(directory, ("files", "f1")).lookup("files", "f1") is not None
    if variant == "symbolic-link":  # the link was replaced, what it pointed to left as it was
        other = path.parents[2] / "elsewhere.json"
        assert not path.is_symlink() and other.read_text() == json.dumps({"format": 2, **json.loads(entry_json())})


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
    ],
)
def test_an_entry_of_the_wrong_shape_is_skipped_alone(directory: Path, bad: dict[str, object]) -> None:
    write(directory, entry("ok", fingerprint="f"))
    path = entry_path(directory, WORKDIR, "s", "f")
    path.write_text(json.dumps({"format": 2, **bad}))
    assert set(read(directory, ("s", "f"), ("ok", "f")).entries) == {("ok", "f")}


def test_a_missing_cache_is_empty_without_a_word(directory: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="wave_actors._cache"):
        assert read(directory, ("files", "f1")) is EMPTY_CACHE
    assert not caplog.records


# Processes sharing the cache (R-CACHE-4).

_WRITER = """
import sys
from pathlib import Path
from wave_actors._cache import CachedServer, update_cache
from wave_actors._listing import ServerTool

directory, name, count, together = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "together"
workdir = "/projects/shared" if together else f"/projects/{name}"
print("ready", flush=True)
sys.stdin.readline()
for index in range(count):
    entry = CachedServer(f"{name}-{index % 5}", "f", workdir, float(index), (ServerTool(f"t{index}"),))
    configured = [(f"{writer}-{server}", "f") for writer in sys.argv[5:] for server in range(5)]
    update_cache(directory, workdir=workdir, configured=configured, updates=[entry])
print("done", flush=True)
"""

WRITES_PER_PROCESS = 100
WRITERS = ("alpha", "beta", "gamma", "delta")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workdirs", ["together", "apart"])
def test_four_processes_writing_at_once_lose_no_snapshot(directory: Path, workdirs: str) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(directory), name, str(WRITES_PER_PROCESS), workdirs, *WRITERS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in WRITERS
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        for writer in writers:  # all start together
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        outputs = [writer.communicate(timeout=100)[0] for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    assert outputs == ["done\n"] * len(WRITERS), [writer.returncode for writer in writers]
    for name in WRITERS:
        workdir = "/projects/shared" if workdirs == "together" else f"/projects/{name}"
        keys = [(f"{name}-{server}", "f") for server in range(5)]
        cache = read(directory, *keys, workdir=workdir)
        assert set(cache.entries) == set(keys)
        last = cache.lookup(f"{name}-4", "f")
        assert last is not None and last.last_connected == WRITES_PER_PROCESS - 1  # each one's latest


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


def test_a_writer_killed_at_any_moment_leaves_whole_entries(directory: Path) -> None:
    write(directory, entry("s0", fingerprint="f"))
    chance = random.Random(15)
    keys = [(f"s{index}", "f") for index in range(7)]
    for _ in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", _BUSY_WRITER, str(directory)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
            for _ in range(chance.randint(1, 12)):  # a random moment: after some number of whole writes
                assert writer.stdout.readline()
            writer.send_signal(signal.SIGKILL)
        finally:
            writer.kill()
            writer.wait()
        home = workdir_directory(directory, WORKDIR)
        for name in os.listdir(home):
            if name.endswith(".json"):
                assert json.loads((home / name).read_bytes())["format"] == 2  # whole JSON, whatever the moment
        assert read(directory, *keys).entries


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


async def _observe(directory: Path, workdir: str, *servers: tuple[ServerConfig, Any]) -> ToolCacheWriter:
    async with trio.open_nursery() as nursery:  # leaving it waits for the writer
        cache = ToolCacheWriter(
            directory,
            workdir,
            EMPTY_CACHE,
            nursery=nursery,
            configured=lambda: [(c.name, c.fingerprint) for c, _ in servers],
        )
        cache.observe(servers)
    return cache


async def test_an_owner_reconfigured_without_end_keeps_the_snapshots_of_its_current_entries_only(
    tmp_path: Path,
) -> None:
    # R-HOST-3: a project's group lives as long as the host; each new entry it connects must not stay in memory.
    directory = cache_directory(tmp_path / "home")
    changing = [
        load_config(tmp_path, home=tmp_path, constructor={"a": {"command": "server", "args": [str(n)]}})
        for n in range(50)
    ]
    async with trio.open_nursery() as nursery:
        writer = ToolCacheWriter(directory, WORKDIR, EMPTY_CACHE, nursery=nursery, configured=list)
        for index, loaded in enumerate(changing):
            config = loaded.servers["a"]
            writer.observe([_connected(config, "search", at=float(index))])
            assert set(writer.cache.entries) == {("a", config.fingerprint)}
        writer.observe([])  # its last server removed: kept until the next snapshot is recorded
        other = load_config(tmp_path, home=tmp_path, constructor={"b": {"command": "server"}}).servers["b"]
        writer.observe([_connected(other, "read")])
        assert set(writer.cache.entries) == {("b", other.fingerprint)}


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
    directory = cache_directory(home)
    servers = [_connected(config, "search") for config in loaded.servers.values()]
    trio.run(_observe, directory, loaded.workdir, *servers)
    keys = [(config.name, config.fingerprint) for config in loaded.servers.values()]
    assert len(read(directory, *keys, workdir=loaded.workdir).entries) == 2
    home_of_workdir = workdir_directory(directory, loaded.workdir)
    data = "".join((home_of_workdir / name).read_bytes().decode("ascii") for name in os.listdir(home_of_workdir))
    for secret in (env, header, query, password):
        assert secret not in data and json.dumps(secret)[1:-1] not in data


async def test_a_session_writes_after_each_connect_and_refresh_only(tmp_path: Path) -> None:
    # R-CACHE-1: a new connect (new time) or a new tool list is written; an unchanged state is not.
    [config] = load_config(tmp_path, home=tmp_path, constructor={"s": {"command": "server"}}).servers.values()
    directory = cache_directory(tmp_path)
    key = ("s", config.fingerprint)
    workdir = str(tmp_path)
    first = _connected(config, "a", at=1.0)
    await _observe(directory, workdir, first)
    assert [tool.name for tool in read(directory, key, workdir=workdir).entries[key].tools] == ["a"]
    async with trio.open_nursery() as nursery:
        cache = ToolCacheWriter(directory, workdir, EMPTY_CACHE, nursery=nursery, configured=lambda: [key])
        cache.observe([first])
        refreshed = (config, attrs.evolve(first[1], tools=(_Tool("a"), _Tool("b"))))
        cache.observe([refreshed])
        cache.observe([refreshed])
        cache.observe([(config, attrs.evolve(refreshed[1], state=ServerState.DISCONNECTED))])
        assert [tool.name for tool in cache.cache.entries[key].tools] == ["a", "b"]
    assert [tool.name for tool in read(directory, key, workdir=workdir).entries[key].tools] == ["a", "b"]
    emptied = (config, attrs.evolve(first[1], last_connected=2.0, tools=()))
    await _observe(directory, workdir, emptied)
    assert read(directory, key, workdir=workdir).entries[key].tools == ()


def test_sessions_of_a_workdir_share_one_read_and_never_a_stale_one(directory: Path) -> None:
    # R-HOST-3: a thousand idle sessions of one project hold one copy of its tool schemas.
    write(directory, entry("files"))
    first = read(directory, ("files", "f1"), shared=True).lookup("files", "f1")
    assert read(directory, ("files", "f1"), shared=True).lookup("files", "f1") is first
    assert read(directory, ("files", "f1")).lookup("files", "f1") is not first  # unshared reads parse afresh
    write(directory, entry("files", tools=("a", "b")))
    changed = read(directory, ("files", "f1"), shared=True).lookup("files", "f1")
    assert changed is not first
    assert changed is not None and [tool.name for tool in changed.tools] == ["a", "b"]
