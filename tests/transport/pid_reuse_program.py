"""Reclaim a server whose pid is handed to an unrelated session meanwhile, in a pid namespace of its own.

Run as ``unshare --pid --fork --mount-proc python pid_reuse_program.py``:
in a fresh pid namespace, ``/proc/sys/kernel/ns_last_pid`` chooses the next
pid, and nothing but this program forks, so the reuse is certain and can hit
nobody else's process.

The server exits on stdin EOF. The ``close_stdin`` stage handed to
``reclaim`` closes its stdin, waits for it (its pid is free again), and
starts an unrelated program at that very pid: a session leader (its session
id is the old server's pid) with a child in its session, both without the
family's tag. Then ``reclaim`` goes on to its scans. It prints one JSON line:
whether the pid was reused, and whether the leader and its child are alive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import trio

from wave_actors import Graces
from wave_actors._family.tag import FAMILY_VARIABLE, family_tag
from wave_actors._transport.reclamation import reclaim

SERVER = "import sys\nsys.stdin.read()\n"
# A session leader (start_new_session) whose child shares its session; both wait to be killed.
UNRELATED = (
    "import os, signal, subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import signal\\nwhile True: signal.pause()'])\n"
    "print(child.pid, flush=True)\n"
    "while True: signal.pause()\n"
)


def start_at(pid: int) -> tuple[subprocess.Popen[bytes], int] | None:
    """The unrelated program started at ``pid``, once its child runs, and the child's pid.

    ``None`` if the kernel gave it another pid.
    """
    with open("/proc/sys/kernel/ns_last_pid", "w") as last:
        last.write(str(pid - 1))
    environment = {name: value for name, value in os.environ.items() if name != FAMILY_VARIABLE}
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", UNRELATED],
        stdout=subprocess.PIPE,
        env=environment,
        start_new_session=True,
    )
    if process.pid == pid:
        assert process.stdout is not None
        return process, int(process.stdout.readline())
    process.kill()
    process.wait()
    return None


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def main() -> None:
    tag = family_tag()
    server = await trio.lowlevel.open_process(
        [sys.executable, "-I", "-S", "-c", SERVER],
        stdin=subprocess.PIPE,
        env={**os.environ, FAMILY_VARIABLE: tag},
        start_new_session=True,
    )
    unrelated: list[tuple[subprocess.Popen[bytes], int]] = []

    async def close_stdin_and_hand_the_pid_over() -> None:
        assert server.stdin is not None
        await server.stdin.aclose()
        await server.wait()  # reaped: its pid is free
        for _ in range(5):
            started = start_at(server.pid)
            if started is not None:
                unrelated.append(started)
                return

    await reclaim(
        server, tag=tag, graces=Graces(eof=2.0, term=0.5, kill=0.5), close_stdin=close_stdin_and_hand_the_pid_over
    )
    report: dict[str, object] = {"reused": bool(unrelated)}
    if unrelated:
        [(leader, child)] = unrelated
        report.update(leader_alive=alive(leader.pid), child_alive=alive(child))
        for pid in (child, leader.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        leader.wait()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    trio.run(main)
