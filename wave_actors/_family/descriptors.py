"""The process's file descriptors: how many are in use, the limit, and the words for running out of them.

A connected stdio server holds :data:`STDIO_SERVER_DESCRIPTORS` of the
host's descriptors: the three pipes (our ends of stdin, stdout and stderr),
trio's pidfd for its exit, and the epoll of
:class:`~wave_actors._transport.stdout.ServerOutput` with a pidfd of its own,
which let one wait in the SDK's reading task drain stdout and stderr and
notice the exit, so the connection needs no task of its own. An HTTP or SSE
server holds one socket per open connection of its client.

The library never raises the limit behind the host's back: how many
descriptors a process may hold is the host's decision (``ulimit -n`` in the
shell that starts it, or ``resource.setrlimit(resource.RLIMIT_NOFILE, ...)``
as it starts, up to the hard limit). What it does is fail the one dial that
found none left with an error saying so, with the count, the limit and what
to do (:func:`exhausted_message`), while every other connection carries on;
and show the headroom (:func:`file_descriptors`, in
:meth:`Host.orphan_protection() <wave_actors.Host.orphan_protection>`).
"""

from __future__ import annotations

import errno
import os
import resource
from typing import Final

import attrs

__all__ = ["STDIO_SERVER_DESCRIPTORS", "FileDescriptors", "exhausted_message", "file_descriptors", "out_of_descriptors"]

STDIO_SERVER_DESCRIPTORS: Final = 6
"""File descriptors a connected stdio server holds in the host (Linux): three pipes, two pidfds, one epoll."""

_LISTING: Final = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"


@attrs.frozen
class FileDescriptors:
    """The host process's file descriptors now: how many are open, and how many it may open.

    :param in_use: descriptors open now; ``None`` where they cannot be counted.
    :param soft_limit: ``RLIMIT_NOFILE``'s soft limit (``ulimit -n``); ``None`` for unlimited.
    :param hard_limit: the most the soft limit may be raised to without privileges; ``None`` for unlimited.
    """

    in_use: int | None
    soft_limit: int | None
    hard_limit: int | None

    @property
    def headroom(self) -> int | None:
        """Descriptors that may still be opened; ``None`` when unknown or unlimited."""
        if self.in_use is None or self.soft_limit is None:
            return None
        return max(0, self.soft_limit - self.in_use)

    @property
    def stdio_servers_left(self) -> int | None:
        """How many more stdio servers could be connected before the limit (:data:`STDIO_SERVER_DESCRIPTORS` each)."""
        headroom = self.headroom
        return None if headroom is None else headroom // STDIO_SERVER_DESCRIPTORS


def _limit(value: int) -> int | None:
    return None if value == resource.RLIM_INFINITY else value


def file_descriptors() -> FileDescriptors:
    """Count the process's open descriptors and read its limits (a directory listing: not for a hot path)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        in_use: int | None = len(os.listdir(_LISTING)) - 1  # the listing's own descriptor
    except OSError as error:
        # No descriptor left even to list them: every one is in use.
        in_use = _limit(soft) if error.errno == errno.EMFILE else None
    return FileDescriptors(in_use, _limit(soft), _limit(hard))


def out_of_descriptors(error: BaseException) -> OSError | None:
    """The ``EMFILE`` or ``ENFILE`` error behind ``error`` (itself, its cause or context), if that is what it was."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            return current
        current = current.__cause__ or current.__context__
    return None


def exhausted_message(error: OSError) -> str:
    """What to tell a host whose dial found no descriptor left: the count, the limit, and what to do."""
    if error.errno == errno.ENFILE:
        return (
            "the system's table of open files is full (ENFILE; see /proc/sys/fs/file-max): "
            "end sessions, or raise fs.file-max; the other connections carry on"
        )
    usage = file_descriptors()
    soft = "unlimited" if usage.soft_limit is None else str(usage.soft_limit)
    hard = "unlimited" if usage.hard_limit is None else str(usage.hard_limit)
    in_use = "?" if usage.in_use is None else str(usage.in_use)
    return (
        f"this process has run out of file descriptors: {in_use} in use, its limit is {soft} "
        f"(RLIMIT_NOFILE, `ulimit -n`; hard limit {hard}); each connected stdio server holds "
        f"{STDIO_SERVER_DESCRIPTORS}, and its spawn a few more for a moment. Raise the limit before the host starts (`ulimit -n N` in the shell "
        "that starts it, or resource.setrlimit(resource.RLIMIT_NOFILE, (N, hard)) at its start; "
        "the library never changes it), or end sessions; the other connections carry on"
    )
