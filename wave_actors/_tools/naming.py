"""Model-visible tool names (R-TOOL-1).

A tool ``search`` on server ``git hub`` is shown to the model as
``mcp__git_hub__search``: characters outside ``[A-Za-z0-9_-]`` become ``_``
and the result is at most 64 characters. Normalization can make two tools
collide (``a.b`` and ``a_b``) and shortening can too, so names are assigned for
a whole session at once by :func:`assign_names`, deterministically: the same
tools always get the same names, and the mapping back to ``(server, tool)`` is
exact.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["MAX_NAME_LENGTH", "PREFIX", "assign_names", "normalize"]

PREFIX: Final = "mcp"
MAX_NAME_LENGTH: Final = 64
_SEPARATOR: Final = "__"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_SUFFIX_LENGTH: Final = 8  # "_" + 7 hex digits


def normalize(text: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` by ``_``."""
    return _UNSAFE.sub("_", text)


def _digest(server: str, tool: str, salt: int) -> str:
    # "surrogatepass": a name read from JSON may hold a lone surrogate; valid text encodes as plain UTF-8.
    material = f"{server}\x00{tool}\x00{salt}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(material).hexdigest()[: _SUFFIX_LENGTH - 1]


def _candidate(server: str, tool: str, salt: int) -> str:
    name = f"{PREFIX}{_SEPARATOR}{normalize(server)}{_SEPARATOR}{normalize(tool)}"
    if len(name) <= MAX_NAME_LENGTH and salt == 0:
        return name
    return name[: MAX_NAME_LENGTH - _SUFFIX_LENGTH] + "_" + _digest(server, tool, salt)


def assign_names(tools: Iterable[tuple[str, str]]) -> Mapping[str, tuple[str, str]]:
    """Give every ``(server, tool)`` pair a unique model-visible name.

    Pairs are processed in sorted order so the result does not depend on the
    order servers connected. A name that fits and is free is used as is; a
    name that is too long, or that collides with an earlier one, is cut and
    given a short hash of the *raw* server and tool names (salted until
    free).

    :param tools: ``(server, raw_tool_name)`` pairs; duplicates are ignored.
    :returns: model-visible name → ``(server, raw_tool_name)``.
    """
    assigned: dict[str, tuple[str, str]] = {}
    for server, tool in sorted(set(tools)):
        salt = 0
        name = _candidate(server, tool, salt)
        while name in assigned:
            salt += 1
            name = _candidate(server, tool, salt)
        assigned[name] = (server, tool)
    return assigned
