"""What a host can see of its servers: states, tools and versioned snapshots (R-HOST-1, R-HOST-2).

Everything here is frozen: a status is a fact about one moment, handed out
freely; the mutable truth lives only in each server's actor.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Mapping
from typing import Any

import attrs

from wave_actors._config import ServerConfig, Source, redact_url
from wave_actors._frozen import empty_mapping, freeze_mapping

__all__ = [
    "ConnectionInfo",
    "ServerState",
    "ServerStatus",
    "SessionSnapshot",
    "SharedUse",
    "ToolInfo",
    "Unavailable",
    "is_live",
    "unavailable",
]


class ServerState(str, enum.Enum):
    """Where a server's connection stands.

    ::

        DISCONNECTED --connect--> CONNECTING --up--> CONNECTED
              ^                        |                 |
              |                   dial failed       lost unexpectedly
          disconnect                   v                 v
              +------------------- ERROR <--budget-- RECONNECTING --up--> CONNECTED

    ``NEEDS_LOGIN``: a dial (or a reconnect) was refused because the server
    asks for an OAuth login; it is not retried, and a login of the server
    dials it again (R-AUTH-2). ``DISABLED`` is for entries with
    ``enabled: false`` (R-CFG-6); they never leave it.
    """

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    ERROR = "error"
    NEEDS_LOGIN = "needs_login"
    DISABLED = "disabled"


class Unavailable(enum.Enum):
    """Why a server's tools cannot be called now: one rule, worded by each reader for its audience."""

    CONNECTING = "connecting"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    NEEDS_LOGIN = "waiting for a login"
    """The server asks for an OAuth login (R-AUTH-2)."""
    DISABLED = "disabled"
    DISCONNECTED = "disconnected"
    """A manual disconnect holds (R-DIAL-6)."""
    NOT_CONNECTED = "not connected"
    """Not dialed (yet) in this session."""


def unavailable(state: ServerState, *, manually_disconnected: bool) -> Unavailable | None:
    """Why a server's tools cannot be called now, or ``None`` when it is connected.

    :param state: the server's state.
    :param manually_disconnected: a manual disconnect holds (R-DIAL-6).
    """
    match state:
        case ServerState.CONNECTED:
            return None
        case ServerState.ERROR:
            return Unavailable.FAILED
        case ServerState.NEEDS_LOGIN:
            return Unavailable.NEEDS_LOGIN
        case ServerState.RECONNECTING:
            return Unavailable.RECONNECTING
        case ServerState.CONNECTING:
            return Unavailable.CONNECTING
        case ServerState.DISABLED:
            return Unavailable.DISABLED
        case ServerState.DISCONNECTED if manually_disconnected:
            return Unavailable.DISCONNECTED
        case _:
            return Unavailable.NOT_CONNECTED


@attrs.frozen
class ToolInfo:
    """One tool of one server.

    :param name: the model-visible name, ``mcp__{server}__{tool}`` (R-TOOL-1).
    :param server: the server's name.
    :param tool: the tool's raw name on that server.
    :param description: the server's description of it.
    :param input_schema: its input schema as the server sent it; declarations
        carry the sanitized form (R-TOOL-2).
    :param read_only: whether the tool only reads: the entry's ``tool_overrides``
        when it says, else ``readOnlyHint`` is true. ``False`` covers both
        "writable" and "not annotated": unknown counts as writable (R-TOOL-7, R-TOOL-8).
    :param read_only_hint: ``annotations.readOnlyHint`` as the server sent it:
        ``True``, ``False``, or ``None`` when the tool is not annotated (R-TOOL-7).
    :param read_only_override: what the entry's ``tool_overrides`` says of it,
        ``None`` when nothing (R-TOOL-8).
    :param concurrency_safe: from ``tool_overrides``: it may run alongside
        other calls; ``None`` when not said.
    :param capability: from ``tool_overrides``: the host's label for what it can do.
    :param guidance: from ``tool_overrides``: a usage contract shown with the tool.
    """

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=empty_mapping, converter=freeze_mapping)
    read_only: bool = False
    read_only_hint: bool | None = None
    read_only_override: bool | None = None
    concurrency_safe: bool | None = None
    capability: str | None = None
    guidance: str | None = None

    @property
    def read_only_known(self) -> bool:
        """Whether the tool's read-only-ness was declared, by the server's hint or by an override (R-WS-3)."""
        return self.read_only or self.read_only_hint is not None or self.read_only_override is not None


@attrs.frozen
class ConnectionInfo:
    """How a server is reached, as a settings page shows it: the entry's connection without a secret (R-CFG-12).

    A host shows what a session actually runs from this, without reading the
    configuration files again.

    :param type: the transport type as configured.
    :param command: a stdio server's executable.
    :param args: its arguments.
    :param cwd: its working directory, when set.
    :param url: an http or sse server's endpoint with every query value, the
        fragment and a password masked (``?key=***``).
    :param env_names: the names of the variables its ``env`` sets; never the values.
    :param header_names: the names of the headers it sends; never the values.
    """

    type: str
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: str | None = None
    url: str | None = None
    env_names: tuple[str, ...] = ()
    header_names: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: ServerConfig) -> ConnectionInfo:
        """The connection of ``config``, secrets left out.

        :param config: a loaded entry.
        """
        return cls(
            type=config.type,
            command=config.command,
            args=config.args,
            cwd=config.cwd,
            url=None if config.url is None else redact_url(config.url),
            env_names=tuple(config.env),
            header_names=tuple(config.headers),
        )

    @property
    def display(self) -> str:
        """One line: the command line (shell-quoted) or the URL, then the names of env variables and headers."""
        parts: list[str] = []
        if self.command is not None:
            parts.append(shlex.join([self.command, *self.args]))
        if self.url is not None:
            parts.append(self.url)
        if self.env_names:
            parts.append(f"(env: {', '.join(self.env_names)})")
        if self.header_names:
            parts.append(f"(headers: {', '.join(self.header_names)})")
        return " ".join(parts) or self.type


