"""What a child is: its name, its body, and how it is restarted and stopped."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import final

import attrs

from ._backoff import Backoff
from ._intensity import RestartIntensity


class Restart(enum.Enum):
    """When a child that exited on its own is started again (OTP's restart types).

    A child stopped for good (:meth:`Supervisor.stop_child`, the shutdown) is
    never restarted, whatever its type. One that the supervisor's strategy
    stopped because a sibling is restarted is restarted with it, unless it is
    ``TEMPORARY``.
    """

    PERMANENT = "permanent"
    """Always restarted, even after a normal return: the child is meant to run forever."""

    TRANSIENT = "transient"
    """Restarted only after an exception: a normal return means the work is done."""

    TEMPORARY = "temporary"
    """Never restarted: its exit, clean or not, is final."""


@final
@attrs.frozen
class ChildContext:
    """What one incarnation of a child receives as its only argument.

    :param name: the child's name.
    :param incarnation: 1 for the first run under this name in this
        supervisor, then 2, 3, ... for every restart *and* every later start
        under the same name, so it can serve as a connection generation
        (:meth:`Supervisor.delete_child` forgets a name and its count).
    :param report_started: what :meth:`started` calls; supplied by the supervisor.
    """

    name: str
    incarnation: int
    _report_started: Callable[[], None] = attrs.field(alias="report_started", repr=False)

    def started(self) -> None:
        """Report that this incarnation is up.

        :meth:`Supervisor.start_child` returns only after its child called this,
        with the child's status as of this call.
        The time it is called also starts the ``reset_after`` clock of the backoff.
        A call after this incarnation was asked to stop, or after it ended (a
        context kept past the end of ``run``), is ignored and raises nothing.

        :raises RuntimeError: if called twice by the same running incarnation.
        """
        self._report_started()


def _non_negative(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


@final
@attrs.frozen
class ChildSpec:
    """How to run, restart and stop one child.

    :param name: unique among the supervisor's running children; also the key
        under which incarnation numbers keep counting across stop and start.
    :param run: ``async def run(context: ChildContext)``; it must call
        ``context.started()`` once it is up. Whatever it returns is ignored.
    :param restart: when an exit on its own leads to a restart.
    :param shutdown_timeout: seconds the child gets to finish after being
        cancelled by a stop (for good, or the strategy's) before it is
        abandoned (and reported as such).
    :param intensity: overrides the supervisor's restart intensity for this child.
    :param backoff: overrides the supervisor's backoff for this child.
    :raises ValueError: if ``name`` is empty or ``shutdown_timeout`` is negative.
    """

    name: str = attrs.field(validator=attrs.validators.min_len(1))
    run: Callable[[ChildContext], Awaitable[object]]
    restart: Restart = Restart.PERMANENT
    shutdown_timeout: float = attrs.field(default=5.0, validator=_non_negative)
    intensity: RestartIntensity | None = None
    backoff: Backoff | None = None
