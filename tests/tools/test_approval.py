"""Approval of tool calls: the table of every level against every kind of call (R-APR-1..3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st
from tools_support import server, snapshot, tool

from wave_actors import SessionSnapshot
from wave_actors._tools import ApprovalDecision, ApprovalLevel, approval_decision

SESSION = snapshot(
    server(
        "fs",
        [
            tool("fs", "read_file", hint=True),
            tool("fs", "move_file"),
            tool("fs", "write_file", hint=False),
            tool("fs", "stat", hint=False, override=True, concurrency_safe=True),
            tool("fs", "touch", hint=True, override=False),
        ],
    ),
    server("off", [tool("off", "read", hint=True)], enabled=False),
)

# (what the model called, its arguments) for every kind of call the table covers.
CALLS: dict[str, tuple[str, Any]] = {
    "read-only (hint)": ("mcp__fs__read_file", {"path": "/a"}),
    "not annotated": ("mcp__fs__move_file", {}),
    "writable (hint false)": ("mcp__fs__write_file", {}),
    "read-only (override)": ("mcp__fs__stat", {}),
    "writable (override over a true hint)": ("mcp__fs__touch", {}),
    "mcp_call of a read-only tool": ("mcp_call", {"server": "fs", "tool": "read_file", "arguments": {}}),
    "mcp_call of a not annotated tool": ("mcp_call", {"server": "fs", "tool": "move_file", "arguments": {}}),
    "mcp_call, JSON text": ("mcp_call", '{"server": "fs", "tool": "read_file", "arguments": {}}'),
    "mcp_call of a tool not listed": ("mcp_call", {"server": "fs", "tool": "rm", "arguments": {}}),
    "mcp_call of a disabled server's tool": ("mcp_call", {"server": "off", "tool": "read"}),
    "mcp_call that cannot be restored": ("mcp_call", {"tool": "read_file"}),
    "mcp_call with arguments that are not JSON": ("mcp_call", "{oops"),
    "MCP name not listed": ("mcp__fs__rm", {}),
    "mcp_describe": ("mcp_describe", {"server": "fs", "tool": "write_file"}),
    "non-MCP tool": ("bash", {"command": "ls"}),
}

LEVELS = [ApprovalLevel.READ_ONLY, ApprovalLevel.READ_WRITE, ApprovalLevel.SMART, ApprovalLevel.PROXY]

ALLOW, HUMAN, AI, HOST = "allow", "human", "host_ai", "host's rules"
ASKS = (HUMAN, HUMAN, HUMAN, AI)
ALLOWS_READS = (ALLOW, ALLOW, HUMAN, AI)

# R-APR-1: MCP tools always need approval, except a tool that only reads at
# read_only or read_write; smart asks a person; proxy asks the host's check.
TABLE: dict[str, tuple[str, str, str, str]] = {
    "read-only (hint)": ALLOWS_READS,
    "not annotated": ASKS,
    "writable (hint false)": ASKS,
    "read-only (override)": ALLOWS_READS,
    "writable (override over a true hint)": ASKS,
    "mcp_call of a read-only tool": ALLOWS_READS,
    "mcp_call of a not annotated tool": ASKS,
    "mcp_call, JSON text": ALLOWS_READS,
    "mcp_call of a tool not listed": ASKS,
    "mcp_call of a disabled server's tool": ASKS,
    "mcp_call that cannot be restored": ASKS,
    "mcp_call with arguments that are not JSON": ASKS,
    "MCP name not listed": ASKS,
    "mcp_describe": (ALLOW, ALLOW, ALLOW, ALLOW),
    "non-MCP tool": (HOST, HOST, HOST, HOST),
}

# R-APR-2, R-APR-3: the name rules, hints and audit records see.
EFFECTIVE_NAMES: dict[str, str] = {
    "read-only (hint)": "mcp__fs__read_file",
    "not annotated": "mcp__fs__move_file",
    "writable (hint false)": "mcp__fs__write_file",
    "read-only (override)": "mcp__fs__stat",
    "writable (override over a true hint)": "mcp__fs__touch",
    "mcp_call of a read-only tool": "mcp__fs__read_file",
    "mcp_call of a not annotated tool": "mcp__fs__move_file",
    "mcp_call, JSON text": "mcp__fs__read_file",
    "mcp_call of a tool not listed": "mcp__fs__rm",
    "mcp_call of a disabled server's tool": "mcp__off__read",
    "mcp_call that cannot be restored": "mcp_call",
    "mcp_call with arguments that are not JSON": "mcp_call",
    "MCP name not listed": "mcp__fs__rm",
    "mcp_describe": "mcp_describe",
    "non-MCP tool": "bash",
}


def outcome(decision: ApprovalDecision) -> str:
    if decision.needs_approval is None:
        return HOST
    if not decision.needs_approval:
        assert decision.approver is None
        return ALLOW
    assert decision.approver is not None
    return decision.approver


def approval_table(session: SessionSnapshot) -> dict[str, tuple[str, ...]]:
    return {
        case: tuple(outcome(approval_decision(name, arguments, level, session)) for level in LEVELS)
        for case, (name, arguments) in CALLS.items()
    }


def test_the_approval_table() -> None:
    assert approval_table(SESSION) == TABLE


@pytest.mark.parametrize("case", list(CALLS))
def test_the_effective_name_is_restored_for_mcp_call_and_kept_otherwise(case: str) -> None:
    name, arguments = CALLS[case]
    for level in LEVELS:
        assert approval_decision(name, arguments, level, SESSION).tool_name == EFFECTIVE_NAMES[case]


def test_an_unrestorable_mcp_call_is_an_mcp_tool_that_needs_approval_never_a_bypass() -> None:
    # R-APR-2
    unrestorable: list[Any] = [None, "{oops", [], {"server": "fs"}, {"server": 1, "tool": "read_file"}]
    for arguments in unrestorable:
        for level in LEVELS:
            decision = approval_decision("mcp_call", arguments, level, SESSION)
            assert decision.mcp and decision.needs_approval is True
            assert decision.tool_name == "mcp_call" and "cannot be restored" in decision.reason


def test_json_text_nested_too_deeply_needs_approval_and_never_raises() -> None:
    # R-APR-2, R-WS-6: the decoder's RecursionError is a model mistake like any other.
    for deep in ("[" * 100_000, '{"server": "fs", "tool": "read_file", "arguments": ' + "{" * 100_000):
        for level in LEVELS:
            decision = approval_decision("mcp_call", deep, level, SESSION)
            assert decision.mcp and decision.needs_approval is True and decision.tool_name == "mcp_call"


def test_a_restored_call_reports_server_tool_display_name_and_concurrency() -> None:
    arguments = {"server": "fs", "tool": "stat", "arguments": {"path": "/"}}
    decision = approval_decision("mcp_call", arguments, ApprovalLevel.READ_ONLY, SESSION)
    assert (decision.server, decision.tool, decision.display_name) == ("fs", "stat", "fs.stat")
    assert decision.read_only and decision.concurrency_safe and decision.mcp
    assert "restored to mcp__fs__stat" in decision.reason
    other = approval_decision("mcp__fs__read_file", {}, ApprovalLevel.READ_ONLY, SESSION)
    assert not other.concurrency_safe  # not said by an override: not safe to assume


def test_mcp_describe_names_the_server_and_tool_its_arguments_name_and_needs_no_approval() -> None:
    # R-APR-4: a host can show which tool is looked up; the lookup itself contacts no server (R-WS-4).
    for arguments in ({"server": "fs", "tool": "write_file"}, '{"server": "fs", "tool": "write_file"}'):
        decision = approval_decision("mcp_describe", arguments, ApprovalLevel.SMART, SESSION)
        assert (decision.tool_name, decision.server, decision.tool) == ("mcp_describe", "fs", "write_file")
        assert decision.display_name == "mcp_describe fs.write_file"  # a lookup, not a run of write_file
        assert (decision.needs_approval, decision.mcp) == (False, False)
    unnamed = approval_decision("mcp_describe", {"server": "fs"}, ApprovalLevel.SMART, SESSION)
    assert (unnamed.server, unnamed.tool, unnamed.display_name) == (None, None, "mcp_describe")


def test_the_restored_name_is_the_name_full_mode_declares() -> None:
    # Rules written against full-mode names keep matching, even for names that were normalized.
    session = snapshot(server("git hub", [tool("git hub", "search.all", hint=True)]))
    decision = approval_decision(
        "mcp_call", {"server": "git hub", "tool": "search.all"}, ApprovalLevel.READ_ONLY, session
    )
    assert decision.tool_name == session.servers[0].tools[0].name == "mcp__git_hub__search_all"
    assert decision.display_name == "git hub.search.all"


def test_other_tools_are_not_decided_and_keep_their_name() -> None:
    # R-APR-3
    decision = approval_decision("bash", {"command": "rm -rf /"}, ApprovalLevel.READ_WRITE, SESSION)
    assert (decision.tool_name, decision.needs_approval, decision.mcp) == ("bash", None, False)
    assert decision.display_name == "bash"


def test_levels_may_be_given_by_value() -> None:
    decision = approval_decision("mcp__fs__read_file", {}, "read_only", SESSION)  # type: ignore[arg-type]
    assert decision.needs_approval is False


@given(
    st.sampled_from(LEVELS),
    st.one_of(st.none(), st.text(), st.dictionaries(st.text(), st.one_of(st.text(), st.integers(), st.none()))),
)
def test_no_mcp_call_ever_runs_without_approval_unless_it_names_a_listed_read_only_tool(
    level: ApprovalLevel, arguments: Any
) -> None:
    decision = approval_decision("mcp_call", arguments, level, SESSION)
    assert decision.mcp
    if decision.needs_approval is False:
        assert level in (ApprovalLevel.READ_ONLY, ApprovalLevel.READ_WRITE)
        assert (decision.server, decision.tool) in {("fs", "read_file"), ("fs", "stat")}
