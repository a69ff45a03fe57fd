"""Input-schema sanitizing (R-TOOL-2).

Some model APIs reject JSON Schema keywords that MCP servers commonly emit.
:func:`sanitize_schema` drops them recursively, everywhere they can appear as
*keywords* — but never a property that merely has the same name: a tool may
well take an argument called ``$schema``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

__all__ = ["DEFAULT_DROPPED_KEYWORDS", "sanitize_schema"]

DEFAULT_DROPPED_KEYWORDS: Final = frozenset({"$schema", "exclusiveMinimum", "exclusiveMaximum"})
"""Keywords removed by default."""

# Keywords whose value is a mapping of *names* to schemas (or, for the dependency
# keywords, to lists of names): the names are data.
_NAMED_SCHEMAS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependentRequired", "dependencies"}
)

# Keywords whose value is a JSON instance, not a schema: copied as is, keys and all.
_INSTANCES: Final = frozenset({"const", "enum", "default", "examples"})


def sanitize_schema(schema: Mapping[str, Any], dropped: Iterable[str] = DEFAULT_DROPPED_KEYWORDS) -> dict[str, Any]:
    """Return a copy of ``schema`` without the ``dropped`` keywords, at any depth.

    :param schema: a JSON Schema object (not modified).
    :param dropped: keywords to remove.
    """
    drop = frozenset(dropped)
    return _clean_schema(schema, drop)


def _clean_schema(schema: Mapping[str, Any], drop: frozenset[str]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in _INSTANCES:
            cleaned[key] = _copy_instance(value)
        elif key in _NAMED_SCHEMAS and isinstance(value, Mapping):
            named = cast("Mapping[str, Any]", value)
            cleaned[key] = {name: _clean_value(sub, drop) for name, sub in named.items()}
        else:
            cleaned[key] = _clean_value(value, drop)
    return cleaned


def _clean_value(value: Any, drop: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return _clean_schema(value, drop)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(value, list):
        return [_clean_value(item, drop) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _copy_instance(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy_instance(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_copy_instance(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value
