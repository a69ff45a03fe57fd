"""Text from a server, a model or a repository, made safe to place inside a structure of ours.

A server chooses its name, its tools' names, their descriptions and its
instructions; a model chooses the arguments it passes. All of it is data, and
this module is where data is escaped before it becomes part of a line, a
heading, a marker or a tag of ours: the working-set section and the gateway's
answers (R-WS-5), the instruction announcements (R-INS-7) and the command's
human output (R-CLI).

The characters that can forge structure, or hide text, are the ones
:meth:`str.isprintable` refuses: controls (``ESC``, ``BEL``, ``\\r``, ``\\x85``
and the rest of C0 and C1), every Unicode line and paragraph separator
(U+2028, U+2029), invisible format characters (zero-width and bidirectional
controls, U+2060, U+FEFF, the tag characters U+E0000..U+E007F that can spell
a hidden text), lone surrogates, private-use and unassigned code points, and
spaces other than U+0020. The ways to show them:

* :func:`visible` writes each as a Python-style escape (``\\x1b``,
  ``\\u2028``, ``\\U000e0041``), keeping spaces and the characters asked for:
  for prose a person or a model reads, never parsed back;
* :func:`one_line` makes prose one line: every run of whitespace (each kind
  of line break included) becomes one space, then :func:`visible`;
* :func:`quoted` writes a name as a JSON string literal with each of them,
  and ``<`` and ``>``, as a JSON escape, so that a model can pass the exact
  name back and no name can spell a line break or a tag;
  :func:`shown_name` leaves a name of word characters, ``.`` and ``-`` bare
  and quotes every other, so a name can never equal or contain a marker of
  ours such as `` [read-only]``;
* :func:`echoed` and :func:`bounded` quote a model's input back in an
  answer, cut to a bound with the length said (R-WS-6);
* :func:`json_visible` escapes them in JSON text written for a terminal;
* :func:`frame_safe` keeps a text from opening or closing a tag of the
  frame a template puts around it (the instructions' and the server's own
  purpose in the working set: R-INS-7, R-WS-5).

Nothing here does I/O; the module imports nothing of the package.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from typing import Final

__all__ = [
    "ECHO_LIMIT",
    "bounded",
    "echoed",
    "frame_safe",
    "json_visible",
    "one_line",
    "quoted",
    "shown_name",
    "visible",
]

_BARE_NAME: Final = re.compile(r"[\w.-]+")
"""A name shown without quotes: word characters of any script, digits, ``_``, ``.`` and ``-``."""

_ANGLE_BRACKETS: Final = frozenset("<>")

ECHO_LIMIT: Final = 120
"""The most characters of a model's input an answer quotes back (R-WS-6)."""


def _python_escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the basic plane JSON escapes a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _is_space(char: str) -> bool:
    return unicodedata.category(char) == "Zs"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character :meth:`str.isprintable` refuses written as its Python escape.

    Spaces of every kind (Unicode category Zs) are kept, and so is each
    character of ``keep`` (``"\\n\\t"`` for a text whose lines are kept).

    :param text: text from a server, a model or a file.
    :param keep: characters to leave as they are.
    """
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char in keep or _is_space(char) else _python_escape(char) for char in text
    )


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one line of prose: whitespace runs made one space, the rest :func:`visible`, cut to ``limit``.

    Every kind of line break (``\\n``, ``\\r``, ``\\v``, ``\\f``, ``\\x1c``..``\\x1e``,
    ``\\x85``, U+2028, U+2029) is whitespace to :meth:`str.split`, so none
    survives. A cut text ends with ``…``.

    :param text: text from a server, a model or a file.
    :param limit: the most characters of the result, ``…`` included; ``None`` for no limit.
    """
    line = visible(" ".join(text.split()))
    if limit is None or len(line) <= limit:
        return line
    return line[: limit - 1].rstrip() + "…"


def quoted(text: str) -> str:
    """``text`` as a JSON string literal that prints as one plain line and spells no tag.

    Valid JSON that decodes to ``text`` exactly (lone surrogates included):
    quotes, backslashes, every character :meth:`str.isprintable` refuses
    (U+0020 aside) and ``<``, ``>`` are JSON escapes; everything else, non-ASCII
    letters included, is itself.

    :param text: a name, or other text a model may have to pass back exactly.
    """
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if body.isprintable() and not _ANGLE_BRACKETS.intersection(body):
        return f'"{body}"'
    escaped = "".join(
        char if char.isprintable() and char not in _ANGLE_BRACKETS else _json_escape(char) for char in body
    )
    return f'"{escaped}"'


def json_visible(text: str) -> str:
    """JSON text, as :func:`json.dumps` writes it, with every character :meth:`str.isprintable` refuses escaped.

    ``json.dumps(..., ensure_ascii=False)`` escapes only C0 controls: DEL, the
    C1 controls, bidirectional overrides and the other invisible characters
    stay raw. Outside strings it writes only spaces and newlines, which are
    kept; every other such character is inside a string, where a JSON escape
    decodes to the same text.

    :param text: the output of :func:`json.dumps`.
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char == "\n" else _json_escape(char) for char in text)


def shown_name(name: str) -> str:
    """``name`` bare when it is word characters, ``.`` and ``-`` only; otherwise :func:`quoted`.

    A bare name holds no space, bracket, quote or parenthesis, so it never
    starts like a quoted one nor ends like a marker; every other name is a
    JSON string. Either way the model can pass it back exactly.

    :param name: a server's or a tool's name.
    """
    return name if _BARE_NAME.fullmatch(name) else quoted(name)


def echoed(text: str, limit: int = ECHO_LIMIT) -> str:
    """A model's input quoted back in an answer: :func:`quoted`, cut to ``limit`` characters with the length said.

    :param text: what the model sent (a name, a key).
    :param limit: the most characters of ``text`` shown.
    """
    if len(text) <= limit:
        return quoted(text)
    return f"{quoted(text[:limit])}… ({len(text)} characters, the first {limit} shown)"


def bounded(text: str, limit: int) -> str:
    """Prose that may quote a model's input, as :func:`one_line` cut to ``limit`` with the length said.

    :param text: a message that may hold what the model sent.
    :param limit: the most characters kept before the note on the length.
    """
    line = one_line(text)
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line)} characters, the first {limit} shown)"


@functools.lru_cache(maxsize=16)
def _frame_tag(template: str) -> re.Pattern[str] | None:
    """What in a text would open or close a tag of ``template``: a ``<`` before one of its tag names."""
    names = sorted(set(re.findall(r"<\s*/?\s*([A-Za-z][\w.:-]*)", template)))
    if not names:
        return None
    return re.compile(r"<(?=\s*/?\s*(?:" + "|".join(map(re.escape, names)) + "))", re.IGNORECASE)


def frame_safe(text: str, template: str) -> str:
    """``text`` with every ``<`` that would open or close a tag ``template`` uses written ``&lt;``.

    A frame of ours (``<mcp-server-instructions ...>``, ``</...>``) says where a
    server's words begin and end; text inside it must hold no tag of the frame,
    in any case, with or without spaces after ``<`` or ``/``, so the frame has
    exactly one opening and one closing tag. Other ``<`` are left alone, and so
    is everything else: make the text :func:`visible` (or :func:`one_line`) first.

    :param text: the server's text, to stand inside the frame.
    :param template: the format string that puts the frame around it.
    """
    tag = _frame_tag(template)
    return text if tag is None else tag.sub("&lt;", text)
