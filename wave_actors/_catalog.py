"""The session's catalog: one pure snapshot of every server and tool per version (R-HOST-1, R-TOOL-1).

:func:`build_snapshot` turns what the actors know (each server's entry and
state machine) into a :class:`~wave_actors.SessionSnapshot`: statuses sorted by
name, every tool given its model-visible name, and the index from that name
back to ``(server, raw tool)``. Status display, declarations and call
resolution all read the same snapshot, so a name the model saw resolves to the
tool it was shown, and nothing here does I/O.

A server not dialed in this session (``disconnected`` or ``disabled``, the
session open) shows the tools of its cache entry, when the tool snapshot
cache has one for its name and current fingerprint, marked ``tools_cached``
with that entry's connect time (R-CACHE-2). Once dialed, a server shows what
its connection says: a manual disconnect clears its tools. A tool's name is a
pure function of its server and raw name (R-TOOL-1), so a cached tool has the
name it will have live, and no other server's tools can change it; the
snapshot never resolves cached tools and declarations never include them
(R-TOOL-3).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

from wave_actors._actor.machine import ActorState, initial_state
from wave_actors._cache import CachedServer, ToolCache
from wave_actors._config import ServerConfig, ToolOverride
from wave_actors._listing import ServerTool
from wave_actors._status import ConnectionInfo, ServerState, ServerStatus, SessionSnapshot, SharedUse, ToolInfo
from wave_actors._tools import assign_names, normalize

__all__ = [
    "KnownTool",
    "Standing",
    "build_snapshot",
    "statuses_before_dialing",
    "unknown_tool_hint",
    "unknown_tool_reason",
]


class Standing(enum.Enum):
    """Where a tool name the current snapshot does not list stands, from what the group remembers."""

    LISTED = "listed"
    """The newest live listing of its server has it; the server is not connected now."""
    WITHDRAWN = "withdrawn"
    """An earlier live listing had it, a later one does not."""
    REMOVED = "removed"
    """Its server listed it, then left the configuration."""
    CACHED = "cached"
    """Only the tool snapshot cache lists it: never callable (R-CACHE-2)."""


@attrs.frozen
class KnownTool:
    """A model-visible name the group can place although the current snapshot does not list it.

    :param server: the server's name.
    :param tool: the raw tool name.
    :param standing: what is known of it.
    """

    server: str
    tool: str
    standing: Standing


def build_snapshot(
    version: int,
    servers: Iterable[tuple[ServerConfig, ActorState]],
    *,
    closed: bool = False,
    cache: ToolCache | None = None,
    shared: Mapping[str, SharedUse] | None = None,
) -> SessionSnapshot:
    """The snapshot of a session's servers at ``version``.

    :param version: the snapshot's version (R-HOST-2).
    :param servers: each server's current entry and state machine state.
    :param closed: the session is closed: whatever the actors last said,
        nothing is connected any more.
    :param cache: the tool snapshot cache, for servers without a live connection (R-CACHE-2).
    :param shared: how each server's connection is shared, for a project's servers (R-SCOPE-1).
    """
    ordered = sorted(servers, key=lambda server: server[0].name)
    names = assign_names((config.name, tool.name) for config, state in ordered for tool in state.tools)
    statuses = (_status(config, state, names, closed, cache) for config, state in ordered)
    if shared:
        statuses = (attrs.evolve(status, shared=shared.get(status.name)) for status in statuses)
    return SessionSnapshot(version, tuple(statuses))


def statuses_before_dialing(configs: Iterable[ServerConfig], cache: ToolCache) -> tuple[ServerStatus, ...]:
    """Every server as a new session shows it before its first dial, sorted by name (R-DIAL-1, R-CACHE-2).

    ``disconnected`` (or ``disabled``), with the tools the snapshot cache
    recorded at its last connect, and the warnings of that listing: the
    tools it skipped as invalid (R-TOOL-9). What ``wave-actors servers``
    shows, without a session.

    :param configs: the loaded entries.
    :param cache: the workdir's tool snapshots.
    """
    snapshot = build_snapshot(0, ((config, initial_state(enabled=config.enabled)) for config in configs), cache=cache)
    statuses: list[ServerStatus] = []
    for status in snapshot.servers:
        cached = cache.lookup(status.name, status.fingerprint) if status.tools_cached else None
        if cached is not None and not status.warnings:
            # A session's status carries the warnings of its live listing only; these are the cached listing's.
            status = attrs.evolve(status, warnings=cached.warnings)
        statuses.append(status)
    return tuple(statuses)


_SHOWS_CACHE = frozenset({ServerState.DISCONNECTED, ServerState.DISABLED})


def _status(
    config: ServerConfig,
    state: ActorState,
    names: Mapping[tuple[str, str], str],
    closed: bool,
    cache: ToolCache | None,
) -> ServerStatus:
    if closed and state.state is not ServerState.DISABLED:
        state = attrs.evolve(state, state=ServerState.DISCONNECTED, error=None, tools=(), warnings=())
    overrides = config.tool_overrides
    tools = tuple(
        _tool(names[(config.name, tool.name)], config.name, tool, overrides.get(tool.name)) for tool in state.tools
    )
    cached = None
    if cache is not None and not closed and not state.dialed and state.state in _SHOWS_CACHE:
        cached = cache.lookup(config.name, config.fingerprint)
        if cached is not None:
            tools = _cached_tools(config, cached)
    return ServerStatus(
        name=config.name,
        source=config.source,
        origin=config.origin,
        type=config.type,
        state=state.state,
        error=state.error,
        tools=tools,
        tools_cached=cached is not None,
        last_connected=state.last_connected if cached is None else state.last_connected or cached.last_connected,
        generation=state.generation,
        instructions=state.instructions,
        description=config.description or state.server_purpose or None,
        described_by_server=not config.description and bool(state.server_purpose),
        enabled=config.enabled,
        manually_disconnected=state.manually_disconnected,
        connection=ConnectionInfo.of(config),
        fingerprint=config.fingerprint,
        warnings=state.warnings,
    )


def _cached_tools(config: ServerConfig, cached: CachedServer) -> tuple[ToolInfo, ...]:
    """The cached tools of one server, named among themselves (R-CACHE-2)."""
    names = assign_names((config.name, tool.name) for tool in cached.tools)
    return tuple(
        _tool(names[(config.name, tool.name)], config.name, tool, config.tool_overrides.get(tool.name))
        for tool in cached.tools
    )


_NO_OVERRIDE = ToolOverride()


def _tool(name: str, server: str, tool: ServerTool, override: ToolOverride | None) -> ToolInfo:
    """The tool with its hint kept three-valued and its ``tool_overrides`` applied (R-TOOL-7, R-TOOL-8)."""
    override = override or _NO_OVERRIDE
    return ToolInfo(
        name=name,
        server=server,
        tool=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        read_only=override.read_only if override.read_only is not None else tool.read_only_hint is True,
        read_only_hint=tool.read_only_hint,
        read_only_override=override.read_only,
        concurrency_safe=override.concurrency_safe,
        capability=override.capability,
        guidance=override.guidance,
    )


def unknown_tool_hint(snapshot: SessionSnapshot, name: str) -> str:
    """What to tell a caller who asked for a tool ``name`` that ``snapshot`` does not list.

    For a name of the form ``mcp__{server}__...`` whose server exists: its
    state and the tools it lists; otherwise the session's server names.
    """
    parts = name.split("__")
    if len(parts) >= 3 and parts[0] == "mcp":
        server = parts[1]
        for status in snapshot.servers:
            if status.name == server or normalize(status.name) == server:
                listed = ", ".join(tool.tool for tool in status.tools) or "none listed"
                return f"server {status.name!r} is {status.state.value}; its tools: {listed}"
    names = ", ".join(sorted(status.name for status in snapshot.servers)) or "none"
    return f"servers: {names}"


def unknown_tool_reason(snapshot: SessionSnapshot, name: str, known: KnownTool | None) -> str:
    """Why a call by ``name``, which ``snapshot`` does not list, is refused: nothing was sent.

    :param snapshot: the session's snapshot now.
    :param name: the model-visible name called.
    :param known: what the session's servers said of that name before, if anything
        (a name whose standing is :attr:`Standing.LISTED` is not refused: it is unavailable).
    """
    if known is None:
        return f"{unknown_tool_hint(snapshot, name)}; nothing was sent"
    server, tool = known.server, known.tool
    match known.standing:
        case Standing.WITHDRAWN:
            return f"server {server!r} listed {tool!r} earlier and has withdrawn it since; nothing was sent"
        case Standing.REMOVED:
            return f"its server {server!r} was removed from the configuration; nothing was sent"
        case _:
            status = snapshot.server(server)
            listing = (
                "its live listing does not have it"
                if status.state is ServerState.CONNECTED
                else f"it is {status.state.value} and has not listed it in this session (prepare_turn() or connect() dials it)"
            )
            return (
                f"only the tool snapshot cache lists {tool!r} for server {server!r}, and cached tools are never "
                f"callable (R-CACHE-2): {listing}; nothing was sent"
            )
