"""What an actor group remembers of the servers it retired is bounded (R-HOST-3, R-TOOL-1).

A project's group lives as long as its host, through any number of
configuration changes; a call by a tool name of a server removed lately is
still answered with why, while the names of older ones are forgotten.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from presets import FAST_SESSION
from process_support import server_processes

from wave_actors import Host, UnknownTool
from wave_actors._roster.group import RETIRED_KEPT
from wave_actors.testing import fault_server_entry


async def test_a_session_reconfigured_without_end_remembers_only_the_last_retired_servers_names(tmp_path: Path) -> None:
    # R-HOST-3: a host reconfigured for weeks, with new server names each time, does not grow what it remembers.
    async with Host.open(home=tmp_path / "home", options=FAST_SESSION) as host:
        session = await host.create_session(tmp_path, {"first": fault_server_entry(), "last": fault_server_entry()})
        await session.prepare_turn()
        await session.reconfigure({"last": fault_server_entry()})
        for index in range(RETIRED_KEPT):  # never dialed: their retirements are remembered all the same
            await session.reconfigure({"last": fault_server_entry(), f"gone{index}": fault_server_entry()})
        await session.reconfigure({})
        with pytest.raises(UnknownTool, match="its server 'last' was removed from the configuration"):
            await session.call_tool("mcp__last__echo", {"text": "x"})
        with pytest.raises(UnknownTool) as forgotten:
            await session.call_tool("mcp__first__echo", {"text": "x"})
        assert "removed" not in str(forgotten.value)
        assert server_processes() == []
