"""The stdio transport: spawn a server without a shell and speak MCP on its pipes.

We spawn the process ourselves instead of using the SDK's ``stdio_client``
because reclamation is the point of this library (R-KILL-1, R-KILL-2): the SDK
kills the process group but not ``setsid`` descendants, waits a fixed 2 s
after stdin EOF even when the dial was cancelled, and writes stderr to a file
object instead of a bounded log. Here the family is tagged at spawn
(:data:`~wave_actors._family.tag.FAMILY_VARIABLE`) and reclaimed by
:func:`~wave_actors._transport.reclamation.reclaim` with configurable graces.

Protocol on stdout, one JSON-RPC message per line; logs on stderr, never
parsed (R-CFG-9). The only caller is
:func:`~wave_actors._transport.dial.open_connection`.

No task of its own while the connection lives. Every connected server used
to cost four (a stdout reader, a stdin writer, a stderr reader, an exit
watcher) and a hop through a memory channel each way; now:

- :class:`~.stdout.ServerOutput` is the SDK's read stream, and reads the
  pipes in the task that asks it for the next message (the SDK's receive
  loop); :mod:`.framing` cuts stdout into lines. On Linux it waits on one
  ``epoll`` holding stdout, stderr and a pidfd, so the same wait also keeps
  stderr drained and notices the exit. Elsewhere two small tasks of this
  transport's read stderr and wait for the exit.
- :class:`~.stdin.StdinWriter` is the SDK's write stream, and writes each
  message in the sender's own task, whole; a task of this transport's
  finishes a message the pipe could not take at once.

When the connection closes, a drain task keeps reading both pipes until the
process family is reclaimed, so a server flushing on its way out is never
blocked by a full pipe.

If the host itself dies, two more defences hold (R-KILL-7): the server is
spawned with a parent-death signal (:mod:`.spawn` says why that needs a
thread of its own under trio), and the family is registered, from before the
spawn until after its reclamation, with the process's family registry
(:mod:`wave_actors._family.registry`), which tells the host's watchdog.

While a host of the process has cgroups in force (R-KILL-10,
:mod:`wave_actors._family.cgroup`), each family gets a cgroup of its own,
made before the spawn and entered by the server before it runs; its
reclamation ends with ``cgroup.kill``, and the cgroup is removed with the
family.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Final

import attrs
import trio

from wave_actors._config import ServerConfig
from wave_actors._errors import DialError
from wave_actors._family.cgroup import cgroups_in_force, make_family_cgroup, prime_migration, remove_family_cgroup
from wave_actors._family.graces import Graces
from wave_actors._family.registry import registry as families
from wave_actors._family.tag import FAMILY_VARIABLE, family_tag
from wave_actors._transport.failures import spawn_error
from wave_actors._transport.proctree import process_start
from wave_actors._transport.reclamation import reclaim
from wave_actors._transport.spawn import open_server_process
from wave_actors._transport.stderr import StderrLog
from wave_actors._transport.stdin import StdinWriter
from wave_actors._transport.stdout import ServerOutput

__all__ = ["StdioProcess", "open_stdio_transport"]

logger = logging.getLogger(__name__)

_FLUSH_WINDOW: Final = 0.25


@attrs.define(eq=False)
class StdioProcess:
    """What the stdio transport knows about its server process.

    :param pid: the server's pid (also its session and process-group id).
    :param stderr: the bounded log of its stderr.
    :param established: set once the MCP handshake completed; a transport that
        was never established is reclaimed without the polite stdin-EOF stage.
    """

    pid: int
    stderr: StderrLog
    _process: trio.Process = attrs.field(alias="process")
    established: bool = False

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (negative: killed by that signal)."""
        return self._process.poll()


def _environment(config: ServerConfig, tag: str) -> dict[str, str]:
    # A function of its own: the copy of the environment is gone once the process is
    # spawned, instead of living in the transport's frame as long as the connection.
    return {**os.environ, **config.env, FAMILY_VARIABLE: tag}


def _family_cgroup(tag: str) -> str | None:
    """A cgroup for the family tagged ``tag``, while a host of the process has them in force (R-KILL-10)."""
    directory = cgroups_in_force()
    if directory is None:
        return None
    try:
        cgroup = make_family_cgroup(directory, tag)  # a mkdir on the cgroup file system: microseconds
    except OSError as error:
        logger.warning("no cgroup for a server family (%s); it is found by its tag instead", error)
        return None
    prime_migration()  # the kernel's wait for the server's move into it starts now, beside the spawn
    return cgroup


