"""``wave-actors demo``: a self-contained walkthrough of the guarantees, on bundled servers.

One :class:`~wave_actors.Host`, two sessions, no configuration read: the
servers are constructor entries for the bundled stdlib fault server and the
MCP SDK's reference server, and the host's home and the sessions' workdir are
empty temporary directories. Each step says what it expects, checks it and
prints ✓ or ✗; the run fails (exit 1) if any check does.

Processes are counted by :func:`wave_actors.testing.process_census`: the
descendants of this process, plus any process whose environment carries this
run's mark (every server entry overlays it, and servers pass their environment
to their children), which finds ``setsid`` or re-parented grandchildren too.
The mark is fresh for every run, so other programs' processes never count.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from typing import Final, TextIO

import trio

from wave_actors import Host, Session, WaveActorsError
from wave_actors._console import EXIT_FAILURE, EXIT_OK, json_text, one_line, run_until_signal
from wave_actors._demo.report import Walkthrough, marks
from wave_actors._demo.steps import (
    ECHO_INIT_DELAY,
    NOTES_INIT_DELAY,
    RUN_VARIABLE,
    SLOW_INIT_DELAY,
    Demo,
    count_processes,
)

__all__ = ["run_demo"]

_DEMO_TIME_LIMIT: Final = 45.0


async def _walkthrough(walk: Walkthrough, run: str) -> None:
    with tempfile.TemporaryDirectory(prefix="wave-actors-demo-") as directory:
        home = os.path.join(directory, "home")
        workdir = os.path.join(directory, "project")
        os.mkdir(home)
        os.mkdir(workdir)
        demo: Demo | None = None

        async def hook(session: Session) -> None:
            if demo is not None:
                await demo.before_destroy(session)

        async with Host.open(home=home, before_destroy=[hook]) as host:
            demo = Demo(walk, host, run)
            chat, slow = await demo.create(workdir)
            await demo.first_turn(chat)
            await demo.calls(chat)
            await demo.manual_disconnect(chat)
            await demo.crash(chat)
            await demo.destroy_mid_dial(chat, slow)
            await demo.destroy(chat)


def _intro(walk: Walkthrough) -> None:
    walk.show(
        "wave-actors demo: one Host, two sessions, servers given by the host (no configuration read)\n"
        f"  echo       bundled fault server (stdlib only), init delay {ECHO_INIT_DELAY:.1f} s\n"
        f"  notes      bundled fault server, init delay {NOTES_INIT_DELAY:.1f} s, spawns a setsid grandchild\n"
        "  reference  the MCP SDK's reference server (MCPServer over stdio)\n"
        f"  slow       bundled fault server, init delay {SLOW_INIT_DELAY:.1f} s (session chat-2)"
    )


def run_demo(out: TextIO = sys.stdout, *, as_json: bool = False) -> int:
    """Run the walkthrough, print it, and return the exit code.

    :param out: where the walkthrough is printed.
    :param as_json: print one JSON document (steps, checks, processes left) instead.
    :returns: 0 when every check held and no process is left, 1 otherwise.
    """
    run = uuid.uuid4().hex
    walk = Walkthrough(out, as_json, marks(out))
    _intro(walk)
    started = time.monotonic()
    error: str | None = None
    try:
        run_until_signal(_bounded, walk, run)
    except (WaveActorsError, trio.TooSlowError) as caught:
        error = one_line(f"{type(caught).__name__}: {caught}")
    elapsed = time.monotonic() - started
    if not walk.steps:
        walk.step("Start")
    if error is not None:
        walk.check(False, f"the walkthrough stopped: {error}")
    walk.step("Processes left after the host closed")
    left = count_processes(run)
    walk.check(
        left == 0,
        f"psutil: {left} processes left among the descendants of pid {os.getpid()} and the processes "
        f"marked {RUN_VARIABLE} by this run, setsid grandchildren included",
    )
    failed = walk.failed
    total = sum(len(step.checks) for step in walk.steps)
    if as_json:
        out.write(
            json_text(
                {
                    "ok": not failed,
                    "seconds": round(elapsed, 3),
                    "processes_left": left,
                    "steps": [
                        {
                            "number": step.number,
                            "title": step.title,
                            "checks": [{"ok": check.ok, "text": check.text} for check in step.checks],
                        }
                        for step in walk.steps
                    ],
                },
                out,
            )
            + "\n"
        )
    else:
        verdict = "all checks passed" if not failed else f"{len(failed)} of {total} checks FAILED"
        out.write(f"\n{total - len(failed)}/{total} checks, {verdict} in {elapsed:.1f} s; {left} processes left\n")
    return EXIT_OK if not failed else EXIT_FAILURE


async def _bounded(walk: Walkthrough, run: str) -> None:
    # Under run_until_signal: SIGINT, SIGTERM, SIGHUP reclaim every server, then the demo exits with 128 + the signal.
    with trio.fail_after(_DEMO_TIME_LIMIT):
        await _walkthrough(walk, run)
