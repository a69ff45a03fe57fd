"""Regressions the fault matrix found, one test each, kept apart from the matrix.

1. An ordinary connection loss (a crash, an SSE drop) is handled by
   reconnecting, and is never logged as an error of the library itself.
2. The error of a server whose connection was lost names the server, like
   every other error.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
from fault_matrix_support import FAST, wait_until

from wave_actors import ServerState, ServerUnavailable, open_session
from wave_actors.testing import fault_server_entry


async def test_an_ordinary_connection_loss_is_not_logged_as_our_bug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # R-RACE-4, R-RACE-5: a crash is the server's misbehaviour, handled by reconnecting; no ERROR record.
    caplog.set_level(logging.WARNING)
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=FAST
    ) as session:
        await session.prepare_turn()
        generation = session.server("f").generation
        with pytest.raises(ServerUnavailable, match="code 5"):
            await session.call_tool("mcp__f__crash", {"code": 5})
        await wait_until(
            session,
            lambda snapshot: snapshot.server("f").state is ServerState.CONNECTED
            and snapshot.server("f").generation > generation,
        )
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == []


async def test_the_reason_of_a_lost_connection_names_the_server(tmp_path: Path) -> None:
    async with open_session(
        workdir=tmp_path, home=tmp_path / "home", mcp_servers={"f": fault_server_entry()}, options=FAST
    ) as session:
        await session.prepare_turn()
        with pytest.raises(ServerUnavailable):
            await session.call_tool("mcp__f__crash", {"code": 5})
        with trio.fail_after(10):
            snapshot = await wait_until(session, lambda snapshot: snapshot.server("f").state is ServerState.RECONNECTING)
        error = snapshot.server("f").error
        assert error is not None and "code 5" in error
        assert "'f'" in error, error
