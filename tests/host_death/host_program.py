"""A host process for the host-death tests: it opens a Host, dials its servers, then waits to die.

Run by path: ``python host_program.py --home DIR --mark MARK [options]``. It
uses the public API only. Every server entry gets ``WAVE_HOST_DEATH_MARK=MARK``
in its environment (and so do the servers' children), so a test counts the
server families with ``process_census(MARK_VARIABLE, MARK, descendants=False)``
without counting the host or its watchdog.

Once every server is connected it prints one JSON line (:func:`status`), then
reads commands from stdin, one per line:

- ``status``: print the JSON line again (the watchdog's pid may have changed).

``--fork-child`` forks an idle child (``forked_child`` in the JSON line) once
connected, holding copies of every descriptor the host had; the test kills it.
``--escaping LABEL`` gives every server a grandchild that escapes every mark
but a cgroup (``fault_server_entry(escaping_grandchild=LABEL)``); the test
finds those by LABEL. ``--no-cgroups`` opens the host with ``cgroups=False``.

End of file on stdin closes the host normally. ``--signals`` runs the host
inside :func:`wave_actors.reclaim_on_signals`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import trio

from wave_actors import Host, SessionOptions, reclaim_on_signals
from wave_actors.testing import fault_server_entry

MARK_VARIABLE = "WAVE_HOST_DEATH_MARK"


def fork_idle_child() -> int:
    """``os.fork()`` a child that does nothing until killed, as a ``multiprocessing`` worker would idle."""
    pid = os.fork()
    if pid == 0:
        while True:
            signal.pause()
    return pid


def status(host: Host, forked: int | None = None) -> str:
    protection = host.orphan_protection()
    return json.dumps(
        {
            "pid": os.getpid(),
            "forked_child": forked,
            "watchdog": protection.watchdog,
            "watchdog_pid": protection.watchdog_pid,
            "watchdog_replacements": protection.watchdog_replacements,
            "subreaper": protection.subreaper,
            "parent_death_signal": protection.parent_death_signal,
            "cgroups": protection.cgroups,
        }
    )


async def serve(arguments: argparse.Namespace) -> None:
    entry = fault_server_entry(
        grandchild=arguments.grandchildren,
        setsid_grandchild=arguments.grandchildren,
        exit_on_eof=not arguments.ignore_eof,
        escaping_grandchild=arguments.escaping,
    )
    entry["env"] = {MARK_VARIABLE: arguments.mark}
    home = Path(arguments.home)
    async with Host.open(
        home=home,
        options=SessionOptions(),
        watchdog=not arguments.no_watchdog,
        subreaper=arguments.subreaper,
        cgroups=not arguments.no_cgroups,
    ) as host:
        async with trio.open_nursery() as nursery:
            for _ in range(arguments.sessions):
                session = await host.create_session(home, {f"s{i}": entry for i in range(arguments.servers)})
                nursery.start_soon(session.prepare_turn)
        # Report once the watchdog said who it is, so a test can kill it.
        while host.orphan_protection().watchdog and host.orphan_protection().watchdog_pid is None:
            await trio.sleep(0.01)
        forked = fork_idle_child() if arguments.fork_child else None
        print(status(host, forked=forked), flush=True)
        commands = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        pending = b""
        while chunk := await commands.receive_some():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip() == b"status":
                    print(status(host), flush=True)


async def main(arguments: argparse.Namespace) -> None:
    if arguments.signals:
        async with reclaim_on_signals():
            await serve(arguments)
    else:
        await serve(arguments)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", required=True)
    parser.add_argument("--mark", required=True)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--grandchildren", action="store_true", help="each server spawns a grandchild and a setsid one")
    parser.add_argument("--ignore-eof", action="store_true", help="servers keep running after stdin closes")
    parser.add_argument("--signals", action="store_true", help="run inside reclaim_on_signals()")
    parser.add_argument("--no-watchdog", action="store_true")
    parser.add_argument("--subreaper", action="store_true")
    parser.add_argument("--no-cgroups", action="store_true")
    parser.add_argument("--escaping", default=None, metavar="LABEL", help="each server starts an escaping grandchild")
    parser.add_argument("--fork-child", action="store_true", help="os.fork() an idle child once connected")
    trio.run(main, parser.parse_args())
