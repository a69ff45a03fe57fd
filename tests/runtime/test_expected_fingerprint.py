"""A call that requires the server's entry the host looked at: ``call_tool(..., expected_fingerprint=...)`` (R-TOOL-11).

A host shows or approves a call under the entry it saw (``status.fingerprint``,
R-CFG-8). If a reload or reconfigure changed what runs under that name since,
the call must fail and nothing may reach either process. The deterministic race
with a reload in flight is in ``tests/actor/test_actor_calls.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from process_support import tools_called
from session_support import connected_session

from wave_actors import EntryChanged, ServerState
from wave_actors.testing import fault_server_entry


async def test_a_call_expecting_an_entry_that_changed_since_fails_and_sends_nothing(tmp_path: Path) -> None:
    # R-TOOL-11: the entry changed between the host's look and the call; neither process sees the call.
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    async with connected_session(tmp_path, {"files": fault_server_entry(call_log=before)}) as session:
        looked = session.server("files").fingerprint
        approved = await session.call_tool("mcp__files__echo", {"text": "approved"}, expected_fingerprint=looked)
        assert approved.content[0].text == "approved"  # type: ignore[union-attr]

        await session.reconfigure({"files": fault_server_entry(call_log=after)})  # another command line
        current = session.server("files")
        assert current.state is ServerState.CONNECTED and current.fingerprint != looked

        with pytest.raises(EntryChanged, match="'files' changed since it was looked at") as caught:
            await session.call_tool("mcp__files__echo", {"text": "stale"}, expected_fingerprint=looked)
        assert (caught.value.server, caught.value.expected, caught.value.current) == (
            "files",
            looked,
            current.fingerprint,
        )
        gateway = {"server": "files", "tool": "echo", "arguments": {"text": "stale"}}
        with pytest.raises(EntryChanged):
            await session.call_tool("mcp_call", gateway, expected_fingerprint=looked)
        assert tools_called(before) == ["echo"] and tools_called(after) == []  # nothing was sent

        fresh = await session.call_tool("mcp_call", gateway, expected_fingerprint=current.fingerprint)
        assert fresh.content[0].text == "stale"  # type: ignore[union-attr]
        unchecked = await session.call_tool("mcp__files__echo", {"text": "any"})  # without it, as before
        assert unchecked.content[0].text == "any"  # type: ignore[union-attr]
    assert tools_called(after) == ["echo", "echo"]


async def test_an_expected_fingerprint_is_checked_before_anything_else_and_must_be_text(tmp_path: Path) -> None:
    # R-TOOL-11: a changed entry is said even while the server is down; a wrong type is the caller's bug.
    log = tmp_path / "calls.jsonl"
    async with connected_session(tmp_path, {"files": fault_server_entry(call_log=log)}) as session:
        described = await session.call_tool(
            "mcp_describe", {"server": "files", "tool": "echo"}, expected_fingerprint="0" * 16
        )
        assert not described.is_error  # a lookup sends nothing: nothing to guard
        with pytest.raises(TypeError, match="expected_fingerprint must be a string"):
            await session.call_tool("mcp__files__echo", {"text": "x"}, expected_fingerprint=b"0")  # type: ignore[arg-type]
        await session.disconnect("files")
        with pytest.raises(EntryChanged):
            await session.call_tool("mcp__files__echo", {"text": "x"}, expected_fingerprint="0" * 16)
    assert tools_called(log) == []
