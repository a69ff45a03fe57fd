"""How a lost connection is reported: in the server's state, naming the server, never as a library error.

An ordinary connection loss (a crash, a dropped stream) is the server's
misbehaviour: the session reconnects (R-RACE-4, R-RACE-5) and logs no ERROR
record of its own. The reason kept in the server's status names the server,
like every other error of the library.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
from session_support import connected_session

from wave_actors import ServerState, ServerUnavailable
from wave_actors.testing import fault_server_entry, wait_for_state


async def test_an_ordinary_connection_loss_is_not_logged_as_our_bug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # R-RACE-4, R-RACE-5: a crash is the server's misbehaviour, handled by reconnecting; no ERROR record.
    caplog.set_level(logging.WARNING)
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        generation = session.server("f").generation
        with pytest.raises(ServerUnavailable, match="code 5"):
            await session.call_tool("mcp__f__crash", {"code": 5})
        with trio.fail_after(10):
            await session.wait_for(
                lambda snapshot: (
                    snapshot.server("f").state is ServerState.CONNECTED and snapshot.server("f").generation > generation
                )
            )
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == []


async def test_the_reason_of_a_lost_connection_names_the_server(tmp_path: Path) -> None:
    # R-RACE-4: the status says which server was lost, and why.
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 5})
        error = (await wait_for_state(session, "f", ServerState.RECONNECTING)).error
        assert error is not None and "code 5" in error
        assert "'f'" in error, error
