"""A call that expects an entry, against a reload in flight, on one real actor (R-TOOL-11, R-RACE-1).

A reload takes the new entry at once (the status shows its fingerprint) and
posts the re-dial to the actor's mailbox; until the actor takes it, the old
connection is still live. A host that looked in that window saw the new
fingerprint, and a call must not reach the old process under it; a host that
looked before saw the old one, and the entry is no longer that. No checkpoint
separates the reload from the calls below, so the window is held open.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from presets import FAST_SESSION
from process_support import tools_called

from wave_actors import EntryChanged, ServerConfig, ServerState, ServerUnavailable, load_config
from wave_actors._actor.actor import ServerActor
from wave_actors.testing import fault_server_entry


def entry(tmp_path: Path, log: Path) -> ServerConfig:
    return load_config(
        tmp_path, home=tmp_path / "home", constructor={"files": fault_server_entry(call_log=log)}
    ).servers["files"]


async def test_no_reload_slips_between_the_fingerprint_check_and_the_send(tmp_path: Path) -> None:
    old_log, new_log = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old, new = entry(tmp_path, old_log), entry(tmp_path, new_log)
    assert old.fingerprint != new.fingerprint
    async with trio.open_nursery() as nursery:
        actor = ServerActor(
            old, workdir=tmp_path, options=FAST_SESSION, nursery=nursery, key="files", on_change=lambda _: None
        )
        with trio.fail_after(15):
            await actor.connect(explicit=True)
        assert actor.state.state is ServerState.CONNECTED

        reloaded = trio.Event()
        actor.reload_soon(new, reloaded)  # the new entry is the server's now; its re-dial waits in the mailbox
        assert actor.config.fingerprint == new.fingerprint and actor.state.state is ServerState.CONNECTED
        with pytest.raises(EntryChanged):
            await actor.call_tool("echo", {"text": "looked before"}, expected_fingerprint=old.fingerprint)
        with pytest.raises(ServerUnavailable, match="not connected with it yet; nothing was sent"):
            await actor.call_tool("echo", {"text": "looked in between"}, expected_fingerprint=new.fingerprint)
        assert tools_called(old_log) == []  # the old process, still live, never saw either call

        with trio.fail_after(15):
            await reloaded.wait()  # the old connection closed, the new entry dialed
        assert actor.state.state is ServerState.CONNECTED
        result = await actor.call_tool("echo", {"text": "after"}, expected_fingerprint=new.fingerprint)
        assert result.content[0].text == "after"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()
    assert tools_called(old_log) == [] and tools_called(new_log) == ["echo"]
