"""Lines on a stdio server's stdout that are not JSON-RPC: logged, but never one record per line (R-CFG-9).

A server that prints its banner, a progress bar or a binary blob to stdout
breaks the protocol's rule, and the host should hear about it; but 6 MiB of
random bytes are some 25 000 lines, and one warning each would drown the log
(stderr is bounded the same way, by :class:`~wave_actors._transport.stderr.StderrLog`).
:class:`NoiseLog` logs the first such line of a window, counts the rest, and
logs the count when the window is over: at most two records per window,
whatever the server writes. :class:`~wave_actors._transport.stdout.ServerOutput` feeds it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import trio

__all__ = ["NOISE_WINDOW", "NoiseLog"]

logger = logging.getLogger(__name__)

NOISE_WINDOW: Final = 10.0
"""Seconds during which lines after the first logged one are only counted."""


class NoiseLog:
    """Counts a server's stdout lines that are not JSON-RPC, and logs them sparingly.

    :param server: the server's name.
    :param window: seconds after a logged line during which further lines are only counted.
    :param clock: the time now, in seconds (trio's clock by default, so tests can mock it).
    """

    __slots__ = ("_clock", "_counted", "_last", "_server", "_window", "_window_end", "total")

    def __init__(self, server: str, *, window: float = NOISE_WINDOW, clock: Callable[[], float] = trio.current_time):
        self._server = server
        self._window = window
        self._clock = clock
        self._window_end: float | None = None
        self._counted = 0
        self._last = b""
        self.total = 0
        """Every line reported since the start."""

    def line(self, line: bytes) -> None:
        """Report one line that is not JSON-RPC."""
        self.total += 1
        now = self._clock()
        if self._window_end is not None and now < self._window_end:
            self._counted += 1
            self._last = line
            return
        self.flush()
        logger.warning(
            "server %r wrote a line that is not JSON-RPC to stdout (logs belong on stderr): %.200r; "
            "more in the next %g s are counted, not shown",
            self._server,
            line,
            self._window,
        )
        self._window_end = now + self._window

    def tick(self) -> None:
        """Log the count if the window is over; cheap enough to call for every line read."""
        if self._counted and self._window_end is not None and self._clock() >= self._window_end:
            self.flush()

    def flush(self) -> None:
        """Log the lines counted in the current window, if any (also when the stream ends)."""
        if self._counted:
            logger.warning(
                "server %r wrote %d more lines that are not JSON-RPC within %g s of the one shown; the last: %.200r",
                self._server,
                self._counted,
                self._window,
                self._last,
            )
        self._counted = 0
        self._last = b""
        self._window_end = None
