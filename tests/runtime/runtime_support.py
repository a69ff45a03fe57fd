"""Helpers for runtime tests: fault servers by process, a crash loop on demand."""

from __future__ import annotations

import sys
from pathlib import Path

from process_support import server_processes as server_processes

from wave_actors.testing import FAULT_SERVER_PATH


def failing_after_marker_entry(tmp_path: Path, marker: Path) -> dict[str, object]:
    """A stdio entry that runs the fault server, or exits 1 once ``marker`` exists (a crash loop on demand)."""
    wrapper = tmp_path / "gate.py"
    wrapper.write_text(
        "import os, sys\n"
        f"if os.path.exists({str(marker)!r}):\n"
        "    sys.stderr.write('gate closed\\n')\n"
        "    sys.exit(1)\n"
        f"os.execv(sys.executable, [sys.executable, '-I', '-S', {str(FAULT_SERVER_PATH)!r}])\n"
    )
    return {"command": sys.executable, "args": ["-I", "-S", str(wrapper)]}
