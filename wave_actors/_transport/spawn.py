"""Spawning a stdio server: its own session, on pipes, with a parent-death signal where available (R-KILL-7).

What the signal is, and how a server asks for it (``setpriv --pdeathsig``,
or ``prctl`` between fork and exec), is the family's:
:mod:`wave_actors._family.parent_death`. This module runs the spawn.

.. note:: The "parent" of ``PR_SET_PDEATHSIG`` is the *thread* that spawned,
   not the process: the signal fires when that thread exits, even though the
   process lives on. ``trio.lowlevel.open_process`` spawns in one of trio's
   cached worker threads (``trio.to_thread.run_sync(subprocess.Popen, ...)``
   in trio 0.35), and an idle worker thread exits after 10 s -- every server
   it spawned would get SIGTERM ten seconds later. So servers are spawned
   here by a few threads of our own (:data:`_SPAWNER_THREADS`, started as
   needed) that live as long as the process and do nothing else, and the
   result is wrapped into a :class:`trio.Process` as ``open_process`` would
   (the same pipes, trio's ``Process`` constructor).

``setpriv`` reports a command it cannot run only as an exit status, so the
command is looked up first as ``exec`` would (:func:`check_command`), and a
missing or non-executable command still fails with the ``OSError`` the
spawn would have raised. Two differences remain, both harmless: a file that
is executable but no program is handed to ``/bin/sh`` by ``setpriv``'s
``execvp`` (Python's exec fails with ``ENOEXEC``), and a host killed within
the millisecond between the spawn and ``setpriv``'s ``prctl`` leaves that
server without the signal -- the watchdog, told of the family before the
spawn, still reclaims it.

Without a usable ``setpriv`` the request is the ``preexec_fn`` fork, with a
check that the host did not die between the fork and the ``prctl``.

Where the family has a cgroup of its own (R-KILL-10,
:mod:`wave_actors._family.cgroup`), the new process enters it before the
server runs: through ``setpriv`` the command line is ``setpriv --pdeathsig
SIGTERM -- sh -c ENTER cgroup.procs COMMAND...`` (``sh`` of the system's
own, found with ``setpriv``; it moves itself into the cgroup and execs the
command, same pid), in a forked child Python code writes to ``cgroup.procs``
after the ``prctl``. Without a trusted ``sh`` such a server is forked.

Either way the spawner thread reports the server's pid (``on_spawned``; the
stdio transport tells the family registry,
:meth:`~wave_actors._family.registry.FamilyRegistry.started`) as soon as it
has it: the watchdog learns the root before the event loop even resumes,
and the event loop makes none of those system calls (``/proc``, the
watchdog's socket), each of which cost it a wait for the GIL while the
spawner threads ran -- 12 ms per 20 dials.

Where the signal is unavailable (not Linux; a trio without the constructor)
:func:`open_server_process` is ``trio.lowlevel.open_process`` and nothing
else changes: the watchdog still guards the family.

The only caller is :func:`~wave_actors._transport.stdio.open_stdio_transport`.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs
import trio

from wave_actors._family.cgroup import enter_cgroup, entering_argv
from wave_actors._family.parent_death import (
    ask_for_parent_death_signal,
    find_setpriv,
    parent_death_signal_available,
    setpriv_argv,
)
from wave_actors._family.system_program import trusted_system_program

__all__ = ["check_command", "open_server_process"]

logger = logging.getLogger(__name__)

# Spawner threads at most. One spawns 20 servers one after the other, each
# waiting for the GIL at every system call while the event loop is busy with
# the servers already up; four overlap those waits. An idle one costs ~28 KiB.
_SPAWNER_THREADS: Final = 4


def check_command(command: str, env: Mapping[str, str], cwd: str | None) -> None:
    """Raise the ``OSError`` that exec'ing ``command`` would, before handing it to ``setpriv``.

    The lookup of :mod:`subprocess` (and of ``execvp``): a command with a
    slash is itself, relative to ``cwd``; a bare name is searched in the
    entry's ``PATH`` (``os.defpath`` without one).

    :raises FileNotFoundError: nothing by that name.
    :raises PermissionError: only something that cannot be executed (a directory, no execute bit).
    """
    if os.path.dirname(command):
        candidates = [command]
    else:
        candidates = [os.path.join(directory, command) for directory in os.get_exec_path(dict(env))]
    denied = False
    for candidate in candidates:
        path = os.path.join(cwd, candidate) if cwd is not None else candidate
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return
        denied = denied or os.path.exists(path)
    code = errno.EACCES if denied else errno.ENOENT
    raise (PermissionError if denied else FileNotFoundError)(code, os.strerror(code), command)


@attrs.frozen
class _Programs:
    """What a spawn may run besides the server, found once (both the system's own, or ``None``).

    :param setpriv: ``setpriv`` with ``--pdeathsig``; ``None``: the spawn forks.
    :param sh: ``sh``, which moves a server into its cgroup on the way; ``None``:
        a server with a cgroup is forked.
    """

    setpriv: str | None = None
    sh: str | None = None


_Job = Callable[[_Programs], None]


class _Spawner:
    """Long-lived daemon threads that spawn every server (see the module's note).

    A thread is started whenever a job finds none idle, up to ``most``; none
    ever ends. The first one looks for ``setpriv`` and ``sh`` before taking a
    job, and each job is handed what it found.
    """

    def __init__(self, find: Callable[[], str | None], most: int) -> None:
        self._find = find
        self._most = most
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job and not yet promised one
        self._found = threading.Event()
        self._programs = _Programs()
        self.threads: list[threading.Thread] = []

    def _serve(self, first: bool) -> None:
        if first:
            try:
                setpriv = self._find()
                self._programs = _Programs(setpriv, trusted_system_program("sh") if setpriv is not None else None)
            except Exception:  # this thread must never end; forking always works
                self._programs = _Programs()
            self._found.set()
        self._found.wait()
        programs = self._programs
        while True:
            self._jobs.get()(programs)  # each job catches its own errors: this thread must never end
            with self._lock:
                self._idle += 1

    def submit(self, job: _Job) -> None:
        thread: threading.Thread | None = None
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self.threads) < self._most:
                number = len(self.threads) + 1
                thread = threading.Thread(target=self._serve, args=(number == 1,), name=f"wave-actors-spawner-{number}")
                thread.daemon = True
                self.threads.append(thread)
            # else every thread is busy: the job waits for the first one free
        if thread is not None:
            thread.start()
        self._jobs.put(job)


def _prepare_child(host: int, cgroup: str | None) -> None:
    """In a forked child, before exec: the parent-death signal, then the family's cgroup if it has one."""
    ask_for_parent_death_signal(host)
    if cgroup is not None:
        enter_cgroup(cgroup)


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _the_spawner() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner(find_setpriv, _SPAWNER_THREADS)
        return _spawner


def _forget_spawner_in_child() -> None:
    """After ``os.fork()``, in the child: the spawner thread was not copied; the next spawn starts one."""
    global _spawner, _spawner_lock
    _spawner = None
    _spawner_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawner_in_child)


def _three_pipes() -> tuple[int, int, int, int, int, int]:
    """Three pipes' ends, read then write each; none left open if one cannot be made (out of descriptors)."""
    ends: list[int] = []
    try:
        for _ in range(3):
            ends.extend(os.pipe())
    except OSError:
        for fd in ends:
            os.close(fd)
        raise
    return ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]


