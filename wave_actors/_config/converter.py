"""Type-checking raw JSON entries with a strict cattrs converter (R-CFG-2, R-CFG-6, R-CFG-7).

cattrs' default hooks are built to *coerce*: they would turn ``5`` into
``"5"`` for a ``str`` field, iterate ``"abc"`` into ``("a", "b", "c")`` for a
tuple, and accept ``true`` where an integer is expected (``bool`` is a
subclass of ``int`` in Python). A configuration file that says
``"tool_timeout_ms": true`` or ``"args": "--verbose"`` is a mistake to report,
not something to guess at, so every hook registered here only *checks*:

* ``str``, ``bool``: the value must already be of that type;
* :data:`ToolTimeoutMs`: an ``int`` that is not a ``bool``, from 1 to
  :data:`~wave_actors._config.model.MAX_TOOL_TIMEOUT_MS`. JSON ``1000.0`` is a
  float and is rejected like ``1.5``: the user guide asks for an integer and a
  float in a file usually means a computed or mistyped value;
* :data:`GraceMs` (``shutdown.eof_ms``, ``shutdown.term_ms``): the same, from
  0 to :data:`~wave_actors._config.model.MAX_SHUTDOWN_GRACE_MS` (0 is a
  meaningful "do not wait");
* lists, objects and :class:`~wave_actors._config.model.ToolOverride` must be
  JSON arrays / objects before cattrs' own hook walks their items;
* :data:`SecretStr` (``env`` and ``headers`` values, ``url``, and
  ``oauth.client_secret`` and ``oauth.private_key``): like ``str``,
  but a wrong value is described by its type only, never shown, since it may
  be a token written in the wrong place (R-CFG-12).

``null`` is accepted as "absent" for the optional fields of :class:`RawEntry`
(cattrs does that for ``X | None``) but rejected for ``enabled``,
``tool_timeout_ms`` and the graces of ``shutdown``, where it could be read as
"off" or "no limit" (R-CFG-7, R-KILL-9).

Failures come back as :class:`EntryInvalid`, one :class:`FieldProblem` per bad
value, with a path such as ``args[1]`` or ``env['TOKEN']`` (built with
:func:`cattrs.transform_error`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, NewType, TypeVar

import attrs
import cattrs
from cattrs.v import format_exception

from wave_actors._config.model import (
    DEFAULT_TOOL_TIMEOUT_MS,
    MAX_SHUTDOWN_GRACE_MS,
    MAX_TOOL_TIMEOUT_MS,
    ToolOverride,
)
from wave_actors._config.redact import describe_secret

__all__ = [
    "CONVERTER",
    "ENTRY_FIELDS",
    "OAUTH_FIELDS",
    "SHUTDOWN_FIELDS",
    "EntryInvalid",
    "FieldProblem",
    "GraceMs",
    "RawEntry",
    "RawOAuth",
    "RawShutdown",
    "SecretStr",
    "ToolTimeoutMs",
    "describe_value",
    "structure_strictly",
]

ToolTimeoutMs = NewType("ToolTimeoutMs", int)
"""An ``int`` from 1 to :data:`MAX_TOOL_TIMEOUT_MS` (R-CFG-7)."""

GraceMs = NewType("GraceMs", int)
"""An ``int`` from 0 to :data:`MAX_SHUTDOWN_GRACE_MS` (R-KILL-9)."""

SecretStr = NewType("SecretStr", str)
"""A ``str`` that may hold a secret: a wrong value is described by its type only (R-CFG-12)."""


@attrs.frozen
class RawShutdown:
    """An entry's ``shutdown`` object as written: each grace absent, or a checked :data:`GraceMs`."""

    eof_ms: GraceMs | None = None
    term_ms: GraceMs | None = None


SHUTDOWN_FIELDS: Final = frozenset(field.name for field in attrs.fields(RawShutdown))
"""The settings a ``shutdown`` object may hold; others are ignored with a warning."""


