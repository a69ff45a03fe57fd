"""Delay before a restart: exponential, capped, jittered, and reset by a long run."""

from __future__ import annotations

from random import Random
from typing import final

import attrs


@final
@attrs.frozen
class Backoff:
    """Delay before the n-th consecutive restart of a child.

    ``delay(attempt) = min(maximum, initial * multiplier ** attempt) * (1 - jitter * u)``
    with ``u`` uniform in ``[0, 1)`` from the supervisor's random source. Jitter
    only *shortens* the delay, so ``maximum`` is a hard ceiling and children
    that crashed together (same upstream outage) spread out instead of
    reconnecting in lockstep.

    ``attempt`` counts restarts since the child last stayed up (from its
    ``started()``) for at least ``reset_after`` seconds: a connection that
    lived an hour and then dropped is retried quickly, a crash loop slows down.

    :param initial: delay of the first restart, in seconds.
    :param multiplier: growth factor per consecutive restart.
    :param maximum: cap on the delay, in seconds.
    :param jitter: fraction of the delay that may be randomly removed, 0 to 1.
    :param reset_after: seconds a child must stay up for the next crash to
        start again from ``initial``.
    :raises ValueError: on a negative duration, ``multiplier < 1``,
        ``maximum < initial`` or ``jitter`` outside ``[0, 1]``.
    """

    initial: float = attrs.field(default=0.1, validator=attrs.validators.ge(0.0))
    multiplier: float = attrs.field(default=2.0, validator=attrs.validators.ge(1.0))
    maximum: float = 30.0
    jitter: float = attrs.field(default=0.1, validator=[attrs.validators.ge(0.0), attrs.validators.le(1.0)])
    reset_after: float = attrs.field(default=10.0, validator=attrs.validators.ge(0.0))

    def __attrs_post_init__(self) -> None:
        if not self.maximum >= self.initial:
            raise ValueError(f"maximum ({self.maximum!r}) must be >= initial ({self.initial!r})")

    def delay(self, attempt: int, random: Random) -> float:
        """Seconds to wait before restart number ``attempt`` (0-based) of a streak.

        :param attempt: consecutive restarts already made in this streak.
        :param random: the jitter source; pass a seeded ``Random`` for
            reproducible delays.
        """
        try:
            grown = self.initial * self.multiplier**attempt
        except OverflowError:
            grown = self.maximum if self.initial > 0 else 0.0
        return min(self.maximum, grown) * (1.0 - self.jitter * random.random())