@attrs.frozen
class SharedUse:
    """How a connection shared by a project's sessions is used (R-SCOPE-1, R-SCOPE-2).

    Whether it is connected is the status's ``state``; this says who holds it.

    :param sessions: how many live sessions are attached to it now.
    :param idle_deadline: with no session attached, the ``trio.current_time()``
        at which the idle timer closes it; ``None`` while a session is attached,
        or when the idle timeout is ``0`` (never close).
    """

    sessions: int
    idle_deadline: float | None = None


@attrs.frozen
class ServerStatus:
    """A server's status at one moment (R-HOST-1).

    :param name: the server's name.
    :param source: the configuration source it came from.
    :param origin: the file or plugin that defined it.
    :param type: its transport type as configured.
    :param state: where its connection stands.
    :param error: the last failure, with the exit code for a dead process.
        Its first line says what failed; lines after it, if any, are detail
        for people and logs (the tail of a stdio server's stderr), which
        :attr:`error_headline` leaves out.
    :param tools: the live tool list, kept while reconnecting (R-RACE-4), or
        the cached snapshot when ``tools_cached`` is true (R-CACHE-2).
    :param tools_cached: the tools come from the snapshot cache, not a live
        connection: shown for a server not dialed in this session, never
        declared to a model nor callable (R-CACHE-2, R-TOOL-3).
    :param last_connected: wall-clock time (``time.time()``) of the last
        successful connect, or ``None``; with cached tools, the connect they
        were listed at, perhaps in another session or process.
    :param generation: the current transport generation (R-RACE-1).
    :param instructions: the server's ``instructions`` from ``initialize`` (R-INS-1).
    :param description: what the server is for: its entry's ``description``,
        else what the server said of itself at its last connect (``serverInfo``'s
        description, else its title); the working set shows it as the server's
        purpose (R-WS-3), framed as the server's own words when
        :attr:`described_by_server` says they are.
    :param enabled: ``False`` for entries that are never dialed (R-CFG-6).
    :param manually_disconnected: a manual disconnect holds until an explicit connect (R-DIAL-6).
    :param connection: how it is reached, without secrets; ``None`` only in
        statuses not made by a session.
    :param fingerprint: its entry's fingerprint (R-CFG-8): equal fingerprints, same server.
    :param warnings: problems that did not stop the server, one line each: a
        tool its last listing skipped because the MCP SDK rejects it (an input
        schema that is not an object schema, say), naming the tool and why
        (R-TOOL-9). Kept and cleared with the live ``tools``.
    :param shared: for a session created with ``ownership="project"``, how the
        project connection this status shows (the one made for the entry the
        session loaded) is shared (R-SCOPE-1); ``None`` for a server the
        session owns alone.
    :param described_by_server: :attr:`description` is what the server said of
        itself, not its entry's: text the server chose, external content to a
        model, never the host's or the user's words (R-WS-3).
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
    description: str | None = None
    enabled: bool = True
    manually_disconnected: bool = False
    connection: ConnectionInfo | None = None
    fingerprint: str = ""
    warnings: tuple[str, ...] = ()
    shared: SharedUse | None = None
    described_by_server: bool = False

    @property
    def tool_count(self) -> int:
        """How many tools are listed."""
        return len(self.tools)

    @property
    def error_headline(self) -> str | None:
        """The first line of :attr:`error`, what failed, without the detail after it; ``None`` without an error.

        A model is told this, never the whole error: a server's stderr holds
        local paths, notices and whatever the server chose to print (R-WS-5).
        """
        return None if self.error is None else self.error.split("\n", 1)[0]


_LIVE = frozenset({ServerState.CONNECTED, ServerState.RECONNECTING})


def is_live(status: ServerStatus) -> bool:
    """Whether ``status`` shows a live tool list: ``connected``, or ``reconnecting`` (R-RACE-4), and not cached.

    A reconnecting server keeps its last live list and is expected back: its
    tools are declared (a call fails fast until it is back), found by search
    and the gateway, and its instructions stay announced. A server in any
    other state has no live list, and tools from the snapshot cache are never
    live, whatever the state says (R-TOOL-3, R-CACHE-2).
    """
    return status.state in _LIVE and not status.tools_cached


@attrs.frozen
class SessionSnapshot:
    """Every server of a session at one moment, versioned (R-HOST-2).

    The snapshot is also the session's catalog at that version: :meth:`tool`
    resolves a model-visible name to the tool it was shown as (R-TOOL-1).
    Cached tools (``tools_cached``) are listed but never resolved: they cannot
    be called (R-CACHE-2).

    :param version: increases with every change, across every session of a
        host; a subscriber ignores any snapshot older than the one it holds.
    :param servers: the servers, sorted by name.
    """

    version: int
    servers: tuple[ServerStatus, ...]
    _tools: Mapping[str, ToolInfo] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        index = {tool.name: tool for status in self.servers if not status.tools_cached for tool in status.tools}
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
