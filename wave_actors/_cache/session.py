"""A session's view of the tool snapshot cache, and the task that writes its servers' snapshots (R-CACHE-1, R-CACHE-2).

:class:`SessionToolCache` is made by :class:`~wave_actors._session.Session`
from the cache it read when it was created
(:meth:`~wave_actors._parameters.SessionParameters.load_with_tool_cache`,
which reads through :func:`~wave_actors._cache.file.read_cache` with
``shared=True``), told of every change of the session, and writes through
:func:`~wave_actors._cache.file.update_cache` from a worker thread. The file
itself, its format and its lock are :mod:`wave_actors._cache.file`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from wave_actors._cache.file import update_cache
from wave_actors._cache.model import CachedServer, CachedTool, ToolCache

if TYPE_CHECKING:
    import trio

    from wave_actors._actor.machine import ActorState
    from wave_actors._config import ServerConfig

__all__ = ["SESSION_LOCK_TIMEOUT", "WRITE_LIMIT", "SessionToolCache"]

logger = logging.getLogger(__name__)

SESSION_LOCK_TIMEOUT: Final = 1.0
"""Seconds a session's write waits for another writer's lock (a write takes milliseconds) before it is dropped."""

WRITE_LIMIT: Final = 2.0
"""Seconds a session waits for one write, even while it closes; past it the write is left to its thread."""


class SessionToolCache:
    """One session's view of the tool snapshot cache, and the writer of its servers' snapshots (R-CACHE-1, R-CACHE-2).

    The view is read once, off the event loop, when the session is created,
    and follows the session's own writes from then on. :meth:`observe` is
    called after every change of the session: when a server has connected or
    refreshed its tools since it last looked, its snapshot is recorded in the
    view at once and queued for writing. The writer is a task in the
    session's nursery, started when there is something to write and ending
    when there is nothing left; each write runs in a worker thread, so no
    caller and no event loop waits for the disk. Each write is shielded from
    the session's cancellation and bounded by :data:`WRITE_LIMIT`, so a
    session that closes right after a connect still records it, and a disk or
    a lock holder that hangs delays the close by that much at most. A write
    that fails is logged at debug level and dropped: the cache is a
    convenience, never a reason to fail.

    :param path: the cache file.
    :param workdir: the session's resolved workdir.
    :param cache: the session's entries, as read at creation.
    :param nursery: the session's nursery, where the writer runs.
    :param configured: ``(server, fingerprint)`` of every server the session has now.
    """

    __slots__ = ("_cache", "_configured", "_nursery", "_path", "_pending", "_seen", "_workdir", "_writing")

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

    @property
    def cache(self) -> ToolCache:
        """The entries the session's statuses show, its own latest snapshots included."""
        return self._cache

    def observe(self, servers: Iterable[tuple[ServerConfig, ActorState]]) -> None:
        """Record the snapshot of every server that connected or refreshed its tools since the last call.

        :param servers: each server's entry and state machine state, after a change.
        """
        from wave_actors._status import ServerState

        updates: list[CachedServer] = []
        for config, state in servers:
            if state.state is not ServerState.CONNECTED or state.last_connected is None:
                continue
            seen = self._seen.get(config.name)
            # A refresh hands over a new tool list even when it lists the same tools: it is written too.
            if seen is not None and seen[0] == state.last_connected and seen[1] is state.tools:
                continue
            self._seen[config.name] = (state.last_connected, state.tools)
            tools = tuple(
                CachedTool(tool.name, tool.description, tool.input_schema, tool.read_only_hint) for tool in state.tools
            )
            updates.append(
                CachedServer(
                    config.name, config.fingerprint, self._workdir, state.last_connected, tools, state.warnings
                )
            )
        if not updates:
            return
        self._cache = self._cache.with_entries(updates)
        self._pending.update((update.key, update) for update in updates)
        if not self._writing:
            try:
                self._nursery.start_soon(self._write_pending, name="wave_actors.tool_cache")
            except RuntimeError:  # the session's nursery is closed: nothing can write any more
                logger.debug("tool snapshot cache: session closed before %d snapshot(s) were written", len(updates))
                return
            self._writing = True

    async def _write_pending(self) -> None:
        import functools

        import trio

        try:
            while self._pending:
                batch, self._pending = list(self._pending.values()), {}
                write = functools.partial(
                    update_cache,
                    self._path,
                    workdir=self._workdir,
                    configured=tuple(self._configured()),
                    updates=batch,
                    lock_timeout=SESSION_LOCK_TIMEOUT,
                )
                # Shielded: a session closing right after a connect still keeps what it learned. Bounded: a
                # disk that hangs costs WRITE_LIMIT, and its thread is left to finish on its own.
                with trio.CancelScope(shield=True), trio.move_on_after(WRITE_LIMIT) as bound:
                    try:
                        await trio.to_thread.run_sync(write, abandon_on_cancel=True)
                    except OSError as error:
                        logger.debug("tool snapshot cache %s not written: %s", self._path, error)
                if bound.cancelled_caught:
                    logger.debug(
                        "tool snapshot cache %s: a write took over %g s; left to finish", self._path, WRITE_LIMIT
                    )
        finally:
            self._writing = False
