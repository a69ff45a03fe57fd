"""However an asyncio program ends, its servers end with it (R-AIO-2, R-KILL-4): real programs, real processes.

Each test runs ``ending_program.py`` as a process of its own, under the
standard loop and uvloop; the program opens a host and dials a server that
has a grandchild, then ends as the test says. Once the program has exited,
no process it started may be left: its servers, their grandchildren, its
watchdog.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from wave_actors.testing import leftover_processes

PROGRAM = Path(__file__).with_name("ending_program.py")


def _started(ending: str, loop_name: str, workdir: Path) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """Start the program; once it has dialed, every process it started (its servers, their grandchildren)."""
    program = subprocess.Popen(
        [sys.executable, str(PROGRAM), ending, loop_name, str(workdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert program.stdout is not None
    line = program.stdout.readline()  # bounded by the suite's test timeout
    assert line == "ready\n", f"the program did not get ready: {line!r}"
    me = psutil.Process(program.pid)
    deadline = time.monotonic() + 10
    # The server starts its grandchild as it starts; on a loaded machine that may be a moment after the dial.
    while len(family := me.children(recursive=True)) < 2 and time.monotonic() < deadline:
        psutil.wait_procs([me], timeout=0.05)  # look again shortly (ends early only if the program died)
    assert len(family) >= 2, f"the server and its grandchild, not {family}"
    assert program.stdin is not None
    program.stdin.write("go on\n")
    program.stdin.close()
    return program, family


def _ended_leaving_nothing(program: subprocess.Popen[str], family: list[psutil.Process]) -> int:
    """Wait for the program's exit; assert that nothing it started is alive. Its exit status."""
    status = program.wait(timeout=30)
    alive = [process for process in family if process.is_running() and process.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"left alive: {alive}"
    assert leftover_processes(settle=5.0) == []
    return status


def test_asyncio_run_ending_with_the_host_open_leaves_no_process(tmp_path: Path, loop_name: str) -> None:
    # R-AIO-2: asyncio.run cancels the task that holds the host; the block unwinds and reclaims.
    program, family = _started("run-ends", loop_name, tmp_path)
    assert _ended_leaving_nothing(program, family) == 0


def test_keyboard_interrupt_leaves_no_process(tmp_path: Path, loop_name: str) -> None:
    # R-AIO-2, R-KILL-4: Ctrl-C under asyncio.run cancels the main task; the host closes before the program exits.
    program, family = _started("interrupt", loop_name, tmp_path)
    program.send_signal(signal.SIGINT)
    assert _ended_leaving_nothing(program, family) != 0  # it ended with KeyboardInterrupt


def test_a_loop_closed_with_the_host_open_leaves_no_process(tmp_path: Path, loop_name: str) -> None:
    # R-AIO-2: the trio thread sees the loop gone and closes the host; the interpreter waits for it.
    program, family = _started("loop-closed", loop_name, tmp_path)
    assert program.stdout is not None
    assert program.stdout.readline() == "closed\n"
    assert _ended_leaving_nothing(program, family) == 0
