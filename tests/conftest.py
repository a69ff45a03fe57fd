"""Suite-wide guards: no test may leave a process behind, and no test may hang.

The suite runs with ``HOME`` set to a temporary directory, so nothing reads or
writes the real ``~/.wave``.

Every process the suite starts inherits ``WAVE_ACTORS_TEST_MARK`` from this
process's environment (stdio servers get the parent environment overlaid with
their own, R-CFG-9). After each test, :func:`wave_actors.testing.leftover_processes`
looks for processes that are still our descendants *or* carry the mark: the
second catches ``setsid`` and double-forked grandchildren that were re-parented
away from us.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from types import FrameType

# The first dial in a process imports the MCP client (a second or more on a cold
# disk). Importing it once here keeps that cost out of every test's time bounds.
import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.session  # pyright: ignore[reportUnusedImport]
import mcp.client.sse  # pyright: ignore[reportUnusedImport]
import mcp.client.streamable_http  # noqa: F401  # pyright: ignore[reportUnusedImport]
import pytest

from wave_actors.testing import describe, kill_processes, leftover_processes

MARK_VARIABLE = "WAVE_ACTORS_TEST_MARK"
os.environ[MARK_VARIABLE] = f"{os.getpid()}-{uuid.uuid4().hex}"

# No test may read or write the real user's ~/.wave (its mcp.json, the tool snapshot
# cache): the suite, and every process it starts, runs with a home of its own.
_HOME = tempfile.mkdtemp(prefix="wave-test-home-")
os.environ["HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)

# How long a test's processes get to finish dying after the test returned.
# Reclamation is awaited by the code under test; this only absorbs reaping lag.
_SETTLE_SECONDS = 5.0


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """Fail the test that leaves any process of the suite alive, then kill it."""
    yield
    alive = leftover_processes(MARK_VARIABLE, os.environ[MARK_VARIABLE], settle=_SETTLE_SECONDS)
    if alive:
        descriptions = [describe(process) for process in alive]
        kill_processes(alive)
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