@attrs.frozen
class RawOAuth:
    """An entry's ``oauth`` object as written, type-checked; its meaning is checked by the entry (R-AUTH-1).

    ``client_secret`` and ``private_key`` are :data:`SecretStr`: a wrong value
    is described by its type only (R-CFG-12).
    """

    redirect_uri: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    scopes: tuple[str, ...] | None = None
    client_metadata_url: str | None = None
    grant_type: str | None = None
    private_key: SecretStr | None = None
    issuer: str | None = None


OAUTH_FIELDS: Final = frozenset(field.name for field in attrs.fields(RawOAuth))
"""The settings an ``oauth`` object may hold; others are ignored with a warning."""


@attrs.frozen
class RawEntry:
    """One entry's fields as written, type-checked but not yet interpreted.

    Which transport the entry means, whether the fields fit it, expansion and
    the fingerprint are decided afterwards (:mod:`wave_actors._config.entry`).
    """

    type: str | None = None
    transport: str | None = None
    command: str | None = None
    args: tuple[str, ...] | None = None
    env: dict[str, SecretStr] | None = None
    cwd: str | None = None
    url: SecretStr | None = None
    headers: dict[str, SecretStr] | None = None
    enabled: bool = True
    description: str | None = None
    tool_timeout_ms: ToolTimeoutMs = ToolTimeoutMs(DEFAULT_TOOL_TIMEOUT_MS)
    tool_overrides: dict[str, ToolOverride] | None = None
    shutdown: RawShutdown | None = None
    oauth: RawOAuth | None = None


ENTRY_FIELDS: Final = frozenset(field.name for field in attrs.fields(RawEntry))
"""Every field an entry may have; others are ignored with a warning."""


@attrs.frozen
class FieldProblem:
    """One invalid value inside an entry.

    :param path: where, from the top of the structured object, e.g.
        ``"tool_timeout_ms"`` or ``"env['TOKEN']"``.
    :param message: what was expected and what was found.
    """

    path: str
    message: str


class EntryInvalid(Exception):
    """An entry failed type-checking; :attr:`problems` says where and why."""

    def __init__(self, problems: tuple[FieldProblem, ...]) -> None:
        super().__init__("; ".join(f"{problem.path}: {problem.message}" for problem in problems))
        self.problems = problems


class _InvalidValue(ValueError):
    """Raised by our hooks; its message is already meant for a person."""


_NOT_SHOWN: Final = " (not shown: it may be a secret)"


