"""Model-visible tool names (R-TOOL-1): a pure function of (server, raw tool).

A tool ``search`` on server ``github`` is shown to the model as
``mcp__github__search``. The rule, in full:

1. **Plain form.** ``mcp__{server}__{tool}`` is used as it is when it says
   everything: both names consist only of ``[A-Za-z0-9_-]``, the server name
   holds no ``__`` and does not end in ``_`` (so the name splits back at its
   first ``__`` after the prefix), the whole is at most 64 characters, and it
   does not end like a hashed name (``_`` and 8 hexadecimal digits).
2. **Hashed form**, for every other pair: characters outside
   ``[A-Za-z0-9_-]`` become ``_``, and ``_`` plus the first 8 hexadecimal
   digits of the SHA-256 of the *raw* pair is appended:
   ``mcp__git_hub__search_1a2b3c4d`` for server ``git hub``. When the
   result would pass 64 characters the server part is shortened first, down
   to :data:`MIN_SERVER_CHARS` characters, and only then the tool part, so a
   tool's own name survives whole up to 40 characters
   (``mcp__{8 of the server}__{40 of the tool}_{hash}``).

So a name never depends on which other servers or tools exist: the same
(server, raw tool) gets the same name in every session and every process, and
a server that connects later cannot take over a name (R-TOOL-1). Plain names
split back exactly; hashed names never collide with plain ones (a plain name
never ends like a hash) and map back through the session's one index, its
snapshot (:meth:`SessionSnapshot.tool <wave_actors.SessionSnapshot.tool>`).

The one case where the rule alone cannot decide is two raw pairs whose hashed
forms coincide, which takes equal shortened parts *and* equal 32-bit digests:
:func:`assign_names` then keeps the name for the first pair in sorted order
and salts the digest of the other, so names stay unique in a session.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["MAX_NAME_LENGTH", "MIN_SERVER_CHARS", "PREFIX", "assign_names", "normalize", "tool_name"]

PREFIX: Final = "mcp"
MAX_NAME_LENGTH: Final = 64
MIN_SERVER_CHARS: Final = 8
"""How much of a long server name a hashed name keeps before it starts cutting the tool's name."""

_SEPARATOR: Final = "__"
_HEAD: Final = PREFIX + _SEPARATOR
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST_CHARS: Final = 8
_SUFFIX_LENGTH: Final = 1 + _DIGEST_CHARS  # "_" + the digest
_LOOKS_HASHED: Final = re.compile(rf"_[0-9a-f]{{{_DIGEST_CHARS}}}\Z")
# What the server and tool parts of a hashed name share.
_HASHED_BUDGET: Final = MAX_NAME_LENGTH - len(_HEAD) - len(_SEPARATOR) - _SUFFIX_LENGTH


def normalize(text: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` by ``_``."""
    return _UNSAFE.sub("_", text)


def _plain(server: str, tool: str) -> str | None:
    """The plain name of the pair, or ``None`` when it would lose or confuse anything."""
    if _SEPARATOR in server or server.endswith("_") or normalize(server) != server or normalize(tool) != tool:
        return None
    name = f"{_HEAD}{server}{_SEPARATOR}{tool}"
    if len(name) > MAX_NAME_LENGTH or _LOOKS_HASHED.search(name):
        return None
    return name


def _digest(server: str, tool: str, salt: int) -> str:
    # "surrogatepass": a name read from JSON may hold a lone surrogate; valid text encodes as plain UTF-8.
    material = f"{server}\x00{tool}" if salt == 0 else f"{server}\x00{tool}\x00{salt}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]


def _hashed(server: str, tool: str, salt: int = 0) -> str:
    server_part, tool_part = normalize(server), normalize(tool)
    if len(server_part) + len(tool_part) > _HASHED_BUDGET:
        # The server gives way first, down to MIN_SERVER_CHARS; then the tool.
        server_kept = min(len(server_part), max(MIN_SERVER_CHARS, _HASHED_BUDGET - len(tool_part)))
        server_part = server_part[:server_kept]
        tool_part = tool_part[: _HASHED_BUDGET - server_kept]
    return f"{_HEAD}{server_part}{_SEPARATOR}{tool_part}_{_digest(server, tool, salt)}"


def tool_name(server: str, tool: str) -> str:
    """The model-visible name of ``tool`` on ``server``: the plain form if it says everything, else the hashed form.

    A pure function of its two arguments (see the module's rule): at most 64
    characters of ``[A-Za-z0-9_-]``, starting ``mcp__``.

    :param server: the server's name as configured.
    :param tool: the tool's raw name as the server lists it.
    """
    return _plain(server, tool) or _hashed(server, tool)


def assign_names(tools: Iterable[tuple[str, str]]) -> Mapping[tuple[str, str], str]:
    """Every ``(server, tool)`` pair's name among ``tools``: its :func:`tool_name`, unique in the set.

    Each pair gets its own :func:`tool_name`, whatever else is listed. Only if
    two pairs' hashed names coincide (equal shortened parts and equal
    digests) does the later one in sorted order get a salted digest, so that
    names stay unique. The way back, from a name to its tool, is the
    snapshot's index, built from the names given here.

    :param tools: ``(server, raw_tool_name)`` pairs; duplicates are ignored.
    :returns: ``(server, raw_tool_name)`` → model-visible name.
    """
    assigned: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for server, tool in sorted(set(tools)):
        name = tool_name(server, tool)
        salt = 0
        while name in taken:
            salt += 1
            name = _hashed(server, tool, salt)
        taken.add(name)
        assigned[(server, tool)] = name
    return assigned