async def open_server_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    on_spawned: Callable[[int], None] | None = None,
    cgroup: str | None = None,
) -> trio.Process:
    """Start a server in a session of its own, on pipes, with a parent-death signal where available.

    :param argv: the command line.
    :param env: its whole environment.
    :param cwd: its working directory (``None``: ours).
    :param on_spawned: called with the server's pid by the spawner thread, as
        soon as it has it, where the signal is available (otherwise not at
        all: the caller reports the pid itself once this returns). It runs
        outside trio, and what it raises is logged and dropped.
    :param cgroup: the family's cgroup, which the new process enters before
        the server runs (only where the signal is available: the caller
        gives none elsewhere).
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
    stdin_read, stdin_write, stdout_read, stdout_write, stderr_read, stderr_write = _three_pipes()
    child_ends = (stdin_read, stdout_write, stderr_write)
    our_ends = (stdin_write, stdout_read, stderr_read)
    environment = dict(env)
    popen = functools.partial(
        subprocess.Popen,
        stdin=stdin_read,
        stdout=stdout_write,
        stderr=stderr_write,
        env=environment,
        cwd=cwd,
        start_new_session=True,
    )
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    spawned: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def job(programs: _Programs) -> None:
        try:
            if programs.setpriv is None or (cgroup is not None and programs.sh is None):
                prepare = functools.partial(_prepare_child, os.getpid(), cgroup)
                spawned.append(popen(list(argv), preexec_fn=prepare))
            else:
                check_command(argv[0], environment, cwd)
                command = (
                    list(argv) if cgroup is None or programs.sh is None else entering_argv(programs.sh, cgroup, argv)
                )
                spawned.append(popen(setpriv_argv(programs.setpriv, command)))
        except BaseException as error:  # handed to the waiting task, which raises it
            failed.append(error)
        else:
            # Told from here, at once: the event loop makes no system call for it (reading
            # /proc, writing to the watchdog), and waits for no GIL after each. The
            # transport says it again, so a failure here loses nothing.
            try:
                if on_spawned is not None:
                    on_spawned(spawned[0].pid)
            except Exception:  # this thread must never end, and the waiter must be woken
                logger.debug("could not report the spawn of pid %d", spawned[0].pid, exc_info=True)
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
