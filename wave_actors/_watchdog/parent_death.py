"""Spawning a stdio server that the kernel signals when its host dies (``PR_SET_PDEATHSIG``, R-KILL-7).

The child asks for SIGTERM on its parent's death between fork and exec, and
the request survives the exec. SIGTERM, not SIGKILL: a server that forwards
it (``npx``, shells, supervisors) takes its own children down with it, and
the watchdog follows with SIGKILL where it does not.

.. note:: The "parent" of ``PR_SET_PDEATHSIG`` is the *thread* that forked,
   not the process: the signal fires when that thread exits, even though the
   process lives on. ``trio.lowlevel.open_process`` forks in one of trio's
   cached worker threads (``trio.to_thread.run_sync(subprocess.Popen, ...)``
   in trio 0.35), and an idle worker thread exits after 10 s -- every server
   it spawned would get SIGTERM ten seconds later. So servers are forked here
   by one thread of our own that lives as long as the process and does
   nothing else, and the result is wrapped into a :class:`trio.Process` as
   ``open_process`` would (the same pipes, trio's ``Process`` constructor).

The price: the request is code run in the child before exec, so Python
forks instead of using ``vfork`` -- some 5 to 8 ms more per server start in
a 75 MB host, next to the tens or hundreds of milliseconds a server takes
to start. (An exec helper such as ``setpriv --pdeathsig`` would avoid it, at
the cost of an outside binary and of "command not found" becoming an exit
status instead of an ``OSError``.)

Where any of that is unavailable (not Linux; a trio without the constructor)
:func:`open_server_process` is ``trio.lowlevel.open_process`` and nothing
else changes: the watchdog still guards the family.
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import trio

from wave_actors._watchdog.linux import PR_SET_PDEATHSIG, PRCTL_AVAILABLE, prctl

__all__ = ["PARENT_DEATH_SIGNAL", "open_server_process", "parent_death_signal_available"]

PARENT_DEATH_SIGNAL: Final = signal.SIGTERM
"""What a server receives when its host dies."""


_AVAILABLE: Final = PRCTL_AVAILABLE and hasattr(trio.Process, "_create")


def parent_death_signal_available() -> bool:
    """Whether servers are spawned with a parent-death signal here."""
    return _AVAILABLE


def _ask_for_parent_death_signal(host: int) -> None:
    """In the child, after fork and before exec: signal me when my parent thread dies."""
    prctl(PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL)
    # The host may have died between fork and prctl: then no signal would ever come.
    if os.getppid() != host:
        os._exit(1)


class _Spawner:
    """One long-lived daemon thread that forks every server (see the module's note)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="wave-actors-spawner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()  # each job catches its own errors: this thread must never end

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _the_spawner() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        return _spawner


def _forget_spawner_in_child() -> None:
    """After ``os.fork()``, in the child: the spawner thread was not copied; the next spawn starts one."""
    global _spawner, _spawner_lock
    _spawner = None
    _spawner_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawner_in_child)


async def open_server_process(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None) -> trio.Process:
    """Start a server in a session of its own, on pipes, with a parent-death signal where available.

    :param argv: the command line.
    :param env: its whole environment.
    :param cwd: its working directory (``None``: ours).
    :raises OSError: it cannot be started.
    """
    if not parent_death_signal_available():
        return await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    child_ends = (stdin_read, stdout_write, stderr_write)
    our_ends = (stdin_write, stdout_read, stderr_read)
    spawn = functools.partial(
        subprocess.Popen,
        list(argv),
        stdin=stdin_read,
        stdout=stdout_write,
        stderr=stderr_write,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        preexec_fn=functools.partial(_ask_for_parent_death_signal, os.getpid()),
    )
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    spawned: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def job() -> None:
        try:
            spawned.append(spawn())
        except BaseException as error:  # handed to the waiting task, which raises it
            failed.append(error)
        token.run_sync_soon(done.set)  # the waiter is shielded: its run is still there

    try:
        _the_spawner().submit(job)
        # Like open_process: a spawn cannot be cancelled halfway; a cancelled caller
        # gets the process and reclaims it at its next checkpoint.
        with trio.CancelScope(shield=True):
            await done.wait()
    finally:
        for fd in child_ends:
            os.close(fd)
    if failed:
        for fd in our_ends:
            os.close(fd)
        raise failed[0]
    return trio.Process._create(  # pyright: ignore[reportPrivateUsage]  # the constructor open_process uses
        spawned[0],
        trio.lowlevel.FdStream(stdin_write),
        trio.lowlevel.FdStream(stdout_read),
        trio.lowlevel.FdStream(stderr_read),
    )