def describe_value(value: object) -> str:
    """Name a JSON value for an error message, briefly and in JSON's words.

    Strings are quoted and cut to 60 characters; containers are named, not
    dumped (they may hold secrets, and they can be long); integers too long to
    read are counted, not printed. Values that may be secrets are described
    with :func:`~wave_actors._config.redact.describe_secret` instead.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 64:
        # repr() of an integer with thousands of digits raises ValueError (and is no use to read).
        return "a very large number"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {shown!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _structure_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise _InvalidValue(f"expected a string, got {describe_value(value)}")
    return value


def _structure_secret(value: object, _: type) -> SecretStr:
    if not isinstance(value, str):
        raise _InvalidValue(f"expected a string, got {describe_secret(value)}{_NOT_SHOWN}")
    return SecretStr(value)


def _structure_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise _InvalidValue(f"expected true or false, got {describe_value(value)}")
    return value


def _structure_tool_timeout(value: object, _: type) -> ToolTimeoutMs:
    # bool first: True is an int to Python but not to anyone writing JSON.
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOOL_TIMEOUT_MS:
        raise _InvalidValue(
            f"expected a whole number of milliseconds from 1 to {MAX_TOOL_TIMEOUT_MS}, got {describe_value(value)}"
        )
    return ToolTimeoutMs(value)


def _structure_grace(value: object, _: object) -> GraceMs:
    # null too: "eof_ms": null could be read as "no wait" or as "wait forever".
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SHUTDOWN_GRACE_MS:
        raise _InvalidValue(
            f"expected a whole number of milliseconds from 0 to {MAX_SHUTDOWN_GRACE_MS}, got {describe_value(value)}"
        )
    return GraceMs(value)


_T = TypeVar("_T")


def _only_lists(hook: Callable[[Any, Any], _T]) -> Callable[[object, Any], _T]:
    def structure(value: object, type_: Any) -> _T:
        if not isinstance(value, list | tuple):
            raise _InvalidValue(f"expected a list, got {describe_value(value)}")
        return hook(value, type_)

    return structure


def _only_objects(hook: Callable[[Any, Any], _T]) -> Callable[[object, Any], _T]:
    def structure(value: object, type_: Any) -> _T:
        if not isinstance(value, Mapping):
            raise _InvalidValue(f"expected an object, got {describe_value(value)}")
        return hook(value, type_)

    return structure


def _only_secret_objects(hook: Callable[[Any, Any], _T]) -> Callable[[object, Any], _T]:
    def structure(value: object, type_: Any) -> _T:
        if not isinstance(value, Mapping):
            raise _InvalidValue(f"expected an object, got {describe_secret(value)}{_NOT_SHOWN}")
        return hook(value, type_)

    return structure


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=True)
    # Scalars first: cattrs builds container hooks from the element hooks
    # registered at the time the container hook is created.
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(bool, _structure_bool)
    converter.register_structure_hook(ToolTimeoutMs, _structure_tool_timeout)
    converter.register_structure_hook(SecretStr, _structure_secret)
    converter.register_structure_hook(GraceMs, _structure_grace)
    # Optional only as "absent": cattrs would let an explicit null through.
    converter.register_structure_hook_func(lambda type_: type_ == (GraceMs | None), _structure_grace)
    # Generic aliases are not classes, so they are registered by predicate.
    checks: list[tuple[Any, Callable[[Callable[[Any, Any], Any]], Callable[[object, Any], Any]]]] = [
        (tuple[str, ...], _only_lists),
        (dict[str, SecretStr], _only_secret_objects),
        (Mapping[str, str], _only_objects),
        (ToolOverride, _only_objects),
        (dict[str, ToolOverride], _only_objects),  # after ToolOverride: it embeds that hook
        (RawShutdown, _only_objects),  # after GraceMs | None: it embeds that hook
        (RawOAuth, _only_objects),  # after the scalars and tuple[str, ...]: it embeds their hooks
    ]
    for container, check in checks:
        hook = check(converter.get_structure_hook(container))
        converter.register_structure_hook_func(lambda type_, container=container: type_ == container, hook)
    return converter


CONVERTER: Final = _make_converter()
"""The strict converter; other modules may structure their own attrs records with it.

cattrs builds a record's hook the first time the record is structured. Records
loaded from worker threads are built here, at import, so that the converter is
never changed while :func:`~wave_actors._config.load_config` runs (it is meant
to run in ``trio.to_thread.run_sync``).
"""

CONVERTER.get_structure_hook(RawEntry)


def _format(exception: BaseException, type_: type | None) -> str:
    if isinstance(exception, _InvalidValue):
        return str(exception)
    return format_exception(exception, type_)


def structure_strictly(value: Mapping[str, object], record: type[_T]) -> _T:
    """Structure ``value`` into ``record`` with :data:`CONVERTER`.

    :raises EntryInvalid: listing every invalid value, each with its path.
    """
    try:
        return CONVERTER.structure(value, record)
    except Exception as error:  # cattrs raises exception groups or, rarely, plain errors
        problems: list[FieldProblem] = []
        for line in cattrs.transform_error(error, path="$", format_exception=_format):
            message, _, where = line.rpartition(" @ ")
            path = where.removeprefix("$").removeprefix(".") or "?"
            problems.append(FieldProblem(path, message or line))
        raise EntryInvalid(tuple(problems)) from error
