"""Failure notices through a session, on a real server process that fails to start (R-WS-8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_support import connected_session

from wave_actors import DialError, FailureNotice, LoadMode, ServerState, Session
from wave_actors.testing import fault_server_entry


def turn(session: Session, history: list[dict[str, object]]) -> list[FailureNotice]:
    notices = session.failure_notices(history)
    history += [{"role": "user", "content": notice.text, "meta": notice.meta} for notice in notices]
    history.append({"role": "assistant", "content": "ok"})
    return notices


async def test_a_server_that_failed_to_connect_is_told_once_per_failure_beside_its_working_set_line(
    tmp_path: Path,
) -> None:
    # R-WS-8 with R-DIAL-4: the lazy dial fails and is not retried, so the failure is told once;
    # an explicit connect that fails again is a new failure, told again.
    servers = {"broken": fault_server_entry(exit_on_start=3), "ok": fault_server_entry()}
    async with connected_session(tmp_path, servers) as session:
        history: list[dict[str, object]] = []
        [notice] = turn(session, history)
        [broken, ok] = session.working_set().servers
        assert (notice.server, notice.reason) == ("broken", broken.unavailable)
        assert ok.available and "connect failed: process exited with code 3" in notice.text
        assert f"### broken (unavailable: {notice.reason})" in session.working_set().render()
        assert session.tool_declarations(LoadMode.FULL)  # told in full mode too, where its tools are simply gone

        await session.prepare_turn()
        assert turn(session, history) == []
        assert turn(session, history) == []

        with pytest.raises(DialError):
            await session.connect("broken")
        assert session.server("broken").state is ServerState.ERROR
        [again] = turn(session, history)
        assert again.server == "broken" and again.sha256 != notice.sha256
        assert turn(session, history) == []
