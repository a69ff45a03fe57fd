"""Statuses and snapshots built by hand, for the pure tests of the working set, gateway, approval and search."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wave_actors import ServerState, ServerStatus, SessionSnapshot, Source, ToolInfo
from wave_actors._tools import normalize

SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "exclusiveMinimum": 0}},
    "required": ["path"],
}


def tool(
    server: str,
    name: str,
    *,
    hint: bool | None = None,
    override: bool | None = None,
    concurrency_safe: bool | None = None,
    guidance: str | None = None,
    description: str = "",
) -> ToolInfo:
    """A tool as the catalog builds it: ``read_only`` is the override when set, else ``hint is True``."""
    return ToolInfo(
        name=f"mcp__{normalize(server)}__{normalize(name)}",
        server=server,
        tool=name,
        description=description or f"{name} on {server}",
        input_schema=SCHEMA,
        read_only=override if override is not None else hint is True,
        read_only_hint=hint,
        read_only_override=override,
        concurrency_safe=concurrency_safe,
        guidance=guidance,
    )


def server(
    name: str,
    tools: Sequence[ToolInfo] = (),
    *,
    state: ServerState = ServerState.CONNECTED,
    error: str | None = None,
    description: str | None = None,
    enabled: bool = True,
    cached: bool = False,
    manually_disconnected: bool = False,
    described_by_server: bool = False,
) -> ServerStatus:
    """A server's status; ``tools`` of other servers are re-homed to this one."""
    return ServerStatus(
        name=name,
        source=Source.USER,
        origin="~/.wave/mcp.json",
        type="stdio",
        state=state,
        error=error,
        tools=tuple(tools),
        tools_cached=cached,
        description=description,
        enabled=enabled,
        manually_disconnected=manually_disconnected,
        described_by_server=described_by_server,
    )


def snapshot(*servers: ServerStatus, version: int = 1) -> SessionSnapshot:
    """The snapshot of ``servers``, sorted by name as the catalog sorts them."""
    return SessionSnapshot(version, tuple(sorted(servers, key=lambda status: status.name)))


def files_server(
    *,
    state: ServerState = ServerState.CONNECTED,
    error: str | None = None,
    description: str | None = "Local file system access",
) -> ServerStatus:
    """A filesystem-like server: two read-only tools, one writable (hint false), one not annotated."""
    return server(
        "filesystem",
        [
            tool("filesystem", "read_file", hint=True),
            tool("filesystem", "list_directory", hint=True),
            tool("filesystem", "write_file", hint=False),
            tool("filesystem", "move_file"),
        ],
        state=state,
        error=error,
        description=description,
    )
