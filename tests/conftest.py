"""Suite-wide guards: no test may leave a process behind, and no test may hang.

Every process the suite starts inherits ``WAVE_ACTORS_TEST_MARK`` from this
process's environment (stdio servers get the parent environment overlaid with
their own, R-CFG-9). After each test we look for processes that are still our
descendants *or* carry the mark: the second catches ``setsid`` and
double-forked grandchildren that were re-parented away from us.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from types import FrameType

import psutil
import pytest

# The first dial in a process imports the MCP client (a second or more on a cold
# disk). Importing it once here keeps that cost out of every test's time bounds.
import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.session  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.sse  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.streamable_http  # noqa: F401  # pyright: ignore[reportUnusedImport]

MARK_VARIABLE = "WAVE_ACTORS_TEST_MARK"
os.environ[MARK_VARIABLE] = f"{os.getpid()}-{uuid.uuid4().hex}"

# How long a test's processes get to finish dying after the test returned.
# Reclamation is awaited by the code under test; this only absorbs reaping lag.
_SETTLE_SECONDS = 5.0


def _marked_processes() -> list[psutil.Process]:
    mark = os.environ[MARK_VARIABLE]
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    try:
        for child in psutil.Process(me).children(recursive=True):
            found[child.pid] = child
    except psutil.Error:
        pass
    for process in psutil.process_iter():
        if process.pid == me or process.pid in found:
            continue
        try:
            if process.environ().get(MARK_VARIABLE) == mark:
                found[process.pid] = process
        except psutil.Error:
            continue
    alive: list[psutil.Process] = []
    for process in found.values():
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.Error:
            continue
    return alive


def leftover_processes(settle: float = _SETTLE_SECONDS) -> list[psutil.Process]:
    """Processes started by the suite that are still alive after ``settle`` seconds."""
    deadline = time.monotonic() + settle
    while True:
        alive = _marked_processes()
        if not alive or time.monotonic() >= deadline:
            return alive
        psutil.wait_procs(alive, timeout=min(0.1, max(0.0, deadline - time.monotonic())))


def _describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid}: {' '.join(process.cmdline())[:200]}"
    except psutil.Error:
        return f"pid {process.pid}"


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """Fail the test that leaves any process of the suite alive, then kill it."""
    yield
    alive = leftover_processes()
    if alive:
        descriptions = [_describe(p) for p in alive]
        for process in alive:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)
        pytest.fail(
            f"{len(alive)} process(es) left alive by this test:\n  " + "\n  ".join(descriptions),
            pytrace=False,
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("wave_test_timeout", "seconds before a test is failed as hung", default="60")


class TestHung(Exception):
    """Raised into a test that ran past its time limit."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a hung test instead of letting it eat the CI budget.

    A ``timeout(seconds)`` marker overrides the ini default. SIGALRM raises in
    the main thread, which is where trio runs the test.
    """
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker else float(item.config.getini("wave_test_timeout"))

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TestHung(f"{item.nodeid} ran longer than {limit:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
