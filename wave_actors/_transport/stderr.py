"""A bounded in-memory log of a server's stderr (R-CFG-9).

Servers write logs, stack traces and progress bars to stderr. It is never
parsed; the last lines are kept so that an error can say *why* a server died,
and memory stays bounded however much a server writes.

An error message has room for a few of those lines only (:meth:`StderrLog.excerpt`),
and the last few are often not the ones that say why: ``npx`` prints npm's
``npm error 404 ...`` and then its "new version available" notice, a server
framework logs its shutdown after the exception that caused it. So the lines
are picked by what they look like, within the same bound: lines that read as
errors first, then the other lines, latest first, and notices, warnings and
empty framing lines (``npm error 404`` above ``npm error 404 Not Found``)
last. The picked lines keep the order they were written in. Looking at a
line's words is not parsing it: nothing is acted on, only chosen for display.

The stdio transport (:mod:`.stdio`) makes it and
:class:`~wave_actors._transport.stdout.ServerOutput` feeds it; dial errors
(:func:`~wave_actors._transport.failures.dial_error`) end with its tail, and
the open connection carries it (``Connection.stderr``).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = ["StderrExcerpt", "StderrLog"]

_MAX_LINE_CHARS: Final = 2_000

_ERROR_WORDS: Final = re.compile(
    r"\b(?:error|errors|fatal|panic|exception|traceback|failed|failure|denied|not found|cannot|can't|could not|"
    r"unable|no such|e404|enoent|eacces)\b|\berr!|\w(?:error|exception):",
    re.IGNORECASE,
)
_NOTICE_WORDS: Final = re.compile(
    r"\b(?:notice|warn|warning|info|debug|deprecated|update available|new (?:major|minor|patch) version)\b",
    re.IGNORECASE,
)

# How much a line is worth keeping in a short excerpt: lower is kept first.
_ERROR, _OTHER, _NOTICE, _FRAMING = range(4)


@attrs.frozen
class StderrExcerpt:
    """The lines of a server's stderr picked for an error message (:meth:`StderrLog.excerpt`).

    :param lines: the picked lines, in the order the server wrote them.
    :param total: how many non-blank lines there were to pick from.
    """

    lines: tuple[str, ...]
    total: int

    @property
    def omitted(self) -> int:
        """How many non-blank lines were left out."""
        return self.total - len(self.lines)


def _is_notice(line: str) -> bool:
    """Whether ``line`` starts as a notice or a warning does (``npm notice``, ``WARNING:``), whatever it mentions."""
    head = " ".join(line.split()[:2])
    return bool(_NOTICE_WORDS.search(head)) and not _ERROR_WORDS.search(head)


def _ranks(lines: Sequence[str]) -> list[int]:
    ranks: list[int] = []
    for index, line in enumerate(lines):
        words = line.strip()
        neighbours = [lines[at].strip() for at in (index - 1, index + 1) if 0 <= at < len(lines)]
        if any(neighbour.startswith(words) and len(neighbour) > len(words) for neighbour in neighbours):
            ranks.append(_FRAMING)  # "npm error 404" beside the line that says what the 404 was
        elif _is_notice(words):
            ranks.append(_NOTICE)
        elif _ERROR_WORDS.search(words):
            ranks.append(_ERROR)
        elif _NOTICE_WORDS.search(words):
            ranks.append(_NOTICE)
        else:
            ranks.append(_OTHER)
    return ranks


def _pick(lines: Sequence[str], count: int) -> tuple[str, ...]:
    """At most ``count`` of ``lines``: errors first (the first ones, and the last), then the others, latest first."""
    if len(lines) <= count:
        return tuple(lines)
    ranks = _ranks(lines)
    chosen: set[int] = set()
    for rank in (_ERROR, _OTHER, _NOTICE, _FRAMING):
        room = count - len(chosen)
        if room <= 0:
            break
        indexes = [index for index, line_rank in enumerate(ranks) if line_rank == rank]
        if rank == _ERROR and len(indexes) > room:
            # The first errors say what went wrong; the last one often says where to look.
            indexes = indexes[: room - 1] + indexes[-1:]
        chosen.update(indexes[-room:])
    return tuple(lines[index] for index in sorted(chosen))


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

    def _written(self) -> list[str]:
        kept = [line for line in self._lines or () if line.strip()]
        if self._partial.strip():
            kept.append(self._partial)
        return kept

    def tail(self, count: int = 5) -> str:
        """The last ``count`` non-blank lines joined by newlines."""
        return "\n".join(self._written()[-count:])

    def excerpt(self, count: int = 5) -> StderrExcerpt:
        """At most ``count`` non-blank lines that best say why the server failed, for an error message.

        Lines that read as errors are kept first (the first of them, and the
        last), then the latest other lines, then notices and warnings; the
        kept lines stay in the order they were written.

        :param count: how many lines at most.
        """
        written = self._written()
        return StderrExcerpt(_pick(written, count), len(written))
