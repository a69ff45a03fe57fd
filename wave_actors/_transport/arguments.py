"""Tool-call arguments, checked in the caller's task before anything is queued (R-TOOL-9).

A value JSON cannot carry must fail the one call that holds it, in the task
that made it. Found later, in the stdio writer, it ends the writer and with
it the whole connection: an unrelated call in flight fails, the server
restarts, and a few such calls spend the reconnect budget. So
:meth:`Session.call_tool <wave_actors.Session.call_tool>` calls
:func:`tool_call_arguments` first.

What JSON cannot carry, each a :class:`TypeError` naming where it is:

- a string or key with a lone surrogate (``os.fsdecode`` of a file name that
  is not UTF-8 makes one): JSON text is Unicode, which has no such character;
- a key that is not a string (JSON object keys are strings; ``json.dumps``
  would silently turn ``1`` into ``"1"``);
- ``bytes``, sets and other objects (no JSON type);
- ``NaN`` and the infinities (not JSON numbers; the SDK would send ``null``);
- an integer too long to write as text (Python's limit, 4 300 digits, is
  also what a server written in Python reads back);
- containers nested more than :data:`MAX_DEPTH` levels, or containing
  themselves (MCP servers built on the reference SDK cannot read messages
  nested past 200 levels, the request included).

Cost. One walk that makes the plain copy sent (``dict``, ``list``, ``str``,
``int``, ``float``, ``bool``, ``None``: a ``MappingProxyType`` or a named
tuple inside becomes plain data, and the caller may change its own mapping
afterwards). Plain scalars are checked inline with a type test (and one
``isascii`` per string), so ordinary arguments cost well under a microsecond
and a thousand records about what the SDK then spends serializing them.
Circular references are looked for only once the walk went too deep, so
nothing tracks the containers on the way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final, cast

__all__ = ["MAX_CONTAINERS", "MAX_DEPTH", "tool_call_arguments"]

MAX_DEPTH: Final = 192
"""How deeply arguments may nest objects and arrays (the arguments object itself is level 1).

A little under what servers built on the reference MCP SDK can read: their
JSON parser stops 200 levels deep, the request around the arguments
included, and a request it cannot read is never answered."""

MAX_CONTAINERS: Final = 100_000
"""How many objects and arrays arguments may hold in all (a list of numbers is one).

