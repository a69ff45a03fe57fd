"""An owner's view of the tool snapshot cache, and the task that writes its servers' snapshots (R-CACHE-1, R-CACHE-2).

The owner is an actor group: a session's own servers, or a project's shared ones.

:class:`ToolCacheWriter` is made by an actor group
(:class:`~wave_actors._roster.group.ActorGroup`, a session's own or a
project's shared one) from the cache read when its owner was created
(:meth:`~wave_actors._parameters.SessionParameters.load_with_tool_cache`,
which reads through :func:`~wave_actors._cache.file.read_cache` with
``shared=True``), told of every change of the group, and writes through
:func:`~wave_actors._cache.file.update_cache` from a worker thread. The
files themselves, their format and their budget are
:mod:`wave_actors._cache.file`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from wave_actors._cache.file import update_cache
from wave_actors._cache.model import CachedServer, ToolCache

if TYPE_CHECKING:
    import trio

    from wave_actors._actor.machine import ActorState
    from wave_actors._config import ServerConfig

__all__ = ["SETTLE_LIMIT", "WRITE_LIMIT", "ToolCacheWriter"]

logger = logging.getLogger(__name__)

WRITE_LIMIT: Final = 2.0
"""Seconds an owner waits for one write, even while it closes; past it the write is left to its thread."""

SETTLE_LIMIT: Final = 1.0
"""Seconds a snapshot waits for the owner's other dials to settle before it is written.

