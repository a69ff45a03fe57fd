"""The configuration-editing example of the documentation is real: extract its python block and run it (R-STORE-1..4)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

EDITING = Path(__file__).resolve().parents[2] / "docs" / "editing.md"


def editing_example() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```$", EDITING.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    [example] = [block for block in blocks if "ConfigStore(" in block]
    return example


def test_docs_editing_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(editing_example(), encoding="utf-8")
    environment = {**os.environ, "HOME": str(tmp_path)}  # the user file goes to a fresh ~/.wave

    completed = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=30
    )

    assert completed.returncode == 0, completed.stderr
    first, refusal = completed.stdout.splitlines()
    assert first == f"{tmp_path / '.wave' / 'mcp.json'} False []"
    assert "read-only" in refusal
    written = json.loads((tmp_path / ".wave" / "mcp.json").read_text(encoding="utf-8"))
    assert written == {"mcpServers": {"docs": {"url": "https://docs.example/mcp"}}}
