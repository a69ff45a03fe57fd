"""Helpers for runtime tests: short graces and backoffs, process counting, a crash loop on demand."""

from __future__ import annotations

import sys
from pathlib import Path

from process_support import server_processes as server_processes

from supervisors import Backoff, RestartIntensity
from wave_actors import Graces, SessionOptions, TransportOptions
from wave_actors.testing import FAULT_SERVER_PATH

FAST = SessionOptions(
    dial_timeout=10.0,
    transport=TransportOptions(graces=Graces(eof=0.5, term=0.5, kill=1.0)),
    reconnect_backoff=Backoff(initial=0.05, multiplier=2.0, maximum=0.2, jitter=0.0, reset_after=5.0),
    reconnect_intensity=RestartIntensity(max_restarts=3, period=30.0),
    seed=7,
)


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
