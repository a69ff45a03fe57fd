"""Where a child is in its life, as a snapshot a caller can read at any time."""

from __future__ import annotations

import enum
from typing import final

import attrs


class ChildState(enum.Enum):
    """The phase of a child. The last four are final for the current start."""

    STARTING = "starting"
    """An incarnation is running but has not reported ``started()`` yet."""

    RUNNING = "running"
    """The current incarnation reported ``started()``."""

    RESTARTING = "restarting"
    """The last incarnation exited (or was stopped by the strategy) and the next
    waits for its turn: a backoff delay, and under a strategy, its siblings."""

    STOPPING = "stopping"
    """A stop (for good, or the strategy's) cancelled the child; waiting for it
    to finish within its deadline."""

    ABANDONED = "abandoned"
    """The stop deadline passed and the child's task is still running (it is
    stuck in a shielded scope). Becomes ``STOPPED`` once the task really ends."""

    STOPPED = "stopped"
    """Ended by a stop for good (:meth:`Supervisor.stop_child`, the shutdown, or
    the cancellation of the caller of ``start_child``), or a temporary child
    stopped by the strategy."""

    EXITED = "exited"
    """Ended on its own and was not restarted: a temporary child, a transient
    child that returned, a failed first start, an exit during shutdown, or a
    ``KeyboardInterrupt``/``SystemExit``."""

    GAVE_UP = "gave_up"
    """Ended on its own when one more restart would exceed its restart
    intensity, or the supervisor's."""


@final
@attrs.frozen
class ChildStatus:
    """A snapshot of one child.

    :param name: the child's name.
    :param state: its phase.
    :param incarnation: the number of its latest incarnation (0 before the first).
    :param error: the last exception that matters for ``state``: the crash that
        is being restarted from (``RESTARTING``), that ended it (``EXITED``,
        ``GAVE_UP``), a :class:`ChildAbandoned` (``ABANDONED``), or a
        :class:`SiblingRestart` when the strategy stopped it (``RESTARTING``,
        or ``STOPPED`` for a temporary child); else ``None``.
    """

    name: str
    state: ChildState
    incarnation: int
    error: BaseException | None = None
