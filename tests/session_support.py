"""Sessions the way most runtime and fault tests need them: over a temporary directory, with fast options.

``async with connected_session(tmp_path, servers) as session:`` is
``open_session`` with ``servers`` as constructor entries, ``tmp_path`` as the
workdir, ``tmp_path / "home"`` as the user home (empty, so only ``servers``
load), and a first ``prepare_turn()`` done: every server has been dialed.
``idle_session`` is the same without the turn, for tests about what happens
before or during the first dial.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from supervisors import Backoff, RestartIntensity
from wave_actors import Graces, Session, SessionOptions, TransportOptions, open_session

FAST: Final = SessionOptions(
    dial_timeout=10.0,
    transport=TransportOptions(graces=Graces(eof=0.5, term=0.5, kill=1.0)),
    reconnect_backoff=Backoff(initial=0.05, multiplier=2.0, maximum=0.2, jitter=0.0, reset_after=5.0),
    reconnect_intensity=RestartIntensity(max_restarts=3, period=30.0),
    seed=7,
)
"""Short graces and backoffs, so that failures show fast; a crash loop gives up after three restarts."""


@asynccontextmanager
async def idle_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST
) -> AsyncIterator[Session]:
    """A session of ``servers`` in ``tmp_path``, nothing dialed yet; every process reclaimed on exit (R-KILL-4)."""
    async with open_session(workdir=tmp_path, home=tmp_path / "home", mcp_servers=servers, options=options) as session:
        yield session


@asynccontextmanager
async def connected_session(
    tmp_path: Path, servers: Mapping[str, Mapping[str, object]], *, options: SessionOptions = FAST
) -> AsyncIterator[Session]:
    """An :func:`idle_session` after its first ``prepare_turn()``: every server dialed (a failed dial is in error)."""
    async with idle_session(tmp_path, servers, options=options) as session:
        await session.prepare_turn()
        yield session
