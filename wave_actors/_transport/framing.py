"""Cutting a stdio server's stdout into protocol lines, with a bound on their length (R-CFG-9).

MCP over stdio sends one JSON-RPC message per line. :class:`LineFramer`
takes the bytes as the pipe hands them over, in chunks that end anywhere,
and gives back the lines they complete. Pure: no I/O, no parsing, no trio;
the stdio transport's :class:`~.stdout.ServerOutput` reads the pipe, feeds
it, and parses each line.

Every line is bounded (``TransportOptions.max_message_bytes``): a line
longer than the bound, whether it arrives in one chunk or is still
unfinished, stops the framer (:attr:`LineFramer.overflowed`), and the
transport ends the connection. So a server that never ends its line cannot
make the transport hold more than the bound either.
"""

from __future__ import annotations

from typing import final

__all__ = ["LineFramer"]


@final
class LineFramer:
    """Splits a byte stream into lines of at most ``max_line_bytes``.

    Lines come back without their ``\\n``; lines that are empty or only
    white space are no message and are dropped.

    :param max_line_bytes: the longest line accepted, its newline not
        counted; a longer one, finished or not, stops the framer.
    """

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self.overflowed = False
        """Set once a line was longer than ``max_line_bytes``; it and everything after it are dropped."""
        self._parts: list[bytes] = []  # the start of a line not yet ended
        self._held = 0  # its bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes, in order; its unfinished end is held for the next chunk.

        :param chunk: the next bytes of the stream (not empty).
        :returns: the complete, non-blank lines; once a line is too long, the
            lines before it and then nothing, ever again.
        """
        if self.overflowed:
            return []
        lines: list[bytes] = []
        limit = self.max_line_bytes
        start = 0
        newline = chunk.find(b"\n")
        if newline >= 0 and self._parts:
            if self._held + newline > limit:
                return self._overflow(lines)
            self._parts.append(chunk[:newline])
            self._keep(lines, b"".join(self._parts))
            self._parts.clear()
            self._held = 0
            start = newline + 1
            newline = chunk.find(b"\n", start)
        while newline >= 0:
            if newline - start > limit:
                return self._overflow(lines)
            self._keep(lines, chunk[start:newline])
            start = newline + 1
            newline = chunk.find(b"\n", start)
        if start < len(chunk):
            self._held += len(chunk) - start
            if self._held > limit:
                return self._overflow(lines)
            self._parts.append(chunk[start:] if start else chunk)
        return lines

    def _overflow(self, lines: list[bytes]) -> list[bytes]:
        """Drop what is held and stop: ``lines``, the ones before the long one, are the last."""
        self._parts.clear()
        self._held = 0
        self.overflowed = True
        return lines

    @staticmethod
    def _keep(lines: list[bytes], line: bytes) -> None:
        if line and not line.isspace():
            lines.append(line)
