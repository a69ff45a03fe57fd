"""The host's side of the watchdog: start it, tell it every family, notice its death, replace it (R-KILL-7).

A :class:`Watchdog` keeps one watchdog process (:mod:`.program`) alive for
as long as its host runs. Each watchdog gets a fresh Unix socket pair: the
host keeps one end, the watchdog reads the other as its stdin. The host's
end is a :class:`~wave_actors._family.registry.Listener` of the process's
family registry, attached *before* the watchdog is spawned, so the snapshot
of live families and every later change wait in the socket's buffer
whatever the watchdog's start-up time.

Writes never block the host: the socket is non-blocking, and a watchdog that
stops reading (stopped, stuck) until its buffer fills is useless as a guard,
so it is killed and replaced. Its death shows as end of file on the host's
end; the keeper then starts another at once (with a back-off only when they
keep failing to start), which receives the snapshot of what is alive now. The
families are unguarded from the death until the replacement process exists:
the host noticing the end of file, a hop to a worker thread and a fork, a few
milliseconds (``python -m benchmarks.host_death`` measures it). From the fork
on, the new watchdog holds its end of the socket, so a host that dies before
it has even started reading still leaves it the snapshot and the end of file.
The servers' parent-death signal covers the window.

Closing (:meth:`Watchdog.close`) says ``release`` and waits for the watchdog
to exit: a host that closes normally leaves no watchdog behind.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Final

import trio

from wave_actors._family.procfs import read_stat
from wave_actors._family.registry import FamilyRegistry
from wave_actors._family.tag import FAMILY_VARIABLE
from wave_actors._watchdog.subreaper import reap_if_adopted

__all__ = ["PROGRAM", "Watchdog"]

logger = logging.getLogger(__name__)

PROGRAM: Final = Path(__file__).with_name("program.py")
"""The watchdog program, run by path with ``python -I -S``."""

_CLOSE_LIMIT: Final = 5.0
_GONE_LIMIT: Final = 2.0
_POLL: Final = 0.005
_FIRST_DELAY: Final = 0.1
_MAX_DELAY: Final = 5.0


class _Connection:
    """One watchdog: the host's end of its socket and what it said about itself."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pid: int | None = None
        self.start: int | None = None
        _connections.add(self)

    def send(self, data: bytes) -> None:
        """Hand ``data`` to the watchdog without ever blocking (a registry listener)."""
        try:
            if self.sock.send(data, socket.MSG_NOSIGNAL) == len(data):
                return
        except BlockingIOError:
            pass
        except OSError:
            return  # it is dead: the keeper sees end of file and replaces it
        # Its buffer is full: it does not read (stopped, stuck), so it guards nothing.
        logger.warning("the watchdog (pid %s) stopped reading; replacing it", self.pid)
        self.kill()

    def release(self) -> None:
        """Tell the watchdog to exit without reclaiming anything, and close our end.

        The only way the host ever lets go of a watchdog: a socket closed
        without ``release`` means "the host is dead" to it, and it would reclaim
        every family the process still runs.
        """
        self.send(b"release\n")
        self.sock.close()

    def kill(self) -> None:
        if self.pid is None:
            return
        stat = read_stat(self.pid)
        if stat is not None and stat.start == self.start and not stat.zombie:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass


_connections: weakref.WeakSet[_Connection] = weakref.WeakSet()


def _close_in_child() -> None:
    """After ``os.fork()``, in the child: let go of every watchdog socket, silently.

    A forked child (a ``multiprocessing`` worker, say) holding the host's end
    would keep the socket open after the host died, and the watchdog would
    wait for the child instead of reclaiming. Only our copy of the descriptor
    closes; the parent's stays, and nothing is sent.
    """
    for connection in list(_connections):
        try:
            os.close(connection.sock.detach())
        except OSError:
            continue


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


