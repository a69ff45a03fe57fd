"""The fault servers a test started, from the process census: shared by the runtime tests and the fault matrix."""

from __future__ import annotations

import psutil

from wave_actors.testing import FAULT_SERVER_PATH, process_census


def _command(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []  # gone since the census


def server_processes(marker: str | None = None) -> list[psutil.Process]:
    """Live fault servers started by this test process (only those whose argv has ``marker``, if given).

    The runtime spawns every stdio server as a child of this process, so the
    descendants are enough; grandchildren run another program and never count.
    """
    found: list[psutil.Process] = []
    for process in process_census():
        command = _command(process)
        if str(FAULT_SERVER_PATH) in command and (marker is None or marker in command):
            found.append(process)
    return found
