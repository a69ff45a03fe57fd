"""The ``.mcp.json`` entry of "For hosts in other languages" for ``wave-actors serve`` is one a client can launch as it is (R-SERVE-1)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from serve_support import text, write_project

from wave_actors.testing import fault_server_entry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "other-languages.md"


def readme_entry() -> dict[str, object]:
    [block] = re.findall(r"^```json\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return json.loads(block)["mcpServers"]["project"]


async def test_the_readme_entry_launches_serve_for_a_desktop_client(tmp_path: Path) -> None:
    entry = readme_entry()
    script = Path(sys.executable).with_name("wave-actors")
    command = str(script) if script.exists() else shutil.which(str(entry["command"]))
    if command is None:
        pytest.skip("the wave-actors console script is not installed")
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry()})
    args = [str(workdir) if arg == "/path/to/project" else str(arg) for arg in entry["args"]]  # type: ignore[union-attr]
    env = {**os.environ, "HOME": str(tmp_path)}
    parameters = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert "mcp__alpha__echo" in {tool.name for tool in (await session.list_tools()).tools}
        assert text(await session.call_tool("mcp__alpha__echo", {"text": "from the README"})) == "from the README"
