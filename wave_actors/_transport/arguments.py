"""Tool-call arguments, checked and made plain JSON in the caller's task (R-TOOL-9).

A value JSON cannot carry must fail the one call that holds it, in the task
that made it, before anything is queued. Found later, in the stdio writer,
it ends the writer and with it the whole connection: an unrelated call in
flight fails, the server restarts, and a few such calls spend the reconnect
budget. So :func:`tool_call_arguments`, called by
:meth:`Session.call_tool <wave_actors.Session.call_tool>`, walks the
arguments once and returns a plain copy (``dict``, ``list``, ``str``,
``int``, ``float``, ``bool``, ``None``) that is exactly what will be sent:
the caller may mutate its own mapping afterwards without changing the call.

What JSON cannot carry, each a :class:`TypeError` naming where it is:

- a string or key with a lone surrogate (``os.fsdecode`` of a file name that
  is not UTF-8 makes one): JSON text is Unicode, which has no such character;
- a key that is not a string (JSON object keys are strings; ``json.dumps``
  would silently turn ``1`` into ``"1"``);
- ``bytes``, sets and other objects (no JSON type);
- ``NaN`` and the infinities (not JSON numbers; the SDK would send ``null``);
- an integer of more than about 4 000 digits (Python's own JSON reader, which
  many servers use, refuses more than 4 300);
- containers nested more than :data:`MAX_DEPTH` levels, or containing
  themselves (MCP servers built on the reference SDK refuse messages nested
  past about 200 levels, the envelope included).

The walk costs a few microseconds for ordinary arguments; its only
per-element work is a type test, and strings are checked with one
``isascii`` call unless they hold non-ASCII text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, cast

__all__ = ["MAX_DEPTH", "tool_call_arguments"]

MAX_DEPTH: Final = 100
"""How deeply arguments may nest objects and arrays (the arguments object itself is level 1)."""

# About 3 900 decimal digits: under Python's limit of 4 300 for turning an int into text.
_MAX_INT_BITS: Final = 13_000


class _Unsendable(Exception):
    """A value JSON cannot carry; ``path`` grows as the walk unwinds, innermost step first."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def tool_call_arguments(name: object, arguments: object) -> dict[str, Any]:
    """The arguments of a call of tool ``name`` as plain JSON data, or a :class:`TypeError` (R-TOOL-9).

    :param name: the model-visible tool name the caller passed; checked to be a string.
    :param arguments: the caller's arguments: a mapping with string keys, or ``None`` for none.
    :returns: a plain copy to send.
    :raises TypeError: ``name`` is not a string, ``arguments`` is not a mapping,
        or it holds a value JSON cannot carry; the message says which and where.
        Nothing was sent.
    """
    if not isinstance(name, str):
        raise TypeError(f"a tool name is a string such as 'mcp__server__tool', not {type(name).__name__}: {name!r}")
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise TypeError(
            f"arguments of {name!r} must be a JSON object (a mapping), not {type(arguments).__name__}; nothing was sent"
        )
    try:
        return _object(cast("Mapping[Any, Any]", arguments), 1, set())
    except _Unsendable as error:
        where = "".join(reversed(error.path))
        raise TypeError(f"arguments{where} of {name!r}: {error.reason}; nothing was sent") from None


def _object(value: Mapping[Any, Any], depth: int, active: set[int]) -> dict[str, Any]:
    _enter(value, depth, active)
    plain: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            if not isinstance(key, str):
                raise _Unsendable(f"a key {_kind(key)}; JSON object keys are strings")
            key = str.__str__(key)  # a StrEnum member, say: its plain text
        if not key.isascii():
            _check_text(key, "a key")
        try:
            plain[key] = _value(item, depth, active)
        except _Unsendable as error:
            error.path.append(f"[{_shown(key)}]")
            raise
    active.discard(id(value))
    return plain


def _array(value: list[Any] | tuple[Any, ...], depth: int, active: set[int]) -> list[Any]:
    _enter(value, depth, active)
    plain: list[Any] = []
    for index, item in enumerate(value):
        try:
            plain.append(_value(item, depth, active))
        except _Unsendable as error:
            error.path.append(f"[{index}]")
            raise
    active.discard(id(value))
    return plain


def _enter(container: object, depth: int, active: set[int]) -> None:
    if id(container) in active:
        raise _Unsendable("a circular reference: the value contains itself, which JSON cannot express")
    if depth > MAX_DEPTH:
        raise _Unsendable(f"nested deeper than {MAX_DEPTH} levels of objects and arrays")
    active.add(id(container))


def _value(value: object, depth: int, active: set[int]) -> Any:
    # Exact types first: they are nearly every value, and a type test is the cheapest check there is.
    if type(value) is str:
        if not value.isascii():
            _check_text(value, "a string")
        return value
    if type(value) is int:
        if value.bit_length() > _MAX_INT_BITS:
            raise _Unsendable("an integer of more than 3 900 digits; servers cannot read it back")
        return value
    if value is None or type(value) is bool:
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise _Unsendable(f"{value!r} is not a JSON number (NaN and the infinities are not finite)")
        return value
    if isinstance(value, Mapping):
        return _object(cast("Mapping[Any, Any]", value), depth + 1, active)
    if type(value) is list or type(value) is tuple:
        return _array(cast("list[Any]", value), depth + 1, active)
    return _subclass_value(value, depth, active)


def _subclass_value(value: object, depth: int, active: set[int]) -> Any:
    """Subclasses of the JSON types (``IntEnum``, ``StrEnum``, named tuples...) as their plain base value."""
    if isinstance(value, str):
        return _value(str.__str__(value), depth, active)
    if isinstance(value, int):
        return _value(int(value), depth, active)
    if isinstance(value, float):
        return _value(float(value), depth, active)
    if isinstance(value, list | tuple):
        return _array(cast("list[Any]", value), depth + 1, active)
    if isinstance(value, bytes | bytearray | memoryview):
        raise _Unsendable(f"a value {_kind(value)}; JSON has no bytes: decode them to text, or encode them (base64)")
    if isinstance(value, set | frozenset):
        raise _Unsendable(f"a value {_kind(value)}; JSON has no sets: pass a list")
    raise _Unsendable(f"a value {_kind(value)}, which is not a JSON value")


def _check_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        character = f"U+{ord(text[error.start]):04X}"
        raise _Unsendable(
            f"{what} has a lone surrogate ({character}) at index {error.start}, which JSON text cannot carry; "
            "decode file names with errors='replace', or pass their bytes encoded"
        ) from None


def _shown(key: str) -> str:
    # A key may be megabytes long; the message names it, it need not hold it.
    return repr(key) if len(key) <= 60 else repr(key[:60]) + "..."


def _kind(value: Any) -> str:
    return f"of type {type(value).__name__}"
