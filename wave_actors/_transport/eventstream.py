"""Server-sent events, parsed incrementally with a bound on each event's size.

The SSE transport (:mod:`.sse`) reads its event stream through
:class:`EventParser`. It follows the WHATWG rules (lines ended by CRLF, LF or
CR; ``field: value``; ``data`` lines joined by newlines; a blank line ends an
event; lines starting with ``:`` are comments) and bounds what it holds:
an event whose lines add up to more than ``limit`` bytes is not kept. Its
remaining bytes are skipped as they arrive, and the parser reports it as an
:class:`Oversized` item carrying the first :data:`HEAD_BYTES` of its data, so
the transport can still read which request the event answered and fail that
request alone, while the stream and every later event go on. Memory stays
within ``limit`` plus one chunk, whatever the server sends.

Pure: no I/O, so every rule is a unit test (and chunking is a Hypothesis property).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = ["HEAD_BYTES", "Event", "EventParser", "Oversized"]

HEAD_BYTES: Final = 4096
"""How much of an oversized event's data is kept, to find the id of the request it answered."""

_LINE_END: Final = re.compile(rb"[\r\n]")


@attrs.frozen
class Event:
    """One complete server-sent event.

    :param event: its type (``"message"`` when the server named none).
    :param data: its ``data`` lines, joined by newlines.
    :param id: the last event id seen so far on the stream.
    :param retry: the reconnection time the server asked for, if this event carried one.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


@attrs.frozen
class Oversized:
    """An event that was larger than the limit and was dropped.

    :param head: the first :data:`HEAD_BYTES` of its data.
    :param size: the bytes of its lines, counted as for the limit (line ends and comments left out).
    :param limit: the limit it passed.
    """

    head: bytes
    size: int
    limit: int


class EventParser:
    """Turns the bytes of an event stream into :class:`Event` and :class:`Oversized` items.

    :param limit: the most bytes one event's lines may add up to; ``None`` for no limit.
    """

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit <= 0:
            raise ValueError(f"the event size limit must be positive, not {limit}")
        self._limit = limit
        self._line = bytearray()  # the current line, not yet ended
        self._after_cr = False  # the last chunk ended in CR: a leading LF belongs to it
        self._size = 0  # bytes of the current event's complete lines
        self._type = ""
        self._data: list[bytes] = []
        self._retry: int | None = None
        self._pending = False  # the current event has a field
        self._last_id = ""
        # Skipping an oversized event: its head, its size so far, and whether the current line is empty.
        self._skipping = False
        self._head = b""
        self._line_empty = True

    def feed(self, chunk: bytes) -> list[Event | Oversized]:
        """Parse ``chunk`` and return the items it completed, in order."""
        items: list[Event | Oversized] = []
        if not chunk:
            return items
        start = 0
        if self._after_cr:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                start = 1
        while True:
            found = _LINE_END.search(chunk, start)
            if found is None:
                self._append(chunk[start:])
                return items
            end = found.start()
            self._append(chunk[start:end])
            self._end_line(items)
            start = end + 1
            if chunk[end : end + 1] == b"\r":
                if end + 1 == len(chunk):
                    self._after_cr = True
                elif chunk[end + 1 : end + 2] == b"\n":
                    start += 1

    def _append(self, part: bytes) -> None:
        if not part:
            return
        if self._skipping:
            self._size += len(part)
            self._line_empty = False
            return
        self._line += part
        if self._limit is not None and self._size + len(self._line) > self._limit:
            self._start_skipping()

    def _start_skipping(self) -> None:
        """The current event passed the limit: keep its head, drop the rest."""
        data = b"\n".join(self._data)
        line = bytes(self._line)
        if line.startswith(b"data:"):
            value = line[5:].removeprefix(b" ")
            data = data + b"\n" + value if self._data else value
        self._head = data[:HEAD_BYTES]
        self._size += len(self._line)
        self._line.clear()
        self._data.clear()
        self._skipping = True
        self._line_empty = False

    def _end_line(self, items: list[Event | Oversized]) -> None:
        if self._skipping:
            if self._line_empty:  # the blank line that ends the oversized event
                assert self._limit is not None
                items.append(Oversized(self._head, self._size, self._limit))
                self._reset_event()
            self._line_empty = True
            return
        line = bytes(self._line)
        self._line.clear()
        if not line:
            if self._pending:
                data = b"\n".join(self._data).decode("utf-8", "replace")
                items.append(Event(self._type or "message", data, self._last_id, self._retry))
            self._reset_event()
            return
        if line.startswith(b":"):
            return  # a comment (a keep-alive, say): nothing is kept, so nothing is counted
        self._size += len(line)
        name, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if name == b"data":
            self._data.append(value)
            self._pending = True
        elif name == b"event":
            self._type = value.decode("utf-8", "replace")
            self._pending = True
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
                self._pending = True
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)
            self._pending = True

    def _reset_event(self) -> None:
        self._size = 0
        self._type = ""
        self._data = []
        self._retry = None
        self._pending = False
        self._skipping = False
        self._head = b""
        self._line_empty = True