A container held twice is written twice, so shared containers nested a few
dozen levels deep would be astronomically large as JSON: this bound ends the
walk (and says so) within a fraction of a second instead of freezing the
host on them. A hundred thousand records is megabytes of JSON, past what a
tool call carries."""
_TOO_MANY: Final = f"more than {MAX_CONTAINERS:,} objects and arrays in all (shared ones count each time they appear)"
# Below this many bits an int is far from Python's 4 300-digit limit for writing it as text.
_SAFE_INT_BITS: Final = 14_000


class _TooDeep(Exception):
    """Nested past :data:`MAX_DEPTH`; a cycle always is, so the caller then tells which it was."""


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
        return _object(cast("Mapping[Any, Any]", arguments), 1, [MAX_CONTAINERS])
    except _Unsendable as error:
        where = "".join(reversed(error.path))
        raise TypeError(f"arguments{where} of {name!r}: {error.reason}; nothing was sent") from None
    except (_TooDeep, RecursionError):  # the latter only when called from very deep in the caller's stack
        # Tracking the containers on the path would cost every call; a cycle is found only when one is suspected.
        looped = _circular(cast("Mapping[Any, Any]", arguments))
        what = "contain themselves (a circular reference)" if looped else f"nest deeper than {MAX_DEPTH} levels"
        raise TypeError(f"arguments of {name!r} {what}, which JSON cannot carry; nothing was sent") from None


def _circular(root: object) -> bool:
    """Whether ``root`` contains itself: a depth-first search that visits each container once."""
    on_path: set[int] = set()
    finished: set[int] = set()
    stack: list[tuple[int, Iterator[Any]]] = []
    members = _members(root)
    if members is None:
        return False
    on_path.add(id(root))
    stack.append((id(root), members))
    while stack:
        container, remaining = stack[-1]
        for child in remaining:
            inner = _members(child)
            if inner is None or id(child) in finished:
                continue
            if id(child) in on_path:
                return True
            on_path.add(id(child))
            stack.append((id(child), inner))
            break
        else:
            stack.pop()
            on_path.discard(container)
            finished.add(container)
    return False


def _members(value: object) -> Iterator[Any] | None:
    if isinstance(value, Mapping):
        return iter(cast("Mapping[Any, Any]", value).values())
    if isinstance(value, list | tuple):
        return iter(cast("list[Any]", value))
    return None


def _object(value: Mapping[Any, Any], depth: int, budget: list[int]) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _TooDeep
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unsendable(_TOO_MANY)
    plain: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            if not isinstance(key, str):
                raise _Unsendable(f"a key {_kind(key)}; JSON object keys are strings")
            key = str.__str__(key)  # a StrEnum member, say: its plain text
        if not key.isascii():
            _check_text(key, "a key")
        # The plain scalars inline (here and in _array): a call per value would be most of the walk's cost.
        kind = type(cast("object", item))
        if (
            (kind is str and item.isascii())
            or (kind is int and item.bit_length() <= _SAFE_INT_BITS)
            or (kind is float and -math.inf < item < math.inf)
            or item is None
            or kind is bool
        ):
            plain[key] = item
            continue
        try:
            plain[key] = _value(item, depth, budget)
        except _Unsendable as error:
            error.path.append(f"[{_shown(key)}]")
            raise
    return plain


def _array(value: list[Any] | tuple[Any, ...], depth: int, budget: list[int]) -> list[Any]:
    if depth > MAX_DEPTH:
        raise _TooDeep
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unsendable(_TOO_MANY)
    plain: list[Any] = []
    for index, item in enumerate(value):
        kind = type(cast("object", item))
        if (
            (kind is str and item.isascii())
            or (kind is int and item.bit_length() <= _SAFE_INT_BITS)
            or (kind is float and -math.inf < item < math.inf)
            or item is None
            or kind is bool
        ):
            plain.append(item)
            continue
        try:
            plain.append(_value(item, depth, budget))
        except _Unsendable as error:
            error.path.append(f"[{index}]")
            raise
    return plain


def _value(value: object, depth: int, budget: list[int]) -> Any:
    # Exact types first: they are nearly every value, and a type test is the cheapest check there is.
    if type(value) is str:
        if not value.isascii():
            _check_text(value, "a string")
        return value
    if type(value) is int:
        if value.bit_length() > _SAFE_INT_BITS:
            _check_integer(value)
        return value
    if value is None or type(value) is bool:
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise _Unsendable(f"{value!r} is not a JSON number (NaN and the infinities are not finite)")
        return value
    if type(value) is dict:
        return _object(cast("dict[Any, Any]", value), depth + 1, budget)
    if type(value) is list or type(value) is tuple:
        return _array(cast("list[Any]", value), depth + 1, budget)
    return _subclass_value(value, depth, budget)


def _subclass_value(value: object, depth: int, budget: list[int]) -> Any:
    """Other mappings, and subclasses of the JSON types (``IntEnum``, ``StrEnum``, named tuples...), made plain."""
    if isinstance(value, Mapping):  # an ABC check, slower than a type test: only past the common types
        return _object(cast("Mapping[Any, Any]", value), depth + 1, budget)
    if isinstance(value, str):
        return _value(str.__str__(value), depth, budget)
    if isinstance(value, int):
        return _value(int(value), depth, budget)
    if isinstance(value, float):
        return _value(float(value), depth, budget)
    if isinstance(value, list | tuple):
        return _array(cast("list[Any]", value), depth + 1, budget)
    if isinstance(value, bytes | bytearray | memoryview):
        raise _Unsendable(f"a value {_kind(value)}; JSON has no bytes: decode them to text, or encode them (base64)")
    if isinstance(value, set | frozenset):
        raise _Unsendable(f"a value {_kind(value)}; JSON has no sets: pass a list")
    raise _Unsendable(f"a value {_kind(value)}, which is not a JSON value")


def _check_integer(value: int) -> None:
    try:
        str(value)
    except ValueError:
        raise _Unsendable("an integer too long to write as text (more than 4 300 digits)") from None


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
