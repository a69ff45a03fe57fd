"""Hostile configuration files: loading never raises, never stalls, never reads without bound (R-CFG-4, R-CFG-11).

A repository chooses its ``.mcp.json`` and its ``.wave/settings.local.json``;
a careless user may leave anything in ``~/.wave/mcp.json``. Whatever they hold
or are (a FIFO, a link to ``/dev/zero``, 20 MB, 100 000 levels of nesting),
the result is a diagnostic naming the file and the reason, and the other
sources still load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import trio
from config_support import Layout, write

from wave_actors._config import MAX_FILE_BYTES, LoadedConfig, Severity, Source, sources as sources_module
from wave_actors._config.sources import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH, read_file_bytes

DEEP = 100_000
SERVERS = {"mcpServers": {"s": {"command": "x"}}}


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / "project" / ".wave").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    return Layout(tmp_path / "project", tmp_path / "home")


def the_other_file(layout: Layout, which: str) -> Path:
    """A good file in the other source, which must still load."""
    return layout.user_file if which == "project" else layout.project_file


def error_for(loaded: LoadedConfig, path: Path) -> str:
    """The one error diagnostic about ``path``; its message."""
    errors = [d for d in loaded.diagnostics if d.severity is Severity.ERROR and d.origin == str(path)]
    assert len(errors) == 1, loaded.diagnostics
    return errors[0].message


def load_in_child(layout: Layout, *, trust: str = "all", timeout: float = 30.0) -> dict[str, object]:
    """``load_config`` in a child process with 1 GiB of address space and a time bound.

    For files that the loader must never read (``/dev/zero``) or never open
    (a FIFO): a loader that did would exhaust memory or block, and only a
    child can be bounded and killed safely.
    """
    script = (
        "import json, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from wave_actors._config import load_config\n"
        "workdir, home, trust = sys.argv[1:]\n"
        "loaded = load_config(workdir, home=home, trust=trust, environ={})\n"
        "diagnostics = [[d.severity.value, d.origin, d.message] for d in loaded.diagnostics]\n"
        "print(json.dumps({'servers': sorted(loaded.servers), 'diagnostics': diagnostics}))\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", script, str(layout.workdir), str(layout.home), trust],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"load_config did not return within {timeout:g} s (blocked on a file?)")
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


# R-CFG-4: nesting and numbers that break the JSON parser ------------------------


def deep_text() -> str:
    return '{"mcpServers": {"s": ' + "[" * DEEP + "]" * DEEP + "}}"


def long_number_text() -> str:
    return '{"mcpServers": {"s": {"command": "x", "tool_timeout_ms": ' + "9" * 5000 + "}}}"


@pytest.mark.parametrize("which", ["project", "user"])
@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(deep_text, "nested too deeply", id="nested-100000-deep"),
        pytest.param(lambda: "[" * DEEP, "nested too deeply", id="unclosed-100000-deep"),
        pytest.param(long_number_text, "digits", id="5000-digit-number"),
        pytest.param(lambda: '{"mcpServers": {}, "x": -' + "1" * 5000 + "}", "digits", id="negative-5000-digits"),
        pytest.param(lambda: '{"mcpServers": {}, "x": NaN}', "NaN", id="nan"),
        pytest.param(lambda: '{"mcpServers": {}, "x": -Infinity}', "Infinity", id="infinity"),
    ],
)
def test_r_cfg_4_file_that_breaks_the_parser_is_a_diagnostic_and_other_sources_load(
    layout: Layout, which: str, content: object, reason: str
) -> None:
    """R-CFG-4: a RecursionError or ValueError of the parser is a diagnostic naming the file, never raised."""
    bad = layout.file(which)
    bad.write_text(content(), encoding="utf-8")  # type: ignore[operator]
    write(the_other_file(layout, which), {"mcpServers": {"other": {"command": "y"}}})
    loaded = layout.load(constructor={"c": {"command": "z"}})
    assert set(loaded.servers) == {"other", "c"}
    message = error_for(loaded, bad)
    assert reason in message and "skipped" in message


def test_r_cfg_4_nesting_up_to_the_limit_is_fine_and_one_more_level_is_not(layout: Layout) -> None:
    """R-CFG-11: the nesting limit is exact, so files of real shapes never meet it."""

    def nested(depth: int) -> str:
        # mcpServers, then the entry, then a field of unknown name holding lists.
        inner = "[" * (depth - 3) + "]" * (depth - 3)
        return '{"mcpServers": {"s": {"command": "x", "extra": ' + inner + "}}}"

    layout.project_file.write_text(nested(MAX_NESTING_DEPTH), encoding="utf-8")
    assert list(layout.load().servers) == ["s"]
    layout.project_file.write_text(nested(MAX_NESTING_DEPTH + 1), encoding="utf-8")
    assert "nested too deeply" in error_for(layout.load(), layout.project_file)


def test_r_cfg_4_brackets_inside_strings_do_not_count_as_nesting(layout: Layout) -> None:
    """R-CFG-11: the depth check reads JSON strings as strings, escaped quotes included."""
    write(layout.project_file, {"mcpServers": {"s": {"command": "x", "args": ['[\\"' + "[{" * 500]}}})
    assert list(layout.load().servers) == ["s"]


def test_r_cfg_4_integer_digit_limit_is_exact(layout: Layout) -> None:
    """R-CFG-11: long integers are refused before Python spends quadratic time converting them."""
    write(layout.project_file, {"mcpServers": {}, "x": int("9" * MAX_INTEGER_DIGITS)})
    assert layout.load().diagnostics == ()
    write(layout.project_file, {"mcpServers": {}, "x": int("9" * (MAX_INTEGER_DIGITS + 1))})
    assert "digits" in error_for(layout.load(), layout.project_file)


@pytest.mark.parametrize(
    "content",
    [pytest.param(deep_text, id="nested-100000-deep"), pytest.param(long_number_text, id="5000-digit-number")],
)
def test_r_cfg_4_settings_file_that_breaks_the_parser_approves_nothing_with_a_diagnostic(
    layout: Layout, content: object
) -> None:
    """R-CFG-4/R-CFG-10: the trust settings file gets the same protection; nothing is approved."""
    write(layout.project_file, SERVERS)
    layout.settings_file.write_text(content(), encoding="utf-8")  # type: ignore[operator]
    loaded = layout.load(trust="approved")
    assert dict(loaded.servers) == {}
    assert "no project server is approved" in error_for(loaded, layout.settings_file)


# R-CFG-11: only regular files, bounded ----------------------------------------------


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def make_directory(path: Path) -> None:
    path.mkdir()


def link_to_nothing(path: Path) -> None:
    path.symlink_to(path.parent / "does-not-exist")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("which", ["project", "user"])
@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(make_fifo, "is a FIFO (named pipe), not a regular file", id="fifo"),
        pytest.param(link_to_dev_zero, "is a character device, not a regular file", id="symlink-to-dev-zero"),
        pytest.param(make_directory, "is a directory, not a regular file", id="directory"),
        pytest.param(link_to_nothing, "is a symbolic link to a file that does not exist", id="dangling-symlink"),
    ],
)
def test_r_cfg_11_only_regular_files_are_read_others_are_diagnostics(
    layout: Layout, which: str, make: object, reason: str
) -> None:
    """R-CFG-11: never blocks on a FIFO, never reads a device; the other source loads."""
    bad = layout.file(which)
    make(bad)  # type: ignore[operator]
    write(the_other_file(layout, which), {"mcpServers": {"other": {"command": "y"}}})
    outcome = load_in_child(layout)
    assert outcome["servers"] == ["other"]
    assert outcome["diagnostics"] == [["error", str(bad), f"{reason}; the file was skipped"]]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("make", [make_fifo, link_to_dev_zero], ids=["fifo", "symlink-to-dev-zero"])
def test_r_cfg_11_settings_file_that_is_not_a_regular_file_approves_nothing(layout: Layout, make: object) -> None:
    """R-CFG-11/R-CFG-10: the trust settings file is read the same careful way."""
    write(layout.project_file, SERVERS)
    make(layout.settings_file)  # type: ignore[operator]
    outcome = load_in_child(layout, trust="approved")
    assert outcome["servers"] == []
    [[severity, origin, message]] = [d for d in outcome["diagnostics"] if d[0] == "error"]  # type: ignore[union-attr]
    assert (severity, origin) == ("error", str(layout.settings_file))
    assert "not a regular file" in message and "no project server is approved" in message


def test_r_cfg_11_symlink_to_a_regular_file_is_read(layout: Layout, tmp_path: Path) -> None:
    """R-CFG-11: a dotfiles setup links its configuration; that is fine."""
    write(tmp_path / "real.json", SERVERS)
    layout.user_file.symlink_to(tmp_path / "real.json")
    assert list(layout.load().servers) == ["s"]


def test_r_cfg_11_file_over_the_size_limit_is_a_diagnostic_and_one_at_the_limit_loads(layout: Layout) -> None:
    """R-CFG-11: at most MAX_FILE_BYTES (1 MiB); real files are a few KB."""
    text = json.dumps(SERVERS)
    layout.project_file.write_text(text + " " * (MAX_FILE_BYTES - len(text)), encoding="utf-8")
    assert list(layout.load().servers) == ["s"]
    layout.project_file.write_text(text + " " * (MAX_FILE_BYTES + 1 - len(text)), encoding="utf-8")
    loaded = layout.load()
    assert dict(loaded.servers) == {}
    assert f"is too big ({MAX_FILE_BYTES + 1} bytes" in error_for(loaded, layout.project_file)


def test_r_cfg_11_no_more_than_the_limit_plus_one_byte_is_read_even_when_the_file_lies_about_its_size(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-CFG-11: a file that grows after the size check (or reports a size of 0, as /proc files do)
    is read up to the limit plus one byte, then refused."""
    layout.project_file.write_bytes(b" " * (3 * MAX_FILE_BYTES))
    real_stat, real_fstat, real_read = os.stat, os.fstat, os.read
    read_sizes: list[int] = []

    def sized_zero(status: os.stat_result) -> os.stat_result:
        fields = list(status)
        fields[6] = 0  # st_size
        return os.stat_result(fields)

    def counting_read(descriptor: int, size: int) -> bytes:
        data = real_read(descriptor, size)
        read_sizes.append(len(data))
        return data

    def stat(path: Path) -> os.stat_result:
        return sized_zero(real_stat(path))

    def fstat(descriptor: int) -> os.stat_result:
        return sized_zero(real_fstat(descriptor))

    monkeypatch.setattr(sources_module.os, "stat", stat)
    monkeypatch.setattr(sources_module.os, "fstat", fstat)
    monkeypatch.setattr(sources_module.os, "read", counting_read)
    with pytest.raises(sources_module.UnreadableFile, match="too big"):
        read_file_bytes(layout.project_file)
    assert sum(read_sizes) == MAX_FILE_BYTES + 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_r_cfg_11_reading_a_fifo_returns_at_once_even_with_a_writer_waiting(layout: Layout) -> None:
    """R-CFG-11: a FIFO with a writer attached is still not read (no open, no read, no block)."""
    make_fifo(layout.project_file)
    writer_opened = threading.Event()

    def writer() -> None:
        with open(layout.project_file, "w") as pipe:  # blocks until a reader opens it
            writer_opened.set()
            pipe.write(json.dumps(SERVERS))

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    started = time.monotonic()
    loaded = layout.load()
    assert time.monotonic() - started < 5
    assert "FIFO" in error_for(loaded, layout.project_file)
    assert not writer_opened.is_set()
    # Release the writer: open the FIFO for reading ourselves, without blocking.
    descriptor = os.open(layout.project_file, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert writer_opened.wait(5)
    finally:
        thread.join(5)
        os.close(descriptor)


# R-CFG-11: off the event loop ---------------------------------------------------


async def heartbeat_gaps(work: object, tick: float = 0.005) -> tuple[object, float]:
    """Run ``work`` in a worker thread while measuring the event loop's longest gap between ticks."""
    longest = 0.0
    done = trio.Event()
    result: list[object] = []

    async def beat() -> None:
        nonlocal longest
        last = trio.current_time()
        while not done.is_set():
            await trio.sleep(tick)  # a measuring tick, not a wait for something
            now = trio.current_time()
            longest = max(longest, now - last - tick)
            last = now

    async def run() -> None:
        result.append(await trio.to_thread.run_sync(work))  # type: ignore[arg-type]
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(beat)
        nursery.start_soon(run)
    return result[0], longest


@pytest.mark.timeout(120)
async def test_r_cfg_11_loading_a_20_mb_file_in_a_worker_thread_never_blocks_the_event_loop_50_ms(
    layout: Layout,
) -> None:
    """R-CFG-11: json parses while holding the GIL, so only the size limit keeps a worker thread from
    stalling every other session of the host; a 20 MB file is refused unread."""
    padding = ",".join(["1"] * 10_000_000)
    layout.project_file.write_text('{"mcpServers": {"s": {"command": "x"}}, "padding": [' + padding + "]}")
    loaded, longest = await heartbeat_gaps(layout.load)
    assert isinstance(loaded, LoadedConfig)
    assert "too big" in error_for(loaded, layout.project_file)
    assert longest < 0.05, f"the event loop was blocked for {longest * 1000:.0f} ms"


async def test_r_cfg_11_load_config_is_safe_in_concurrent_worker_threads(layout: Layout) -> None:
    """R-CFG-11: load_config keeps no global state, so threads loading at once get the same answer."""
    project = {f"p{index}": {"command": "x", "env": {"A": "${A}"}} for index in range(50)}
    write(layout.project_file, {"mcpServers": project})
    write(layout.user_file, {"mcpServers": {"u": {"url": "http://x", "transport": "sse"}, "bad": {"command": 1}}})
    constructor = {"p1": {"tool_timeout_ms": 5}}
    expected = layout.load(constructor=constructor)
    results: list[LoadedConfig] = []

    async def load_once() -> None:
        results.append(await trio.to_thread.run_sync(lambda: layout.load(constructor=constructor)))

    async with trio.open_nursery() as nursery:
        for _ in range(16):
            nursery.start_soon(load_once)
    assert len(results) == 16
    for result in results:
        assert result == expected
    assert Source.PROJECT in {server.source for server in expected.servers.values()}
