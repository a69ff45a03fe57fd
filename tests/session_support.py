"""Sessions the way most runtime and fault tests need them: over a temporary directory, with fast options.

``async with connected_session(tmp_path, servers) as session:`` is
``open_session`` with ``servers`` as constructor entries, ``tmp_path`` as the
workdir, ``tmp_path / "home"`` as the user home (empty, so only ``servers``
load), and a first ``prepare_turn()`` done: every server has been dialed.
``idle_session`` is the same without the turn, for tests about what happens
before or during the first dial.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from presets import FAST_SESSION

from wave_actors import ServerStatus, Session, SessionOptions, open_session


@asynccontextmanager
async def idle_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST_SESSION
) -> AsyncIterator[Session]:
    """A session of ``servers`` in ``tmp_path``, nothing dialed yet; every process reclaimed on exit (R-KILL-4)."""
    async with open_session(workdir=tmp_path, home=tmp_path / "home", mcp_servers=servers, options=options) as session:
        yield session


@asynccontextmanager
async def connected_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST_SESSION
) -> AsyncIterator[Session]:
    """An :func:`idle_session` after its first ``prepare_turn()``: every server dialed (a failed dial is in error)."""
    async with idle_session(tmp_path, servers, options=options) as session:
        await session.prepare_turn()
        yield session


async def assert_stays(
    session: Session, name: str, predicate: Callable[[ServerStatus], bool], *, duration: float
) -> None:
    """Watch ``name`` for ``duration`` seconds and fail on the first status that breaks ``predicate``.

    For what must *not* happen (a wrong reconnect): woken by every change, so a violation fails at once.
    """
    with trio.move_on_after(duration):
        async for snapshot in session.watch():
            status = snapshot.server(name)
            assert predicate(status), f"{name!r} changed to {status.state.value}: {status.error}"
