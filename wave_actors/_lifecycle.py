"""A session's lifecycle: one phase, one closed event, and the protocol between a session and its owner.

A session is in one phase at a time::

    OPEN <--> RECONFIGURING        (one reconfigure at a time)
      |            |
      +-----+------+
            v
       DESTROYING                  (no reconfigure may start; waits for a running one, R-KILL-5)
            v
         CLOSED                    (commands refused, scope cancelled; the closed event is set
                                    once every process is gone)

:class:`SessionLifecycle` holds the phase; the owner of a session (a
:class:`~wave_actors.Host`, or :func:`~wave_actors.open_session` for itself)
gets it with the session and drives the destroy through it. A session reaches
back to its owner only through :class:`SessionOwner`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol, final

import trio

from wave_actors._errors import WaveActorsError

__all__ = ["SessionLifecycle", "SessionOwner"]


class SessionOwner(Protocol):
    """What a session needs of the object that owns it: a way to be destroyed through it (hooks included)."""

    async def destroy_session(self, session_id: str) -> None:
        """Destroy the session; return once every process it started is gone."""
        ...


class _Phase(enum.Enum):
    OPEN = "open"
    RECONFIGURING = "reconfiguring"
    DESTROYING = "destroying"
    CLOSED = "closed"


@final
class SessionLifecycle:
    """A session's phase, and the owner's only handle on it.

    The session asks it before every command (:attr:`closed`) and around a
    reconfigure; the owner drives one destroy through it:
    :meth:`begin_destroy`, then (if :attr:`reconfiguring`)
    :meth:`wait_reconfigured`, the owner's own hooks, :meth:`close`, and
    :meth:`wait_closed`.

    :param session_id: for messages.
    :param cancel_scope: the session nursery's scope, cancelled by :meth:`close`.
    """

    __slots__ = ("_cancel_scope", "_closed", "_on_close", "_phase", "_reconfigured", "_session_id")

    def __init__(self, session_id: str, cancel_scope: trio.CancelScope) -> None:
        self._session_id = session_id
        self._cancel_scope = cancel_scope
        self._on_close: Callable[[], None] | None = None
        self._phase = _Phase.OPEN
        self._reconfigured: trio.Event | None = None  # exists while a reconfigure runs
        self._closed = trio.Event()  # set once everything the session started is gone

    @property
    def closed(self) -> bool:
        """``CLOSED``: commands are refused."""
        return self._phase is _Phase.CLOSED

    @property
    def open(self) -> bool:
        """``OPEN`` or ``RECONFIGURING``: no destroy has begun."""
        return self._phase in (_Phase.OPEN, _Phase.RECONFIGURING)

    @property
    def reconfiguring(self) -> bool:
        """A reconfigure runs (the phase may already be ``DESTROYING``: a destroy waits for it)."""
        return self._reconfigured is not None

    def on_close(self, callback: Callable[[], None]) -> None:
        """Have :meth:`close` call ``callback`` (the session refusing commands) before it cancels the scope."""
        self._on_close = callback

    def begin_reconfigure(self) -> None:
        """Enter ``RECONFIGURING``.

        :raises WaveActorsError: the session is not ``OPEN`` (closed, being destroyed, or reconfiguring).
        """
        if self._phase is not _Phase.OPEN:
            raise WaveActorsError(f"session {self._session_id} is {self._phase.value}; it cannot be reconfigured now")
        self._phase, self._reconfigured = _Phase.RECONFIGURING, trio.Event()

    def end_reconfigure(self) -> None:
        """Leave ``RECONFIGURING`` (back to ``OPEN``, unless a destroy began meanwhile) and wake a queued destroy."""
        if self._phase is _Phase.RECONFIGURING:
            self._phase = _Phase.OPEN
        if self._reconfigured is not None:
            self._reconfigured.set()
            self._reconfigured = None

    def begin_destroy(self) -> bool:
        """Enter ``DESTROYING``: no reconfigure may start from now on.

        :returns: ``False`` if a destroy had begun already (the caller waits for
            :meth:`wait_closed` instead of destroying twice, R-KILL-4).
        """
        if self._phase in (_Phase.DESTROYING, _Phase.CLOSED):
            return False
        self._phase = _Phase.DESTROYING
        return True

    async def wait_reconfigured(self) -> None:
        """Return once no reconfigure runs (a destroy is queued behind one, R-KILL-5)."""
        while (reconfigured := self._reconfigured) is not None:
            await reconfigured.wait()

    def close(self) -> None:
        """Enter ``CLOSED``: refuse new commands, release every waiter, cancel the session's scope.

        A session that owns its connections has every dial and connection in
        that scope: its nursery then waits for each transport's shielded
        reclamation, and :meth:`wait_closed` returns after it. A project-mode
        session releases its references instead; its connections are the
        project scope's (R-SCOPE-1).
        """
        if self._phase is _Phase.CLOSED:
            return
        self._phase = _Phase.CLOSED
        if self._on_close is not None:
            self._on_close()
        self._cancel_scope.cancel()

    def mark_closed(self) -> None:
        """Called once the session's nursery has exited: everything it started is gone."""
        self._closed.set()

    async def wait_closed(self) -> None:
        """Return once everything the session started is gone (R-KILL-4)."""
        await self._closed.wait()
