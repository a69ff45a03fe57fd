"""What the asyncio-face tests share: the loops, sessions over a temporary directory, waiting on processes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from presets import FAST_SESSION
from process_support import server_processes

from wave_actors import SessionOptions
from wave_actors.asyncio import Session, open_session

LOOPS = ("asyncio", "uvloop")


def loop_runner(name: str) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """``asyncio.run``, or ``uvloop.run`` for ``"uvloop"``."""
    if name == "uvloop":
        import uvloop

        return uvloop.run
    return asyncio.run


@asynccontextmanager
async def idle_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST_SESSION
) -> AsyncIterator[Session]:
    """An asyncio-face session of ``servers`` in ``tmp_path``, nothing dialed yet; every process reclaimed on exit."""
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers=servers, options=options, credentials="file"
    ) as session:
        yield session


@asynccontextmanager
async def connected_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST_SESSION
) -> AsyncIterator[Session]:
    """An :func:`idle_session` after its first ``prepare_turn()``."""
    async with idle_session(tmp_path, servers, options=options) as session:
        await session.prepare_turn()
        yield session


async def until(condition: Callable[[], bool], *, limit: float, what: str, interval: float = 0.01) -> float:
    """Check ``condition`` (a fact no event announces: a process, a file) until it holds; return the seconds it took.

    :raises AssertionError: it did not hold within ``limit`` seconds.
    """
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > limit:
            raise AssertionError(f"not within {limit:g} s: {what}")
        await asyncio.sleep(interval)
    return time.monotonic() - started


def no_server_left() -> bool:
    """No fault server this test process started is alive."""
    return not server_processes()
