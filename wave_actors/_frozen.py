"""Read-only mappings for the fields of frozen records.

``attrs.frozen`` stops reassignment, not mutation of a dict held in a field;
records that are handed out freely (configs, statuses, declarations) hold
their mappings behind :class:`types.MappingProxyType` instead, copied on the
way in so the caller's dict cannot change them either.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast

__all__ = ["empty_mapping", "freeze_mapping"]

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


# Read-only, so one empty mapping serves every record (idle sessions hold thousands).
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def freeze_mapping(value: Mapping[_Key, _Value] | None) -> Mapping[_Key, _Value]:
    """A read-only copy of ``value`` (``None`` or empty gives the shared empty one).

    A mapping that is read-only already (a :class:`~types.MappingProxyType`,
    as every record's field is) is kept as it is, not copied: a record made
    from another's fields (a status's tool from its listing) shares them, so a
    connection's tool schemas are held once, not once per record.
    """
    if type(value) is MappingProxyType:
        return cast("Mapping[_Key, _Value]", value)
    return MappingProxyType(dict(value)) if value else _EMPTY


def empty_mapping() -> Mapping[str, Any]:
    """The empty read-only mapping, for ``attrs.field(factory=...)``."""
    return _EMPTY
