"""What a host can see of its servers: states, tools and versioned snapshots (R-HOST-1, R-HOST-2).

Everything here is frozen: a status is a fact about one moment, handed out
freely; the mutable truth lives only in each server's actor.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from wave_actors._config import Source
from wave_actors._frozen import empty_mapping, freeze_mapping

__all__ = ["ServerState", "ServerStatus", "SessionSnapshot", "ToolInfo"]


class ServerState(str, enum.Enum):
    """Where a server's connection stands.

    ::

        DISCONNECTED --connect--> CONNECTING --up--> CONNECTED
              ^                        |                 |
              |                   dial failed       lost unexpectedly
          disconnect                   v                 v
              +------------------- ERROR <--budget-- RECONNECTING --up--> CONNECTED

    ``DISABLED`` is for entries with ``enabled: false`` (R-CFG-6); they never
    leave it.
    """

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    ERROR = "error"
    DISABLED = "disabled"


@attrs.frozen
class ToolInfo:
    """One tool of one server.

    :param name: the model-visible name, ``mcp__{server}__{tool}`` (R-TOOL-1).
    :param server: the server's name.
    :param tool: the tool's raw name on that server.
    :param description: the server's description of it.
    :param input_schema: its input schema as the server sent it; declarations
        carry the sanitized form (R-TOOL-2).
    :param read_only: the tool's ``readOnlyHint``, or the entry's
        ``tool_overrides`` when set (R-TOOL-7, R-TOOL-8).
    """

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=empty_mapping, converter=freeze_mapping)
    read_only: bool = False


@attrs.frozen
class ServerStatus:
    """A server's status at one moment (R-HOST-1).

    :param name: the server's name.
    :param source: the configuration source it came from.
    :param origin: the file or plugin that defined it.
    :param type: its transport type as configured.
    :param state: where its connection stands.
    :param error: the last failure, with the exit code for a dead process.
    :param tools: the live tool list, kept while reconnecting (R-RACE-4), or
        the cached snapshot when ``tools_cached`` is true (R-CACHE-2).
    :param tools_cached: the tools come from the snapshot cache, not a live connection.
    :param last_connected: wall-clock time (``time.time()``) of the last
        successful connect, or ``None``.
    :param generation: the current transport generation (R-RACE-1).
    :param instructions: the server's ``instructions`` from ``initialize`` (R-INS-1).
    :param enabled: ``False`` for entries that are never dialed (R-CFG-6).
    :param manually_disconnected: a manual disconnect holds until an explicit connect (R-DIAL-6).
    """

    name: str
    source: Source
    origin: str
    type: str
    state: ServerState
    error: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    tools_cached: bool = False
    last_connected: float | None = None
    generation: int = 0
    instructions: str | None = None
    enabled: bool = True
    manually_disconnected: bool = False

    @property
    def tool_count(self) -> int:
        """How many tools are listed."""
        return len(self.tools)


@attrs.frozen
class SessionSnapshot:
    """Every server of a session at one moment, versioned (R-HOST-2).

    The snapshot is also the session's catalog at that version: :meth:`tool`
    resolves a model-visible name to the tool it was shown as (R-TOOL-1).

    :param version: increases with every change, across every session of a
        host; a subscriber ignores any snapshot older than the one it holds.
    :param servers: the servers, sorted by name.
    """

    version: int
    servers: tuple[ServerStatus, ...]
    _tools: Mapping[str, ToolInfo] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        index = {tool.name: tool for status in self.servers for tool in status.tools}
        object.__setattr__(self, "_tools", index)

    def server(self, name: str) -> ServerStatus:
        """The status of ``name``.

        :raises KeyError: no such server in this snapshot.
        """
        for status in self.servers:
            if status.name == name:
                return status
        raise KeyError(name)

    def tool(self, name: str) -> ToolInfo:
        """The tool listed under the model-visible ``name`` (R-TOOL-1).

        :raises KeyError: no listed tool has that name in this snapshot.
        """
        return self._tools[name]
