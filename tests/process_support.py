"""Finding the processes a test started: shared by the runtime tests and the fault matrix."""

from __future__ import annotations

import os

import psutil

from wave_actors.testing import FAULT_SERVER_PATH


def server_processes(marker: str | None = None) -> list[psutil.Process]:
    """Live fault servers started by this test process (only those whose argv has ``marker``, if given)."""
    found: list[psutil.Process] = []
    for child in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                continue
            cmdline = child.cmdline()
        except psutil.Error:
            continue
        if str(FAULT_SERVER_PATH) in cmdline and (marker is None or marker in cmdline):
            found.append(child)
    return found
