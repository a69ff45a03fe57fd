"""Tool search: the documented scoring over names and descriptions, live tools only."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from tools_support import server, snapshot, tool

from wave_actors import ServerState
from wave_actors._tools import search_tools

SERVERS = snapshot(
    server(
        "filesystem",
        [
            tool("filesystem", "read_file", description="Read a file from disk"),
            tool("filesystem", "write_file", description="Write a file"),
            tool("filesystem", "list_directory", description="List the entries of a directory"),
        ],
    ),
    server("github", [tool("github", "search_issues", description="Find issues matching a query")]),
    server("notes", [tool("notes", "reader", description="Show a note")]),
).servers


def found(query: str, limit: int | None = 10) -> list[str]:
    return [t.name for t in search_tools(SERVERS, query, limit)]


def test_a_word_of_the_tool_name_ranks_first() -> None:
    # 4: a word of the name; 3: inside the name ("read" in "reader"); 1: in the description.
    assert found("read") == ["mcp__filesystem__read_file", "mcp__notes__reader"]


def test_words_add_up() -> None:
    assert found("read file")[0] == "mcp__filesystem__read_file"
    assert found("read_file") == found("read file") == found("READ-FILE")


def test_the_server_name_counts_less_than_the_tool_name() -> None:
    assert found("github") == ["mcp__github__search_issues"]
    assert found("system") == [
        "mcp__filesystem__list_directory",
        "mcp__filesystem__read_file",
        "mcp__filesystem__write_file",
    ]


def test_the_description_counts_least() -> None:
    assert found("entries") == ["mcp__filesystem__list_directory"]
    assert found("query") == ["mcp__github__search_issues"]


def test_ties_are_ordered_by_model_visible_name() -> None:
    # read_file and write_file both score 4; list_directory scores 2 for its server's name.
    assert found("file") == [
        "mcp__filesystem__read_file",
        "mcp__filesystem__write_file",
        "mcp__filesystem__list_directory",
    ]


def test_no_words_and_no_match_find_nothing() -> None:
    assert found("") == [] and found("  --  ") == [] and found("kubernetes") == []


def test_limit() -> None:
    assert len(found("file", limit=1)) == 1
    assert len(found("e", limit=None)) == 5
    with pytest.raises(ValueError, match="limit"):
        search_tools(SERVERS, "x", -1)


@pytest.mark.parametrize(
    ("state", "cached", "enabled"),
    [(ServerState.ERROR, False, True), (ServerState.DISCONNECTED, True, True), (ServerState.DISABLED, False, False)],
)
def test_only_callable_tools_are_searched(state: ServerState, cached: bool, enabled: bool) -> None:
    statuses = [server("s", [tool("s", "read")], state=state, cached=cached, enabled=enabled)]
    assert search_tools(statuses, "read") == ()


@given(st.text(max_size=20))
def test_the_order_is_a_pure_function_of_the_input(query: str) -> None:
    assert search_tools(SERVERS, query) == search_tools(tuple(reversed(SERVERS)), query)
