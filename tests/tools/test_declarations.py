"""Tool declarations in ``full`` mode: live tools only, sanitized, sorted (R-TOOL-3, R-WS-2)."""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

import pytest
from hypothesis import given, strategies as st

from wave_actors import ServerState, ServerStatus, SessionSnapshot, Source, ToolDeclaration, ToolInfo
from wave_actors._tools import full_declarations, normalize

RAW_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"limit": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}},
}
CLEAN_SCHEMA = {"type": "object", "properties": {"limit": {"type": "integer"}}}


def tool(server: str, name: str, *, read_only: bool = False) -> ToolInfo:
    return ToolInfo(
        name=f"mcp__{normalize(server)}__{name}",
        server=server,
        tool=name,
        description=f"{name} on {server}",
        input_schema=RAW_SCHEMA,
        read_only=read_only,
    )


def status(name: str, state: ServerState, tools: Sequence[str] = ("search",), *, cached: bool = False) -> ServerStatus:
    return ServerStatus(
        name=name,
        source=Source.USER,
        origin="~/.wave/mcp.json",
        type="stdio",
        state=state,
        tools=tuple(tool(name, tool_name) for tool_name in tools),
        tools_cached=cached,
    )


def declared_servers(statuses: Sequence[ServerStatus]) -> set[str]:
    snapshot = SessionSnapshot(1, tuple(statuses))
    return {snapshot.tool(declaration.name).server for declaration in full_declarations(statuses)}


def test_connected_and_reconnecting_servers_declare_their_tools() -> None:
    # R-TOOL-3, R-RACE-4: a reconnecting server keeps its last live list.
    statuses = [status("up", ServerState.CONNECTED), status("flaky", ServerState.RECONNECTING)]
    assert declared_servers(statuses) == {"up", "flaky"}


@pytest.mark.parametrize(
    "state", [ServerState.DISCONNECTED, ServerState.CONNECTING, ServerState.ERROR, ServerState.DISABLED]
)
def test_servers_without_a_live_connection_declare_nothing(state: ServerState) -> None:
    # R-TOOL-3: even when a status still carries tools (an error keeps the last list).
    assert full_declarations([status("down", state)]) == ()


@pytest.mark.parametrize("state", list(ServerState), ids=lambda state: state.value)
def test_cached_tools_are_never_declared(state: ServerState) -> None:
    # R-TOOL-3, R-CACHE-2: the snapshot cache is for status displays, not for the model.
    assert full_declarations([status("cached", state, cached=True)]) == ()


def test_a_declaration_is_what_the_model_sees_name_description_and_sanitized_schema() -> None:
    # R-TOOL-1, R-TOOL-2
    [declaration] = full_declarations([status("git hub", ServerState.CONNECTED)])
    assert declaration == ToolDeclaration(
        name="mcp__git_hub__search", description="search on git hub", input_schema=CLEAN_SCHEMA
    )


def test_the_status_keeps_the_raw_schema() -> None:
    # R-TOOL-2: sanitizing is per declaration.
    statuses = [status("srv", ServerState.CONNECTED)]
    full_declarations(statuses)
    assert statuses[0].tools[0].input_schema == RAW_SCHEMA


def test_a_declared_name_resolves_through_the_snapshot_to_its_tool_and_read_only_flag() -> None:
    # R-TOOL-1, R-TOOL-7, R-TOOL-8: the status already holds the effective flag.
    live = ServerStatus(
        name="fs",
        source=Source.PROJECT,
        origin=".mcp.json",
        type="stdio",
        state=ServerState.CONNECTED,
        tools=(tool("fs", "read", read_only=True), tool("fs", "write")),
    )
    snapshot = SessionSnapshot(1, (live,))
    resolved = {(snapshot.tool(d.name).tool, snapshot.tool(d.name).read_only) for d in full_declarations([live])}
    assert resolved == {("read", True), ("write", False)}


def test_the_dropped_keywords_are_configurable() -> None:
    # R-TOOL-2
    [declaration] = full_declarations([status("srv", ServerState.CONNECTED)], dropped_keywords=["type"])
    assert declaration.input_schema == {
        "$schema": RAW_SCHEMA["$schema"],
        "properties": {"limit": {"exclusiveMinimum": 0, "exclusiveMaximum": 100}},
    }


def test_declarations_are_sorted_by_name() -> None:
    # R-WS-3 spirit: the same input gives byte-identical output.
    statuses = [status("zeta", ServerState.CONNECTED, ["b", "a"]), status("alpha", ServerState.RECONNECTING, ["z"])]
    names = [declaration.name for declaration in full_declarations(statuses)]
    assert names == ["mcp__alpha__z", "mcp__zeta__a", "mcp__zeta__b"]


def test_no_servers_no_declarations() -> None:
    assert full_declarations([]) == ()


statuses_strategy = st.lists(
    st.builds(
        status,
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from(ServerState),
        st.lists(st.sampled_from(["x", "y", "z"]), unique=True, max_size=3),
        cached=st.booleans(),
    ),
    max_size=5,
    unique_by=lambda server: server.name,
)


@given(statuses_strategy, st.randoms(use_true_random=False))
def test_declarations_are_the_live_tools_whatever_the_order(statuses: list[ServerStatus], random: Random) -> None:
    # R-TOOL-3: exactly the tools of live, uncached servers; sorted; the order of servers does not matter.
    declarations = full_declarations(statuses)
    live = {ServerState.CONNECTED, ServerState.RECONNECTING}
    expected = sorted(
        info.name for server in statuses if server.state in live and not server.tools_cached for info in server.tools
    )
    assert [declaration.name for declaration in declarations] == expected
    assert all(declaration.input_schema == CLEAN_SCHEMA for declaration in declarations)
    shuffled = list(statuses)
    random.shuffle(shuffled)
    assert full_declarations(shuffled) == declarations
