"""A project's sessions see every change of its connections, and only the watched ones are told (R-SCOPE-1, R-HOST-2).

A connection's change (its state, an attach, a release: the reference count
is part of every status) stamps it with a new version; a session's version is
the newest of its own and its connections' stamps. So an attach or a release
costs the same whatever the number of sessions sharing the connection, and a
session nobody waits on is never woken.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing
from polling import poll_until
from presets import FAST_SESSION

from wave_actors import Host, SessionSnapshot, SharedUse
from wave_actors._roster.shared import SharedRoster
from wave_actors.testing import fault_server_entry

LIMIT = 10.0


async def test_an_attach_or_a_release_wakes_only_the_sessions_being_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R-SCOPE-1, R-HOST-2: every session sees the new reference count at once, with a newer version, but
    # only a session someone waits on is told: a release costs the same with 300 sessions as with 3.
    told: list[SharedRoster] = []
    changed = SharedRoster.changed

    def counting(roster: SharedRoster) -> None:
        told.append(roster)
        changed(roster)

    monkeypatch.setattr(SharedRoster, "changed", counting)
    entries = {"a": fault_server_entry(), "b": dict(fault_server_entry(), enabled=False)}
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION, watchdog=False) as host:
        sessions = [await host.create_session(tmp_path, entries, ownership="project") for _ in range(300)]
        watched, released, quiet = sessions[0], sessions[1], sessions[2]
        seen: list[SessionSnapshot] = []
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for snapshot in watched.watch():
                    seen.append(snapshot)

            nursery.start_soon(watch)
            await trio.testing.wait_all_tasks_blocked()
            before = quiet.snapshot()
            assert before.server("a").shared == SharedUse(300)
            told.clear()
            await host.destroy_session(released.id)
            assert len(set(told)) <= 2  # the watched session's and the released one's
            after = quiet.snapshot()
            assert after.version > before.version
            assert [after.server(name).shared for name in "ab"] == [SharedUse(299)] * 2
            await poll_until(
                lambda: seen[-1].server("a").shared == SharedUse(299), limit=LIMIT, what="the watcher told"
            )
            told.clear()
            newcomer = await host.create_session(tmp_path, entries, ownership="project")
            assert len(set(told)) <= 2  # the watched session's and the newcomer's
            assert newcomer.server("a").shared == SharedUse(300)
            assert quiet.server("a").shared == SharedUse(300)
            nursery.cancel_scope.cancel()
