"""A server that floods its client with requests loses its own connection, and nothing else does.

The frame of the fault matrix (``test_fault_matrix.py``), for one fault the
matrix does not list: in the middle of a call the server sends 100 000
``ping`` requests without reading its stdin. Session ``faulty`` holds the
flooding server next to a healthy one; session ``bystander`` holds one
healthy server. The flooder's connection is closed with a reason naming the
flood and the session reconnects it; the healthy server of its session and
the bystander's keep their connections; the host's tasks and memory stay
flat meanwhile.

R-TOOL-13, R-RACE-4.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from presets import FAST_SESSION
from process_support import HostPeaks

from wave_actors import Host, ServerState, ServerUnavailable
from wave_actors.testing import fault_server_entry, wait_for_state

FLOOD = 100_000


async def test_a_ping_flood_mid_call_closes_only_the_flooders_connection(tmp_path: Path) -> None:
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        bystander = await host.create_session(tmp_path, {"healthy": fault_server_entry()}, session_id="bystander")
        session = await host.create_session(
            tmp_path,
            {"flooder": fault_server_entry(ping_flood=FLOOD), "healthy": fault_server_entry()},
            session_id="faulty",
        )
        await bystander.prepare_turn()
        await session.prepare_turn()
        before = {name: session.server(name).generation for name in ("flooder", "healthy")}
        bystander_generation = bystander.server("healthy").generation
        peaks = HostPeaks()
        with trio.fail_after(30):
            async with trio.open_nursery() as sampler:
                sampler.start_soon(peaks.sample)
                with pytest.raises(ServerUnavailable, match="without reading their answers: a flood") as raised:
                    await session.call_tool("mcp__flooder__flood", {})
                sampler.cancel_scope.cancel()
            assert "server 'flooder'" in str(raised.value)
            error = (await wait_for_state(session, "flooder", ServerState.RECONNECTING)).error
            assert error is not None and "'flooder'" in error and "a flood" in error, error
            await session.wait_for(
                lambda snapshot: (
                    snapshot.server("flooder").state is ServerState.CONNECTED
                    and snapshot.server("flooder").generation > before["flooder"]
                )
            )
        assert peaks.added_tasks <= 10, peaks
        assert peaks.added_rss < 32 * 1024 * 1024, peaks

        # The healthy server of the same session, and the other session, never noticed.
        assert session.server("healthy").generation == before["healthy"]
        assert session.server("healthy").state is ServerState.CONNECTED
        result = await session.call_tool("mcp__healthy__echo", {"text": "peer"})
        assert result.content[0].text == "peer"  # type: ignore[union-attr]
        assert bystander.server("healthy").generation == bystander_generation
        result = await bystander.call_tool("mcp__healthy__echo", {"text": "bystander"})
        assert result.content[0].text == "bystander"  # type: ignore[union-attr]
