"""Restart intensity: how many restarts fit in a sliding time window."""

from __future__ import annotations

from typing import final

import attrs


@final
@attrs.frozen
class RestartIntensity:
    """At most ``max_restarts`` restarts within any ``period`` seconds (OTP's MaxR/MaxT).

    Used per child (each child's restarts) and, optionally, per supervisor (the
    restarts of all its children together; a strategy restart counts once).
    Restarts are counted when the supervisor *decides* to restart (the moment
    the child exited), not when the restarted child runs after its backoff
    delay: otherwise a long backoff would hide a crash loop from the budget.
    Times come from ``trio.current_time()``, so a ``MockClock`` drives it.

    :param max_restarts: restarts allowed in the window; 0 means "never restart".
    :param period: length of the sliding window in seconds. A restart at time
        ``t`` stops counting at ``t + period``.
    :raises ValueError: if ``max_restarts`` is negative or ``period`` is not positive.
    """

    max_restarts: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    period: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))

    def admit(self, history: tuple[float, ...], now: float) -> tuple[float, ...] | None:
        """Decide whether one more restart at ``now`` fits the budget.

        Pure, so the window arithmetic is tested without trio.

        :param history: times of earlier restarts, oldest first.
        :param now: the time of the restart being decided.
        :returns: the history to keep (restarts still inside the window, plus
            ``now``) if the restart is allowed, or ``None`` if the budget is spent.
        """
        recent = tuple(moment for moment in history if moment > now - self.period)
        if len(recent) >= self.max_restarts:
            return None
        return (*recent, now)
