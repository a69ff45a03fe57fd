"""Finding a tool by words: a simple, predictable ranking over names and descriptions.

For hosts that offer a "find a tool" step (in working-set mode, or when a
session has too many tools to declare). ``mcp_describe`` stays exact; this is
for when the model (or a person) does not know the name.

The match, in full:

1. The query and every name and description are lowercased and split into
   words at every character that is not a letter or a digit, so
   ``read_file``, ``read-file`` and ``read file`` are the same two words.
2. Each query word scores, per tool, the best of: **4** if it is one of the
   words of the tool's raw name; **3** if it appears inside the tool's raw
   name; **2** if it appears inside the server's name; **1** if it appears
   inside the tool's description; 0 otherwise.
3. A tool's score is the sum over the query's distinct words. Tools scoring 0
   are left out. The rest are ordered by score, highest first, then by
   model-visible name, so equal input always gives the same order.

Only tools that can be called are searched: those of live connections, not
cached lists (R-TOOL-3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from wave_actors._status import ServerStatus, ToolInfo, is_live

__all__ = ["search_tools"]

_WORD: Final = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _score(term: str, tool: ToolInfo) -> int:
    name = tool.tool.lower()
    if term in _words(name):
        return 4
    if term in name:
        return 3
    if term in tool.server.lower():
        return 2
    if term in tool.description.lower():
        return 1
    return 0


def search_tools(statuses: Iterable[ServerStatus], query: str, limit: int | None = 10) -> tuple[ToolInfo, ...]:
    """The tools matching ``query``, best first (see the module's description of the match).

    :param statuses: the session's servers.
    :param query: words to look for; no words finds nothing.
    :param limit: at most this many tools; ``None`` for all that match.
    :raises ValueError: ``limit`` is negative.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"search_tools: limit must be zero or more, not {limit}")
    terms = sorted(set(_words(query)))
    if not terms:
        return ()
    scored: list[tuple[int, str, ToolInfo]] = []
    for status in statuses:
        if not is_live(status) or not status.enabled:
            continue
        for tool in status.tools:
            score = sum(_score(term, tool) for term in terms)
            if score:
                scored.append((-score, tool.name, tool))
    scored.sort(key=lambda item: (item[0], item[1]))
    found = tuple(tool for _, _, tool in scored)
    return found if limit is None else found[:limit]
