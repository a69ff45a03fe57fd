"""The exceptions this package raises, all under :class:`SupervisorError`.

A child's own exceptions are never wrapped: a failed first start re-raises
exactly what the child raised, and events carry the child's exception as is.
The classes here only name what the *supervisor* decided or refused.
"""

from __future__ import annotations


class SupervisorError(Exception):
    """Base class of every error the supervisor itself raises.

    Also raised directly for a misuse the caller can fix: starting a child on a
    closed (or closing) supervisor, starting one under a name whose previous
    incarnation is still running, or deleting a child that has not ended.
    """


class UnknownChild(SupervisorError, LookupError):
    """No child of this name is known: none was started here, or it was deleted."""


class ChildNotStarted(SupervisorError):
    """The child ended before it reported started.

    Raised by :meth:`Supervisor.start_child` when the child returned without
    calling :meth:`ChildContext.started`, or was stopped by
    :meth:`Supervisor.stop_child` while it was still starting. (A child that
    *raised* while starting makes ``start_child`` raise that exception
    instead.)
    """


class ChildAbandoned(SupervisorError):
    """The child did not finish within its ``shutdown_timeout`` after being stopped.

    Carried as the ``error`` of the ``STOPPED`` event emitted at the deadline and
    as the child's status error. The child's task is still running (trio cannot
    kill a task, only cancel it); see :class:`Supervisor` for what is guaranteed.
    """


class RestartIntensityExceeded(SupervisorError):
    """The supervisor gave up on all its children: too many restarts.

    Either the restarts of all children together exceeded the
    ``supervisor_intensity`` the supervisor was opened with (OTP's MaxR/MaxT),
    or one child exceeded its own intensity and the supervisor was opened with
    ``escalate=True``. Raised out of ``async with Supervisor.open(...)`` after
    the block's body was cancelled and every child was stopped; ``__cause__``
    is the last error of the child whose exit spent the budget.
    """


class SiblingRestart(SupervisorError):
    """Why a child was stopped by its supervisor's strategy: a sibling is restarted.

    Under ``one_for_all`` or ``rest_for_one``, a child that is up when a
    sibling's exit leads to a restart is stopped, and restarted after it
    (unless it is temporary). This is the ``error`` of its ``STOPPED`` and
    ``RESTARTING`` events and of its status meanwhile. It is never raised.
    ``__cause__`` is the sibling's error (``None`` for a permanent child that
    returned).

    :param message: what happened, naming the sibling and its incarnation.
    :param sibling: the name of the child whose exit caused the restart.
    :param incarnation: the sibling's incarnation that exited.
    """

    def __init__(self, message: str, *, sibling: str, incarnation: int) -> None:
        super().__init__(message)
        self.sibling = sibling
        self.incarnation = incarnation
