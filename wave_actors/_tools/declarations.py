"""What the model is shown: tool declarations built from live statuses (R-TOOL-1..3).

Pure functions over :class:`~wave_actors._status.ServerStatus` values: no I/O,
so the same statuses always give byte-identical declarations.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from wave_actors._frozen import freeze_mapping
from wave_actors._status import ServerStatus, is_live
from wave_actors._tools.schema import DEFAULT_DROPPED_KEYWORDS, sanitize_schema

__all__ = ["LoadMode", "ToolDeclaration", "full_declarations"]


class LoadMode(str, enum.Enum):
    """How MCP tools are presented to the model (R-WS-1).

    ``FULL`` declares every live tool with its sanitized schema (R-WS-2).
    ``WORKING_SET``, the default a :class:`~wave_actors.LoadModeResolver` falls
    back to, declares the two gateway tools ``mcp_call`` and ``mcp_describe``
    and lists the tools in a text section instead (R-WS-3, R-WS-4).
    """

    FULL = "full"
    WORKING_SET = "working_set"


@attrs.frozen
class ToolDeclaration:
    """One tool exactly as the model is shown it: a function name, a description and a JSON schema.

    The way back to the server is the name: :meth:`Session.call_tool
    <wave_actors.Session.call_tool>` takes it, and :meth:`SessionSnapshot.tool
    <wave_actors.SessionSnapshot.tool>` gives the :class:`~wave_actors.ToolInfo`
    behind it (server, raw name, read-only flag).

    :param name: the model-visible name (R-TOOL-1).
    :param description: the server's description.
    :param input_schema: the sanitized input schema (R-TOOL-2).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = attrs.field(converter=freeze_mapping)


def full_declarations(
    statuses: Iterable[ServerStatus], dropped_keywords: Iterable[str] = DEFAULT_DROPPED_KEYWORDS
) -> tuple[ToolDeclaration, ...]:
    """Declarations for every tool of every live server, sorted by name.

    Only tools from live connections are declared, never cached ones (R-TOOL-3).
    A reconnecting server keeps its last live list: calls to it fail fast with
    a clear error until it is back (R-RACE-4).

    :param statuses: the session's servers.
    :param dropped_keywords: schema keywords to strip.
    """
    dropped = frozenset(dropped_keywords)
    declarations = [
        ToolDeclaration(
            name=tool.name,
            description=tool.description,
            input_schema=sanitize_schema(tool.input_schema, dropped),
        )
        for status in statuses
        if is_live(status)
        for tool in status.tools
    ]
    return tuple(sorted(declarations, key=lambda declaration: declaration.name))
