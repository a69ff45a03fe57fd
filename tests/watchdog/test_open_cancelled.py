"""A host whose opening is cancelled ends at once, whatever it was starting (R-KILL-6, R-KILL-7).

The watchdog and the subreaper run as tasks that shield themselves until the
host closes. trio leaves a task that reports "started" inside a ``start()``
already cancelled where it is, and waits for it to end: a cancellation arriving
while either was being started left ``Host.open`` waiting forever for a task
only its own teardown could end. The delays below sweep that window (the first
watchdog takes a few milliseconds to spawn).
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import trio

from wave_actors import Host
from wave_actors._watchdog.client import PROGRAM


def watchdogs_of_this_process() -> list[psutil.Process]:
    """The watchdog processes guarding this process, by their command line."""
    found: list[psutil.Process] = []
    for process in psutil.process_iter(["cmdline"]):
        command: list[str] = process.info["cmdline"] or []
        if str(PROGRAM) in command and str(os.getpid()) in command:
            found.append(process)
    return found


@pytest.mark.timeout(30)
@pytest.mark.parametrize("subreaper", [False, True], ids=["watchdog", "watchdog+subreaper"])
async def test_an_opening_cancelled_at_any_moment_ends_with_no_watchdog_left(tmp_path: Path, subreaper: bool) -> None:
    for step in range(16):
        with trio.move_on_after(step * 0.003) as opening:
            async with Host.open(home=tmp_path, subreaper=subreaper):
                await trio.sleep_forever()
        assert opening.cancelled_caught
        assert watchdogs_of_this_process() == [], f"a watchdog outlived an opening cancelled after {step * 3} ms"
