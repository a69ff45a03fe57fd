"""Tests of the asyncio face (R-AIO-1, R-AIO-2): each runs under the standard loop and under uvloop.

They are plain ``def test_...(run)`` functions, so pytest-trio's trio mode
leaves them alone; ``run(coroutine)`` runs the test's coroutine to its end on
a fresh loop of the kind under test, as ``asyncio.run`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from asyncio_support import LOOPS, loop_runner


@pytest.fixture(params=LOOPS)
def loop_name(request: pytest.FixtureRequest) -> str:
    """``"asyncio"`` (the standard loop) or ``"uvloop"``."""
    name: str = request.param
    if name == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop is not installed (it comes with the test extra: .[test])")
    return name


@pytest.fixture
def run(loop_name: str) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Run a coroutine on a fresh loop of the kind under test and return its result."""
    return loop_runner(loop_name)
