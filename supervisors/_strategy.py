"""Which children a restart takes along (OTP's restart strategies)."""

from __future__ import annotations

import enum


class Strategy(enum.Enum):
    """What else is restarted when one child is restarted; chosen per supervisor.

    "Start order" is the order of :meth:`Supervisor.children`: the order of
    each name's latest :meth:`Supervisor.start_child`. A strategy restart
    stops the others first, one at a time in *reverse* start order (each
    within its ``shutdown_timeout``), waits out the backoff delay of the
    child that exited, then starts them again in start order, each only once
    the one before it reported ``started()``. The child that exited and the
    delay count once against the restart intensities.

    Only children that are up or waiting for a restart take part. A child
    that already ended for good (stopped, exited, gave up) is left alone, and
    so is one whose first :meth:`Supervisor.start_child` has not returned yet:
    it belongs to that caller until it reported started. A ``TEMPORARY``
    child that a strategy stops is not restarted.
    """

    ONE_FOR_ONE = "one_for_one"
    """Only the child that exited is restarted (the default)."""

    ONE_FOR_ALL = "one_for_all"
    """Every other child is stopped, and all are restarted together."""

    REST_FOR_ONE = "rest_for_one"
    """The children started after the one that exited are stopped, and it is
    restarted together with them; the ones started before it are untouched."""
