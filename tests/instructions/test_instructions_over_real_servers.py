"""Server instructions from real servers, through a session: stdio (the fault server) and streamable HTTP (the SDK).

Acceptance scenarios 1 (the text is kept) and 11 (the system prompt is never
touched) live here, with the whole life of an announcement on a real process:
announced once, kept through a crash and reconnect, retracted on disconnect,
announced again on connect, replaced on a reload with a new text (R-INS-1..5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from instruction_support import kinds
from session_support import connected_session

from wave_actors import InstructionKind, InstructionMessage, LoadMode, ServerState, ServerUnavailable, Session
from wave_actors.testing import fault_server_entry, serve_reference_server, wait_for_state

ANNOUNCE = InstructionKind.ANNOUNCE
OFFLINE = InstructionKind.OFFLINE
DOCS = "Search before you fetch.\n  Rate limit: 5 requests per second.\n\nNever fetch private pages."


def turn(session: Session, history: list[dict[str, object]], **rules: object) -> list[InstructionMessage]:
    """One model call's worth of host work: append the updates as hidden messages with their markers."""
    updates = session.instruction_updates(history, **rules)  # type: ignore[arg-type]
    history += [{"role": "user", "content": message.text, "meta": message.meta} for message in updates]
    history.append({"role": "assistant", "content": "ok"})
    return updates


async def test_instructions_from_initialize_are_kept_per_server(tmp_path: Path) -> None:
    # Scenario 1, R-INS-1: the multi-line text, exactly as the server sent it, for each server.
    servers = {"docs": fault_server_entry(instructions=DOCS), "web": fault_server_entry(instructions="Web only.")}
    async with connected_session(tmp_path, servers) as session:
        assert session.server("docs").instructions == DOCS
        assert session.server("web").instructions == "Web only."


async def test_a_stdio_server_is_announced_once_kept_through_a_crash_and_retracted_on_disconnect(
    tmp_path: Path,
) -> None:
    # R-INS-2, R-INS-3 with R-RACE-4: reconnecting is not offline; a manual disconnect is.
    async with connected_session(tmp_path, {"docs": fault_server_entry(instructions=DOCS)}) as session:
        history: list[dict[str, object]] = [{"role": "user", "content": "hi"}]

        [announcement] = turn(session, history)
        assert announcement.kind is ANNOUNCE and DOCS in announcement.text and '"docs"' in announcement.text
        assert turn(session, history) == []

        generation = session.server("docs").generation
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__docs__crash", {"code": 5})
        await wait_for_state(session, "docs", ServerState.RECONNECTING, ServerState.CONNECTED)
        assert turn(session, history) == []  # a blip: the announcement still holds
        with trio.fail_after(10):
            await session.wait_for(
                lambda s: s.server("docs").state is ServerState.CONNECTED and s.server("docs").generation > generation
            )
        assert turn(session, history) == []

        await session.disconnect("docs")
        assert kinds(turn(session, history)) == [(OFFLINE, "docs")]
        assert turn(session, history) == []

        await session.connect("docs")
        assert kinds(turn(session, history)) == [(ANNOUNCE, "docs")]  # scenario 10
        assert turn(session, history) == []


async def test_a_reload_in_place_with_new_instructions_announces_the_new_text(tmp_path: Path) -> None:
    # R-INS-3: the marker records which text was announced.
    async with connected_session(tmp_path, {"docs": fault_server_entry(instructions=DOCS)}) as session:
        history: list[dict[str, object]] = []
        turn(session, history)

        await session.reconfigure({"docs": fault_server_entry(instructions="Fetch nothing on Sundays.")})
        with trio.fail_after(10):
            await session.wait_for(lambda s: s.server("docs").instructions == "Fetch nothing on Sundays.")

        [message] = turn(session, history)
        assert message.kind is ANNOUNCE and "Fetch nothing on Sundays." in message.text
        assert turn(session, history) == []


async def test_a_server_whose_tools_are_all_denied_is_not_announced_from_a_real_session(tmp_path: Path) -> None:
    # R-INS-4, on the model-visible names the session lists.
    async with connected_session(tmp_path, {"shell": fault_server_entry(instructions="Run anything.")}) as session:
        assert turn(session, [], denied=["mcp__shell__*"]) == []
        assert kinds(turn(session, [], denied=["mcp__shell__crash"])) == [(ANNOUNCE, "shell")]


async def test_long_instructions_from_a_real_server_are_cut_and_marked(tmp_path: Path) -> None:
    # R-INS-2: 2 048 characters shown, the cut said.
    text = "Step. " * 1000
    async with connected_session(tmp_path, {"docs": fault_server_entry(instructions=text)}) as session:
        [message] = turn(session, [])
        assert message.truncated and text[:2048] in message.text and text[:2049] not in message.text
        assert "6000 characters" in message.text


async def test_instructions_never_change_the_declarations_or_the_history_before_them(tmp_path: Path) -> None:
    # Scenarios 7 and 11, R-INS-5: what the host puts before the conversation (its system prompt, the
    # working-set section, the tool declarations in either load mode) does not depend on instructions;
    # announcements are made all the same and only appended after it.
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    async with (
        connected_session(tmp_path / "with", {"docs": fault_server_entry(instructions=DOCS)}) as with_text,
        connected_session(tmp_path / "without", {"docs": fault_server_entry()}) as without_text,
    ):
        assert with_text.server("docs").instructions == DOCS and without_text.server("docs").instructions is None
        assert with_text.tool_declarations(LoadMode.FULL)  # connected, tools listed
        for mode in LoadMode:
            assert with_text.tool_declarations(mode) == without_text.tool_declarations(mode), mode
        assert with_text.working_set().render() == without_text.working_set().render()
        assert DOCS not in with_text.working_set().render()
        assert all(DOCS not in repr(d.input_schema) + d.description for d in with_text.tool_declarations(LoadMode.FULL))

        history: list[dict[str, object]] = [{"role": "user", "content": "hi"}]
        prefix = json.dumps(history)
        assert kinds(turn(with_text, history)) == [(ANNOUNCE, "docs")]  # scenario 7: whatever the mode
        await with_text.disconnect("docs")
        assert kinds(turn(with_text, history)) == [(OFFLINE, "docs")]
        assert json.dumps(history).startswith(prefix[:-1])  # only appended to


async def test_the_sdk_reference_server_over_streamable_http_is_announced_and_retracted(tmp_path: Path) -> None:
    # R-INS-1, R-INS-2 over HTTP: the SDK's MCPServer sets instructions in its initialize result.
    async with (
        serve_reference_server("streamable-http") as url,
        connected_session(tmp_path, {"reference": {"type": "http", "url": url}}) as session,
    ):
        instructions = session.server("reference").instructions
        assert instructions is not None and instructions.startswith("Reference server for wave-actors tests")
        history: list[dict[str, object]] = []

        [message] = turn(session, history)
        assert message.kind is ANNOUNCE and instructions in message.text and '"reference"' in message.text
        assert turn(session, history) == []

        await session.disconnect("reference")
        assert kinds(turn(session, history)) == [(OFFLINE, "reference")]
        assert turn(session, history) == []


async def test_closing_the_session_retracts_what_it_announced(tmp_path: Path) -> None:
    # R-INS-2: a closed session's servers are all disconnected.
    history: list[dict[str, object]] = []
    async with connected_session(tmp_path, {"docs": fault_server_entry(instructions=DOCS)}) as session:
        turn(session, history)
    assert kinds(turn(session, history)) == [(OFFLINE, "docs")]