def _forget(tag: str, cgroup: str | None) -> None:
    """The family is gone (or never started): its cgroup is removed and its guards are told."""
    if cgroup is not None and not remove_family_cgroup(cgroup):
        logger.warning("the cgroup %s of a reclaimed server family could not be removed", cgroup)
    families.end(tag)


async def _close_stdin(writer: StdinWriter, stdin: trio.abc.SendStream) -> None:
    """The polite first stage of a reclaim: the messages written so far, then EOF."""
    with trio.move_on_after(_FLUSH_WINDOW):
        await writer.finish()
    await stdin.aclose()


@asynccontextmanager
async def open_stdio_transport(
    config: ServerConfig,
    *,
    graces: Graces,
    on_lost: Callable[[str], None],
    stderr_lines: int = 200,
    max_line_bytes: int = 64 * 1024 * 1024,
) -> AsyncGenerator[tuple[ServerOutput, StdinWriter, StdioProcess, trio.Nursery], None]:
    """Spawn ``config``'s command and yield MCP streams over its pipes: ``(read, write, process, nursery)``.

    The nursery is the transport's own: a task that writes to the server (the
    answers to its requests) runs there, and is cancelled at the latest once
    the family is reclaimed.

    On exit, whatever the reason (including cancellation), the process family
    is reclaimed before this returns.

    :param config: a stdio server entry.
    :param graces: reclamation stage lengths.
    :param on_lost: called once the connection is gone by itself (process exit,
        stdout closed, stdin broken), with a reason naming the exit status.
    :param stderr_lines: lines of stderr to keep.
    :param max_line_bytes: longest accepted protocol line; a longer one is
        skipped unread and fails the request it answered (R-TOOL-12).
    :raises DialError: the command cannot be started.
    """
    if not config.command:
        raise DialError(f"server {config.name!r}: stdio entry has no command")
    tag = family_tag()
    cgroup = _family_cgroup(tag)
    # Registered before it exists: a host killed during the spawn still leaves a
    # family its watchdog knows by tag (R-KILL-7), and by cgroup (R-KILL-10).
    families.begin(tag, graces, cgroup)
    try:
        process = await open_server_process(
            [config.command, *config.args],
            env=_environment(config, tag),
            cwd=config.cwd,
            on_spawned=functools.partial(families.started, tag),
            cgroup=cgroup,
        )
    except OSError as exc:
        _forget(tag, cgroup)
        raise spawn_error(exc, server=config.name, command=config.command) from exc
    except BaseException:
        _forget(tag, cgroup)
        raise
    families.started(tag, process.pid)
    start = process_start(process.pid)  # not waited for yet: the pid is our child's (pid reuse, R-KILL-1)
    # From here on every path must reach the reclaim in the ``finally`` below.
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdin, stdout, stderr_pipe = process.stdin, process.stdout, process.stderr
    handle = StdioProcess(pid=process.pid, stderr=StderrLog(stderr_lines), process=process)
    output: ServerOutput | None = None
    writer: StdinWriter | None = None
    try:
        output = ServerOutput(
            server=config.name,
            process=process,
            stderr_log=handle.stderr,
            on_lost=on_lost,
            max_line_bytes=max_line_bytes,
        )
        async with trio.open_nursery() as nursery:
            writer = stdin_writer = StdinWriter(server=config.name, process=process, output=output, nursery=nursery)
            if output.needs_helpers:
                nursery.start_soon(output.read_stderr)
                nursery.start_soon(output.watch_exit)

            try:
                yield output, stdin_writer, handle, nursery
            finally:
                # Nobody reads the session streams any more; the pipes are drained.
                nursery.start_soon(output.drain)
                await reclaim(
                    process,
                    tag=tag,
                    graces=graces,
                    close_stdin=functools.partial(_close_stdin, stdin_writer, stdin) if handle.established else None,
                    start=start,
                    cgroup=cgroup,
                )
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            try:
                # Reached without the nursery only if it failed to open; reclaim is idempotent.
                if process.poll() is None:
                    await reclaim(process, tag=tag, graces=graces, close_stdin=None, start=start, cgroup=cgroup)
                if writer is not None:
                    writer.refuse_more()  # its file descriptor is about to be closed
                for resource in (stdin, stdout, stderr_pipe):
                    await resource.aclose()
            finally:
                if output is not None:
                    output.release()
                _forget(tag, cgroup)
