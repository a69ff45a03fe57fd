"""Cutting a stdio server's stdout into protocol lines, with a bound on their length (R-CFG-9, R-TOOL-12).

MCP over stdio sends one JSON-RPC message per line. :class:`LineFramer`
takes the bytes as the pipe hands them over, in chunks that end anywhere,
and gives back the lines they complete. Pure: no I/O, no parsing, no trio;
the stdio transport's :class:`~.stdout.ServerOutput` reads the pipe, feeds
it, and parses each line.

Every line is bounded (``TransportOptions.max_message_bytes``). A line
longer than the bound, whether it arrives in one chunk or over many, is
never held whole: once it passes the bound the framer keeps only its first
:data:`HEAD_BYTES` and its last :data:`TAIL_BYTES`, skips the rest as it
arrives, and when the line ends reports it as a :class:`LongLine`. The
transport reads from those ends which request the line answered and fails
that request alone; the lines after it are framed as usual. So a server that
writes a huge line, or never ends one, costs the bound and no more.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "LineFramer", "LongLine"]

HEAD_BYTES: Final = 4096
"""How much of the start of a line over the bound is kept (serializers that write the id first put it there)."""

TAIL_BYTES: Final = 4096
"""How much of the end of a line over the bound is kept (the TypeScript SDK writes the id last)."""


@attrs.frozen
class LongLine:
    """A line longer than the bound, skipped as it arrived.

    :param head: its first :data:`HEAD_BYTES` bytes.
    :param tail: its last :data:`TAIL_BYTES` bytes.
    :param size: its length, its newline not counted.
    """

    head: bytes
    tail: bytes
    size: int


@final
class LineFramer:
    """Splits a byte stream into lines of at most ``max_line_bytes``, and reports the longer ones.

    Lines come back without their ``\\n``; lines that are empty or only
    white space are no message and are dropped.

    :param max_line_bytes: the longest line given whole, its newline not
        counted; a longer one comes back as a :class:`LongLine`.
    """

    __slots__ = ("_head", "_held", "_parts", "_size", "_skipping", "_tail", "max_line_bytes")

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._parts: list[bytes] = []  # the start of a line not yet ended, within the bound
        self._held = 0  # its bytes
        # A line over the bound, being skipped: its ends and its size so far.
        self._skipping = False
        self._head = b""
        self._tail = b""
        self._size = 0

    @property
    def held(self) -> int:
        """Bytes held now: the unfinished line, or the ends of a line being skipped."""
        return len(self._head) + len(self._tail) if self._skipping else self._held

    def feed(self, chunk: bytes) -> list[bytes | LongLine]:
        """The lines ``chunk`` completes, in order; its unfinished end is held (or skipped) for the next chunk.

        :param chunk: the next bytes of the stream (not empty).
        :returns: the complete, non-blank lines, and a :class:`LongLine` in
            place of each line over the bound.
        """
        items: list[bytes | LongLine] = []
        start = 0
        end = len(chunk)
        while start < end:
            newline = chunk.find(b"\n", start)
            stop = end if newline < 0 else newline
            if self._skipping:
                self._skip(chunk[start:stop])
            elif self._held + stop - start > self.max_line_bytes:
                self._start_skipping(chunk[start:stop])
            elif newline >= 0:
                self._keep(items, chunk[start:stop])
            else:
                self._parts.append(chunk[start:stop] if start else chunk)
                self._held += stop - start
            if newline < 0:
                break
            if self._skipping:
                items.append(LongLine(self._head, self._tail, self._size))
                self._skipping = False
                self._head = self._tail = b""
                self._size = 0
            start = newline + 1
        return items

    def _keep(self, items: list[bytes | LongLine], end: bytes) -> None:
        line = b"".join((*self._parts, end)) if self._parts else end
        self._parts.clear()
        self._held = 0
        if line and not line.isspace():
            items.append(line)

    def _start_skipping(self, piece: bytes) -> None:
        """The line passed the bound: keep its ends, drop what is held."""
        parts = [*self._parts, piece]
        head = bytearray()
        for part in parts:
            head += part[: HEAD_BYTES - len(head)]
            if len(head) == HEAD_BYTES:
                break
        tail = b""
        for part in reversed(parts):
            tail = part[-(TAIL_BYTES - len(tail)) :] + tail
            if len(tail) == TAIL_BYTES:
                break
        self._head, self._tail = bytes(head), tail
        self._size = self._held + len(piece)
        self._parts.clear()
        self._held = 0
        self._skipping = True

    def _skip(self, piece: bytes) -> None:
        self._size += len(piece)
        if len(self._head) < HEAD_BYTES:
            self._head += piece[: HEAD_BYTES - len(self._head)]
        if len(piece) >= TAIL_BYTES:
            self._tail = piece[-TAIL_BYTES:]
        elif piece:
            self._tail = (self._tail + piece)[-TAIL_BYTES:]
