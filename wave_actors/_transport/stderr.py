"""A bounded in-memory log of a server's stderr (R-CFG-9).

Servers write logs, stack traces and progress bars to stderr. It is never
parsed; the last lines are kept so that an error can say *why* a server died,
and memory stays bounded however much a server writes.

The stdio transport (:mod:`.stdio`) makes it and
:class:`~wave_actors._transport.stdout.ServerOutput` feeds it; dial errors
(:func:`~wave_actors._transport.failures.dial_error`) end with its tail, and
the open connection carries it (``Connection.stderr``).
"""

from __future__ import annotations

import collections
from typing import Final

__all__ = ["StderrLog"]

_MAX_LINE_CHARS: Final = 2_000


class StderrLog:
    """The last ``max_lines`` lines a server wrote to stderr.

    Lines longer than 2 000 characters are cut; a partial last line (no
    newline yet) is held until it completes or the stream ends.

    :param max_lines: how many complete lines to keep.
    """

    __slots__ = ("_lines", "_max_lines", "_partial")

    def __init__(self, max_lines: int = 200) -> None:
        self._max_lines = max_lines
        # Made at the first line: most servers write nothing, and an empty deque is 600 bytes.
        self._lines: collections.deque[str] | None = None
        self._partial = ""

    def _keep(self, line: str) -> None:
        if self._lines is None:
            self._lines = collections.deque(maxlen=self._max_lines)
        self._lines.append(line)

    def feed(self, data: bytes) -> None:
        """Add a chunk of raw stderr output."""
        text = self._partial + data.decode("utf-8", errors="replace")
        *complete, self._partial = text.split("\n")
        for line in complete:
            self._keep(line[:_MAX_LINE_CHARS])
        if len(self._partial) > _MAX_LINE_CHARS:
            self._keep(self._partial[:_MAX_LINE_CHARS])
            self._partial = ""

    def close(self) -> None:
        """Keep the partial last line: the stream has ended."""
        if self._partial:
            self._keep(self._partial)
            self._partial = ""

    def lines(self) -> tuple[str, ...]:
        """The kept lines, oldest first."""
        return tuple(self._lines or ())

    def tail(self, count: int = 5) -> str:
        """The last ``count`` non-blank lines joined by newlines (for error messages)."""
        kept = [line for line in self._lines or () if line.strip()]
        if self._partial.strip():
            kept.append(self._partial)
        return "\n".join(kept[-count:])