When a write rewrote the one cache file (3 to 4 ms of CPU with 20 servers),
a turn dialing 20 servers wrote it some 6 times while the dials ran, which
made them 3 to 7 % slower (``python -m benchmarks.dial``, init_delay 0). A
write now replaces only the owner's own entry files, but still looks over
the whole cache for its budget: it is done once, when the last dial of the
turn is up or has failed.
"""


class ToolCacheWriter:
    """One owner's view of the tool snapshot cache, and the writer of its servers' snapshots (R-CACHE-1, R-CACHE-2).

    The view is read once, off the event loop, when the owner is created,
    and follows the owner's own writes from then on. :meth:`observe` is
    called after every change of the owner's servers: when a server has connected or
    refreshed its tools since it last looked, its snapshot is recorded in the
    view at once and queued for writing. The writer is a task in the
    owner's nursery, started when there is something to write and ending
    when there is nothing left. While another server of the owner is
    still connecting, it waits for that dial to settle (at most
    :data:`SETTLE_LIMIT`), so the servers of one turn are written together,
    not one write per server while the others still dial. Each write runs
    in a worker thread, so no
    caller and no event loop waits for the disk. Each write is shielded from
    the owner's cancellation and bounded by :data:`WRITE_LIMIT`, so an
    owner that closes right after a connect still records it, and a disk or
    a disk that hangs delays the close by that much at most. A write
    that fails is logged at debug level and dropped: the cache is a
    convenience, never a reason to fail.

    :param path: the cache's directory (:func:`~wave_actors._cache.file.cache_directory`).
    :param workdir: the owner's resolved workdir.
    :param cache: the workdir's entries, as read at creation.
    :param nursery: the owner's nursery, where the writer runs.
    :param configured: ``(server, fingerprint)`` of every server the owner has now.
    """

    __slots__ = (
        "_cache",
        "_configured",
        "_connecting",
        "_nursery",
        "_path",
        "_pending",
        "_seen",
        "_settled",
        "_workdir",
        "_writing",
    )

    def __init__(
        self,
        path: Path,
        workdir: str,
        cache: ToolCache,
        *,
        nursery: trio.Nursery,
        configured: Callable[[], Collection[tuple[str, str]]],
    ) -> None:
        self._path = path
        self._workdir = workdir
        self._cache = cache
        self._nursery = nursery
        self._configured = configured
        self._pending: dict[tuple[str, str], CachedServer] = {}
        self._seen: dict[str, tuple[float, object]] = {}  # server -> (last connect, tool list) last recorded
        self._writing = False
        self._connecting = False  # a server of the owner was connecting at the last change
        self._settled: trio.Event | None = None  # set once none is, while the writer waits for it

    @property
    def cache(self) -> ToolCache:
        """The entries the owner's statuses show, its own latest snapshots included."""
        return self._cache

    def observe(self, servers: Iterable[tuple[ServerConfig, ActorState]]) -> None:
        """Record the snapshot of every server that connected or refreshed its tools since the last call.

        The view then keeps the entries of ``servers`` only: an owner that
        lives as long as its host (a project's group) through any number of
        configuration changes holds the snapshots of what it has now, not of
        every entry it ever had (R-HOST-3). The files keep the rest.

        :param servers: each server's entry and state machine state, after a
            change: every server of the owner.
        """
        from wave_actors._actor.machine import settled
        from wave_actors._status import ServerState

        updates: list[CachedServer] = []
        current: set[tuple[str, str]] = set()
        connecting = False
        for config, state in servers:
            current.add((config.name, config.fingerprint))
            connecting = connecting or not settled(state)
            if state.state is not ServerState.CONNECTED or state.last_connected is None:
                continue
            seen = self._seen.get(config.name)
            # A refresh hands over a new tool list even when it lists the same tools: it is written too.
            if seen is not None and seen[0] == state.last_connected and seen[1] is state.tools:
                continue
            self._seen[config.name] = (state.last_connected, state.tools)
            updates.append(
                CachedServer(
                    config.name, config.fingerprint, self._workdir, state.last_connected, state.tools, state.warnings
                )
            )
        self._connecting = connecting
        if not connecting and self._settled is not None:
            self._settled.set()
        if not updates:
            return
        self._cache = ToolCache({key: entry for key, entry in self._cache.entries.items() if key in current})
        self._cache = self._cache.with_entries(updates)
        names = {name for name, _ in current}
        self._seen = {name: seen for name, seen in self._seen.items() if name in names}
        self._pending.update((update.key, update) for update in updates)
        if not self._writing:
            try:
                self._nursery.start_soon(self._write_pending, name="wave_actors.tool_cache")
            except RuntimeError:  # the owner's nursery is closed: nothing can write any more
                logger.debug("tool snapshot cache: closed before %d snapshot(s) were written", len(updates))
                return
            self._writing = True

    async def _write_pending(self) -> None:
        import trio

        try:
            while self._pending:
                try:
                    await self._settle()
                except trio.Cancelled:
                    await self._write_batch()  # the owner closes: what it learned is written now
                    raise
                await self._write_batch()
        finally:
            self._writing = False

    async def _settle(self) -> None:
        """Until no server of the owner is connecting, :data:`SETTLE_LIMIT` at most."""
        import trio

        if not self._connecting:
            return
        self._settled = settled = trio.Event()
        try:
            with trio.move_on_after(SETTLE_LIMIT):
                await settled.wait()
        finally:
            self._settled = None

    async def _write_batch(self) -> None:
        import functools

        import trio

        batch, self._pending = list(self._pending.values()), {}
        if not batch:
            return
        write = functools.partial(
            update_cache, self._path, workdir=self._workdir, configured=tuple(self._configured()), updates=batch
        )
        # Shielded: an owner closing right after a connect still keeps what it learned. Bounded: a
        # disk that hangs costs WRITE_LIMIT, and its thread is left to finish on its own.
        with trio.CancelScope(shield=True), trio.move_on_after(WRITE_LIMIT) as bound:
            try:
                await trio.to_thread.run_sync(write, abandon_on_cancel=True)
            except OSError as error:
                logger.debug("tool snapshot cache %s not written: %s", self._path, error)
        if bound.cancelled_caught:
            logger.debug("tool snapshot cache %s: a write took over %g s; left to finish", self._path, WRITE_LIMIT)
