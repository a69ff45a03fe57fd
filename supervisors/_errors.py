"""The exceptions this package raises, all under :class:`SupervisorError`.

A child's own exceptions are never wrapped: a failed first start re-raises
exactly what the child raised, and events carry the child's exception as is.
The classes here only name what the *supervisor* decided or refused.
"""

from __future__ import annotations


class SupervisorError(Exception):
    """Base class of every error the supervisor itself raises.

    Also raised directly for a misuse the caller can fix: starting a child on a
    closed supervisor, or under a name whose previous incarnation is still
    running.
    """


class UnknownChild(SupervisorError, LookupError):
    """No child was ever started under this name in this supervisor."""


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
    """A child crashed more often than its restart intensity allows, and the
    supervisor was opened with ``escalate=True``.

    Raised out of ``async with Supervisor.open(...)`` after every other child
    was stopped; ``__cause__`` is the child's last error.
    """
