"""The working-set section: what it lists, how it marks tools, and that it never changes for equal input (R-WS-3)."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given, settings, strategies as st
from tools_support import files_server, server, tool

from wave_actors import ServerState, ServerStatus, ToolDeclaration
from wave_actors._tools import (
    WorkingSet,
    WorkingSetServer,
    WorkingSetTemplate,
    WorkingSetTool,
    build_working_set,
    gateway_declarations,
    prompt_bytes,
)

EXPECTED_FILES_BLOCK = """\
### filesystem (read-only tools: 2, writable: 2)
Purpose: Local file system access
- list_directory [read-only]
- move_file
- read_file [read-only]
- write_file"""


def render(*statuses: ServerStatus) -> str:
    return build_working_set(statuses).render()


# Structure and wording ---------------------------------------------------------


def test_a_server_block_lists_purpose_counts_and_sorted_tools_with_markers() -> None:
    text = render(files_server())
    assert text.startswith("## MCP working set\n")
    assert text.endswith(EXPECTED_FILES_BLOCK + "\n")
    assert "mcp_call" in text and "mcp_describe" in text


def test_no_servers_renders_the_empty_string() -> None:
    # R-WS-3: nothing to say, so nothing in the prompt (and no gateway tools).
    working_set = build_working_set([])
    assert working_set.empty and working_set.render() == ""
    assert render(server("off", enabled=False)) == ""


def test_disabled_servers_are_not_in_the_working_set() -> None:
    text = render(files_server(), server("off", [tool("off", "secret")], enabled=False, state=ServerState.DISABLED))
    assert "off" not in text and "secret" not in text


def test_read_only_marker_comes_from_a_true_hint_or_an_override() -> None:
    statuses = server(
        "s",
        [
            tool("s", "hinted", hint=True),
            tool("s", "overridden", hint=False, override=True),
            tool("s", "unmarked", hint=True, override=False),
            tool("s", "silent"),
        ],
    )
    lines = render(statuses).splitlines()
    assert "- hinted [read-only]" in lines and "- overridden [read-only]" in lines
    assert "- unmarked" in lines and "- silent" in lines
    assert "### s (read-only tools: 2, writable: 2)" in lines


def test_counts_are_shown_only_when_a_tool_declares_its_read_only_ness() -> None:
    # R-TOOL-7: "not annotated" is not "writable" for the counts, only for safety.
    unannotated = server("plain", [tool("plain", "a"), tool("plain", "b")])
    assert "### plain\n" in render(unannotated)
    declared_false = server("declared", [tool("declared", "a", hint=False), tool("declared", "b")])
    assert "### declared (read-only tools: 0, writable: 2)\n" in render(declared_false)
    by_override = server("overridden", [tool("overridden", "a", override=True), tool("overridden", "b")])
    assert "### overridden (read-only tools: 1, writable: 1)\n" in render(by_override)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (
            server("s", state=ServerState.ERROR, error="server 's': connect failed: timed out"),
            "connect failed: timed out",
        ),
        (server("s", state=ServerState.ERROR), "failed"),
        (server("s", state=ServerState.RECONNECTING, error="lost: EOF"), "reconnecting after: lost: EOF"),
        (server("s", state=ServerState.CONNECTING), "connecting"),
        (server("s", state=ServerState.DISCONNECTED), "not connected"),
        (server("s", state=ServerState.DISCONNECTED, manually_disconnected=True), "disconnected"),
        (server("s", [tool("s", "t")], cached=True, state=ServerState.DISCONNECTED), "not connected"),
    ],
)
def test_servers_that_are_not_connected_are_listed_unavailable_with_the_reason(
    status: ServerStatus, reason: str
) -> None:
    [block] = build_working_set([status]).servers
    assert block.unavailable == reason and not block.available
    assert f"### s (unavailable: {reason})\n" in build_working_set([status]).render()


def test_an_unavailable_server_keeps_the_tool_names_it_had_but_no_counts() -> None:
    status = files_server(state=ServerState.RECONNECTING, error="server 'filesystem': connection lost: EOF")
    text = render(status)
    assert "### filesystem (unavailable: reconnecting after: connection lost: EOF)\n" in text
    assert "- read_file [read-only]" in text and "read-only tools:" not in text


def test_cached_tools_of_a_server_not_dialed_are_never_shown_to_the_model() -> None:
    # R-TOOL-3, R-CACHE-2: the snapshot cache feeds status displays, not the model.
    status = server("s", [tool("s", "secret_tool")], cached=True, state=ServerState.DISCONNECTED)
    text = render(status)
    assert "### s (unavailable: not connected)\n" in text and "secret_tool" not in text


def test_a_reason_is_one_line_and_bounded() -> None:
    error = "boom\n" + "x" * 1000 + "\x1b[31m"
    [block] = build_working_set([server("s", state=ServerState.ERROR, error=error)]).servers
    assert block.unavailable is not None
    assert "\n" not in block.unavailable and "\x1b" not in block.unavailable and len(block.unavailable) <= 300


def test_purpose_is_the_entry_description_on_one_line_and_never_the_instructions() -> None:
    status = attrs.evolve(files_server(description="Files\nand folders"), instructions="SECRET INSTRUCTIONS")
    text = render(status)
    assert "Purpose: Files and folders\n" in text and "SECRET" not in text
    assert "Purpose:" not in render(files_server(description=None))


def test_guidance_is_shown_under_its_tool_line_by_line() -> None:
    status = server("s", [tool("s", "deploy", guidance="Only after tests pass.\nNever on Fridays.")])
    assert "- deploy\n  Guidance: Only after tests pass.\n    Never on Fridays.\n" in render(status)


def test_a_name_that_would_break_its_line_is_shown_as_a_json_string() -> None:
    # The model passes the name back to mcp_call, so it is shown exactly, never cut.
    status = server("s", [tool("s", "two\nlines"), tool("s", "plain")])
    text = render(status)
    assert '- "two\\nlines"\n' in text and "- plain" in text


def test_a_server_without_tools_says_so() -> None:
    assert "### empty\n(no tools listed)" in render(server("empty"))


# The template --------------------------------------------------------------------


def test_the_wording_is_one_replaceable_template() -> None:
    chinese = WorkingSetTemplate(
        heading="## MCP 工作集",
        counts="(只读工具 {read_only} 个 / 可写工具 {writable} 个)",
        unavailable="(当前不可用:{reason})",
        purpose="用途:{purpose}",
        read_only_marker=" [只读]",
    )
    text = build_working_set([files_server()]).render(chinese)
    assert text.startswith("## MCP 工作集\n\n### filesystem")
    assert "### filesystem(只读工具 2 个 / 可写工具 2 个)\n用途:Local file system access\n" in text
    assert "- read_file [只读]" in text


@pytest.mark.parametrize(
    ("field", "value"),
    [("server", "### {nam}"), ("counts", "{read_only} {"), ("tool", "{0}"), ("heading", "{name}")],
)
def test_a_template_field_that_cannot_format_is_refused_when_built(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        WorkingSetTemplate(**{field: value})


# Byte-identical output -----------------------------------------------------------

names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
tools_of = st.lists(
    st.tuples(names, st.sampled_from([None, True, False]), st.sampled_from([None, True, False])),
    max_size=6,
    unique_by=lambda item: item[0],
)
states = st.sampled_from(list(ServerState))


@st.composite
def session_statuses(draw: st.DrawFn) -> list[ServerStatus]:
    server_names = draw(st.lists(names, max_size=5, unique=True))
    statuses: list[ServerStatus] = []
    for name in server_names:
        listed = draw(tools_of)
        statuses.append(
            server(
                name,
                [tool(name, tool_name, hint=hint, override=override) for tool_name, hint, override in listed],
                state=draw(states),
                error=draw(st.none() | names),
                description=draw(st.none() | names),
                enabled=draw(st.booleans()),
                cached=draw(st.booleans()),
            )
        )
    return statuses


@settings(max_examples=300)
@given(session_statuses(), st.randoms(use_true_random=False))
def test_equal_input_renders_byte_identical_text_whatever_the_order(
    statuses: list[ServerStatus], shuffler: random.Random
) -> None:
    # R-WS-3: a prompt prefix providers cache; servers may connect in any order.
    first = build_working_set(statuses)
    reordered = [
        attrs.evolve(status, tools=tuple(shuffler.sample(status.tools, len(status.tools)))) for status in statuses
    ]
    shuffler.shuffle(reordered)
    second = build_working_set(reordered)
    assert second == first
    assert second.render().encode() == first.render().encode()
    assert build_working_set(statuses).render() == first.render()  # again: nothing depends on the run


@given(session_statuses())
def test_servers_and_tools_are_sorted_and_disabled_ones_left_out(statuses: list[ServerStatus]) -> None:
    working_set = build_working_set(statuses)
    assert [block.name for block in working_set.servers] == sorted(s.name for s in statuses if s.enabled)
    for block in working_set.servers:
        assert [t.name for t in block.tools] == sorted(t.name for t in block.tools)
    assert (working_set.render() == "") == working_set.empty


def test_the_data_is_frozen() -> None:
    working_set = WorkingSet((WorkingSetServer("s", tools=(WorkingSetTool("t"),)),))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        working_set.servers = ()  # type: ignore[misc]


# Sizes ---------------------------------------------------------------------------


def test_prompt_bytes_counts_the_section_and_the_declarations_as_compact_json() -> None:
    declaration = ToolDeclaration("t", "d", {"type": "object"})
    assert prompt_bytes([]) == 0
    assert prompt_bytes([], "é") == 2
    assert prompt_bytes([declaration]) == len('[{"name":"t","description":"d","input_schema":{"type":"object"}}]')
    assert prompt_bytes(gateway_declarations(), "x") > prompt_bytes(gateway_declarations())