class Watchdog:
    """Keeps one watchdog process running for a host, replaced whenever it dies.

    :param registry: the families to tell it about.
    """

    def __init__(self, registry: FamilyRegistry) -> None:
        self._registry = registry
        self._connection: _Connection | None = None
        self._replacements = 0
        self._closing = False
        self._done = trio.Event()
        # The host's teardown runs inside whatever cancelled it (a signal, an error):
        # the watchdog must keep guarding until every family is reclaimed, so only
        # close() stops it.
        self._scope = trio.CancelScope(shield=True)

    @property
    def pid(self) -> int | None:
        """The running watchdog's pid (``None`` while one starts or is being replaced)."""
        return self._connection.pid if self._connection is not None else None

    @property
    def replacements(self) -> int:
        """How many watchdogs died and were replaced."""
        return self._replacements

    async def keep(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run watchdogs one after the other until :meth:`close`; started once the first is forked (or failed)."""
        try:
            with self._scope:
                await self._keep(task_status)
        finally:
            self._done.set()

    async def _keep(self, task_status: trio.TaskStatus[None]) -> None:
        delay = _FIRST_DELAY
        failures = 0  # watchdogs in a row that could not be started or died before saying ready
        dead: _Connection | None = None  # the last one that died, once its replacement runs
        while not self._closing:
            try:
                connection = await self._spawn()
            except OSError as error:
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                failures += 1
                logger.warning("cannot start the watchdog (%s)", error)
            else:
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                if dead is not None:
                    await self._wait_gone(dead)  # only now: the replacement came first
                    dead = None
                await self._watch(connection)
                if self._closing:
                    with trio.CancelScope(shield=True):
                        await self._wait_gone(connection)
                    return
                self._replacements += 1
                logger.warning("the watchdog (pid %s) is gone; starting another", connection.pid)
                failures = 0 if connection.pid is not None else failures + 1
                dead = connection
            # Every moment without a watchdog is one a host's death would leave its families to
            # the parent-death signal alone: the next one starts at once. Only watchdogs that
            # keep failing to start are retried with a back-off, so a broken one does not spin.
            if failures < 2:
                delay = _FIRST_DELAY
                continue
            logger.warning("retrying in %.1f s", delay)
            await trio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    async def close(self) -> None:
        """Release the watchdog (it exits without touching anything) and wait until it is gone.

        Call it once every family has been reclaimed. Shielded and bounded by the caller.
        """
        self._closing = True
        connection = self._connection
        if connection is None:
            self._scope.cancel()  # between two watchdogs: nothing to release
        else:
            connection.send(b"release\n")
        with trio.move_on_after(_CLOSE_LIMIT):
            await self._done.wait()
        if not self._done.is_set():
            if connection is not None:
                logger.warning("the watchdog (pid %s) did not exit when released; killing it", connection.pid)
                connection.kill()
            self._scope.cancel()

    async def _spawn(self) -> _Connection:
        host_end, watchdog_end = socket.socketpair()
        host_end.setblocking(False)
        connection = _Connection(host_end)
        self._registry.attach(connection)  # before the spawn: nothing registered meanwhile is missed
        try:
            with watchdog_end:
                process = await trio.lowlevel.open_process(
                    [
                        sys.executable,
                        "-I",
                        "-S",
                        str(PROGRAM),
                        "--host",
                        str(os.getpid()),
                        "--variable",
                        FAMILY_VARIABLE,
                    ],
                    stdin=watchdog_end.fileno(),
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,  # no terminal's Ctrl-C or hangup, no killpg of ours, reaches it
                )
        except BaseException:
            self._registry.detach(connection)
            connection.release()
            raise
        self._connection = connection
        # It exits once it has forked the watchdog proper (a few milliseconds): collected
        # here, so the host's tree holds no watchdog process once the host is open.
        with trio.CancelScope(shield=True), trio.move_on_after(_GONE_LIMIT):
            await process.wait()
        if process.returncode != 0:
            logger.warning("the watchdog did not start (exit status %s)", process.returncode)
        return connection

    async def _watch(self, connection: _Connection) -> None:
        """Until the watchdog is gone: read its pid, wait for end of file."""
        try:
            pending = b""
            while True:
                await trio.lowlevel.wait_readable(connection.sock)
                try:
                    data = connection.sock.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    break
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    words = line.split()
                    if len(words) == 3 and words[0] == b"ready":
                        connection.pid, connection.start = int(words[1]), int(words[2])
        finally:
            self._registry.detach(connection)
            if self._connection is connection:
                self._connection = None
            if connection.sock.fileno() >= 0 and not self._closing:
                connection.release()  # cancelled while it lives: it must not take this for our death
            connection.sock.close()

    async def _wait_gone(self, connection: _Connection) -> None:
        """Until the watchdog's process has exited; collected here if it was re-parented to us (a subreaper)."""
        if connection.pid is None:
            return
        with trio.move_on_after(_GONE_LIMIT):
            while True:
                stat = read_stat(connection.pid)
                if stat is None or stat.start != connection.start:
                    return
                if stat.zombie:
                    reap_if_adopted(connection.pid, connection.start)
                    return
                await trio.sleep(_POLL)
