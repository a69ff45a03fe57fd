"""The latest snapshot of a trio session, kept on the asyncio side (R-HOST-2).

A session's snapshot is built in the trio thread from state only that thread
may touch, so the asyncio face never builds one: a trio task per session
(:func:`publish`) follows the session's ``watch()`` and hands each snapshot
over, and every command of the face hands over the snapshot it left behind
before its own result, so that what a caller reads after ``await
session.connect(...)`` is at least as new as what the command did. The
mirror keeps the newest it was given; :meth:`SnapshotMirror.watch` and
:meth:`SnapshotMirror.wait_for` follow it as the trio ones follow the
session: the latest snapshot is never missed, the ones in between may be.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from wave_actors._errors import WaveActorsError
from wave_actors._status import SessionSnapshot

if TYPE_CHECKING:
    from wave_actors._asyncio.runtime import TrioRuntime
    from wave_actors._session import Session

__all__ = ["SnapshotMirror", "publish"]


class SnapshotMirror:
    """The newest snapshot handed over, and whether the session was closed then.

    Made in the trio thread (before anyone on the asyncio side sees it); read
    and updated in the asyncio thread only.
    """

    def __init__(self, snapshot: SessionSnapshot, closed: bool) -> None:
        self._snapshot = snapshot
        self._closed = closed
        self._changed = asyncio.Event()  # bound to the loop at its first wait

    @property
    def snapshot(self) -> SessionSnapshot:
        """The newest snapshot handed over."""
        return self._snapshot

    def update(self, snapshot: SessionSnapshot, closed: bool) -> None:
        """Keep ``snapshot`` if it is newer than the one held (or tells of the close); wake every waiter."""
        current = self._snapshot
        if snapshot.version < current.version or (snapshot.version == current.version and closed <= self._closed):
            return
        self._snapshot, self._closed = snapshot, closed or self._closed
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def watch(self) -> AsyncIterator[SessionSnapshot]:
        """Yield the newest snapshot, then each newer one; end after the one that shows the session closed."""
        while True:
            snapshot, closed = self._snapshot, self._closed
            yield snapshot
            if self._snapshot is snapshot:
                if closed:
                    return
                await self._changed.wait()

    async def wait_for(self, predicate: Callable[[SessionSnapshot], bool], session_id: str) -> SessionSnapshot:
        """The first snapshot, from now on, for which ``predicate`` holds.

        :raises WaveActorsError: the session closed before it held.
        :raises Exception: whatever ``predicate`` raised.
        """
        while True:
            snapshot = self._snapshot
            if predicate(snapshot):
                return snapshot
            if self._closed:
                raise WaveActorsError(f"session {session_id} closed before the awaited condition held")
            await self._changed.wait()


async def publish(session: Session, mirror: SnapshotMirror, runtime: TrioRuntime) -> None:
    """Trio thread: hand every snapshot of ``session`` to ``mirror``, until the session is closed."""
    async for snapshot in session.watch():
        runtime.post(mirror.update, snapshot, session.closed)
