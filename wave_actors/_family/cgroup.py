"""A cgroup of its own for each server family, ended with ``cgroup.kill`` (Linux cgroup v2, R-KILL-10).

The three marks of :mod:`wave_actors._transport.proctree` (descent, session,
tag) cover what a server does by accident. A daemon that detaches on purpose
(``setsid``, a double fork, an empty environment) leaves all three behind. A
cgroup it cannot leave: every process a member forks is born in the member's
cgroup, and only a process allowed to write another cgroup's ``cgroup.procs``
can move out. Writing ``1`` to ``cgroup.kill`` (Linux 5.14) sends SIGKILL to
every process in it at once, newcomers included. This is the model systemd
trusts for its services (``KillMode=control-group``).

Where, and whether:

- The cgroup v2 hierarchy is found, never assumed: the ``cgroup2`` line of
  ``/proc/self/mountinfo`` (on a hybrid layout, the ``unified`` mount) and
  this process's own cgroup, the ``0::`` line of ``/proc/self/cgroup``.
- :func:`probe` makes a directory there, checks that it has ``cgroup.kill``
  and that its ``cgroup.procs`` and our own cgroup's can be written (a
  process moves between two cgroups only with write access to both and to
  their common ancestor: ours), then removes it. That holds for root, and
  for a user to whom systemd delegated the cgroup (``Delegate=yes``).
  Anything else is a reason, and the tags stay in force.
- :func:`acquire` (once per host, :func:`release` when it closes) makes
  ``<own cgroup>/wave-actors-<pid>-<start>``, the process's directory, and
  removes the directories of processes that are gone (empty ones only).
  While a host holds it, :func:`cgroups_in_force` names it, and every stdio
  server spawned by the process gets ``<that>/<family tag>``.

How a server enters its cgroup before it runs anything: the new process
moves itself (writing ``0`` to ``cgroup.procs`` moves the writer) and then
execs the server, so the server and everything it ever starts are inside
from their first instruction. Through ``setpriv`` the mover is ``sh``
(:func:`entering_argv`; a ``sh`` of the system's own, see
:mod:`.system_program`); in a forked child it is Python code
(:func:`enter_cgroup`). A process that cannot enter exits with status 126
and a line on stderr instead of running uncontained.

Entering costs the server a wait nobody sees in its CPU time: a move
between cgroups takes the kernel's cgroup migration lock, and the first
writer after a quiet spell waits an RCU grace period for it (milliseconds on
an idle machine; a median of 11 ms, 20 at the 90th percentile, on a loaded
2-core one), while a move soon after another finds the lock ready. So when a
family's cgroup is made, :func:`prime_migration` has a thread of this
module's take that wait at once, moving this process into the cgroup it is
already in (nothing moves): the grace period then runs while the spawn and
``setpriv`` and ``sh`` start, not after them. Where the write is refused the
server waits as before; nothing else changes.

The rest is small blocking file operations on the family's directory:
:func:`make_family_cgroup`, :func:`cgroup_members`, :func:`cgroup_populated`,
:func:`kill_cgroup`, :func:`remove_family_cgroup`. The stdio transport's
reclamation and the watchdog program use them; the watchdog loads this
module by path, so it uses the standard library only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Final

from wave_actors._family.procfs import LINUX, read_stat

__all__ = [
    "ENTER_FAILED",
    "acquire",
    "cgroup_members",
    "cgroup_populated",
    "cgroups_in_force",
    "enter_cgroup",
    "entering_argv",
    "kill_cgroup",
    "locate_cgroup",
    "make_family_cgroup",
    "own_cgroup",
    "prime_migration",
    "prime_once",
    "probe",
    "release",
    "remove_family_cgroup",
]

ENTER_FAILED: Final = 126
"""The exit status of a spawned process that could not enter its family's cgroup."""

_PREFIX: Final = "wave-actors-"
# $0 is the cgroup.procs file, "$@" the server's command line. A process that cannot enter runs nothing.
_ENTER_SCRIPT: Final = (
    'echo 0 >"$0" 2>/dev/null || { echo "wave-actors: cannot enter the cgroup of $0" >&2; exit '
    + str(ENTER_FAILED)
    + '; }; exec "$@"'
)

_lock = threading.Lock()
_users = 0
_directory: str | None = None


def _unescape(field: str) -> str:
    """A path of ``/proc/self/mountinfo``, whose spaces, tabs, newlines and backslashes are octal escapes."""
    if "\\" not in field:
        return field
    out: list[str] = []
    index = 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as file:
            return file.read()
    except OSError:
        return None


def own_cgroup() -> tuple[str | None, str]:
    """This process's cgroup directory in the cgroup v2 hierarchy, or ``None`` and why not.

    :returns: ``(directory, "")`` or ``(None, reason)``.
    """
    if not LINUX:
        return None, "cgroups are Linux's"
    cgroups = _read_text("/proc/self/cgroup")
    if cgroups is None:
        return None, "/proc/self/cgroup cannot be read"
    mounts = _read_text("/proc/self/mountinfo")
    if mounts is None:
        return None, "/proc/self/mountinfo cannot be read"
    return locate_cgroup(cgroups, mounts)


def locate_cgroup(cgroups: str, mounts: str) -> tuple[str | None, str]:
    """Where the cgroup named in ``cgroups`` is mounted, from ``mounts``; or ``None`` and why not.

    :param cgroups: the text of ``/proc/PID/cgroup`` (the ``0::`` line names the v2 cgroup).
    :param mounts: the text of ``/proc/PID/mountinfo`` (a ``cgroup2`` line holding it).
    :returns: ``(directory, "")`` or ``(None, reason)``.
    """
    path = next((line[3:] for line in cgroups.splitlines() if line.startswith("0::")), None)
    if path is None:
        return None, "this process is in no cgroup v2 hierarchy"
    if path.endswith(" (deleted)") or not path.startswith("/"):
        return None, f"this process's cgroup {path!r} cannot be placed"
    for line in mounts.splitlines():
        before, separator, after = line.partition(" - ")
        fields, kind = before.split(" "), after.split(" ")
        if not separator or len(fields) < 5 or kind[0] != "cgroup2":
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        if path == root or path.startswith(root.rstrip("/") + "/"):
            relative = path[len(root.rstrip("/")) :].lstrip("/")
            return os.path.join(mount_point, relative) if relative else mount_point, ""
    return None, "no cgroup2 file system holding this process's cgroup is mounted here"


def _usable(directory: str) -> str:
    """Why families cannot be placed under ``directory`` (an existing cgroup of ours), or ``""``."""
    if not os.path.exists(os.path.join(directory, "cgroup.kill")):
        return "cgroup.kill is missing (Linux 5.14 or later has it)"
    if not os.access(os.path.join(directory, "cgroup.procs"), os.W_OK):
        return f"{directory}/cgroup.procs cannot be written"
    return ""


def probe() -> tuple[str | None, str]:
    """Whether families can have cgroups here: ``(own cgroup directory, "")`` or ``(None, reason)`` (blocking).

    Makes a directory in this process's cgroup and removes it again; starts
    nothing. What :func:`acquire` would find, without holding anything.
    """
    own, reason = own_cgroup()
    if own is None:
        return None, reason
    if "\n" in own:
        return None, f"the cgroup path {own!r} holds a line break"
    if not os.access(os.path.join(own, "cgroup.procs"), os.W_OK):
        return None, f"this process may not move processes out of its cgroup {own}"
    trial = os.path.join(own, f"{_PREFIX}probe-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(trial)
    except OSError as error:
        return None, f"no cgroup can be made in {own} ({error.strerror or error})"
    try:
        reason = _usable(trial)
    finally:
        _remove(trial)
    return (None, reason) if reason else (own, "")


def _identity(pid: int) -> str | None:
    stat = read_stat(pid)
    return None if stat is None else f"{pid}-{stat.start}"


def _sweep(own: str) -> None:
    """Remove the empty directories of processes that are gone (a host killed with its watchdog)."""
    try:
        names = os.listdir(own)
    except OSError:
        return
    for name in names:
        owner, _, start = name.removeprefix(_PREFIX).partition("-")
        if not name.startswith(_PREFIX) or not owner.isdigit() or not start.isdigit():
            continue
        if _identity(int(owner)) == f"{owner}-{start}":
            continue  # its process lives
        directory = os.path.join(own, name)
        try:
            families = [entry.path for entry in os.scandir(directory) if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for family in families:
            if not cgroup_populated(family):
                _remove(family)
        _remove(directory)


def acquire() -> tuple[str | None, str]:
    """Hold cgroup placement for a host; the first holder makes the process's directory (blocking).

    :returns: ``(the directory families are placed under, "")`` or ``(None, reason)``.
    """
    global _users, _directory
    with _lock:
        if _users == 0:
            own, reason = probe()
            if own is None:
                return None, reason
            identity = _identity(os.getpid())
            if identity is None:
                return None, "this process cannot read its own start time"
            _sweep(own)
            directory = os.path.join(own, _PREFIX + identity)
            try:
                os.mkdir(directory)
            except FileExistsError:
                pass
            except OSError as error:
                return None, f"no cgroup can be made in {own} ({error.strerror or error})"
            _directory = directory
        _users += 1
        return _directory, ""


def release() -> None:
    """Let go of cgroup placement; the last holder removes the process's directory once it is empty."""
    global _users, _directory
    with _lock:
        _users -= 1
        if _users == 0 and _directory is not None:
            _remove(_directory)  # fails while a family (an open_session's) still has its cgroup there
            _directory = None


def cgroups_in_force() -> str | None:
    """The directory the process's families get their cgroups in, while a host holds it; else ``None``."""
    return _directory


_located: tuple[str, str] | None = None  # the text of /proc/self/cgroup, and where that cgroup is


def _where_i_am() -> str | None:
    """This process's cgroup directory now; ``/proc/self/mountinfo`` is read again only when the cgroup changed."""
    global _located
    cgroups = _read_text("/proc/self/cgroup")
    if cgroups is None:
        return None
    if _located is not None and _located[0] == cgroups:
        return _located[1]
    own, _ = own_cgroup()
    if own is not None:
        _located = (cgroups, own)
    return own


def prime_once() -> bool:
    """Move this process into the cgroup it is in, which moves nothing and readies the migration lock (blocking).

    The cgroup is read just before, so the write never moves the host back
    where it was if something else moved it since.

    :returns: whether the kernel took the write (a refusal is harmless: the
        next move into a family's cgroup then waits for the lock itself).
    """
    own = _where_i_am()
    if own is None:
        return False
    try:
        descriptor = os.open(os.path.join(own, "cgroup.procs"), os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(descriptor, str(os.getpid()).encode())
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)


class _Primer:
    """One daemon thread that runs :func:`prime_once` when asked; asks made while it runs are one more run."""

    def __init__(self) -> None:
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def ask(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="wave-actors-cgroup-primer", daemon=True)
                self._thread.start()
        self._wanted.set()

    def _serve(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            try:
                prime_once()
            except Exception:  # this thread must never end; a server still enters without it
                pass


_primer = _Primer()


def prime_migration() -> None:
    """A server is about to enter a family's cgroup: ready the kernel's migration lock now, in a thread (non-blocking)."""
    _primer.ask()


def _forget_in_child() -> None:
    """After ``os.fork()``, in the child: it holds nothing (its parent's hosts do not run in it)."""
    global _lock, _users, _directory, _primer, _located
    _lock = threading.Lock()
    _users = 0
    _directory = None
    _primer = _Primer()
    _located = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def make_family_cgroup(directory: str, tag: str) -> str:
    """Make the cgroup of the family tagged ``tag`` under ``directory``; its path (blocking, microseconds).

    :raises OSError: it cannot be made (the family then goes without).
    """
    path = os.path.join(directory, tag)
    os.mkdir(path)
    return path


def entering_argv(sh: str, cgroup: str, argv: Sequence[str]) -> list[str]:
    """The command line that enters ``cgroup`` and then execs ``argv`` in the same process, through ``sh``."""
    return [sh, "-c", _ENTER_SCRIPT, os.path.join(cgroup, "cgroup.procs"), *argv]


def enter_cgroup(cgroup: str) -> None:
    """In a forked child, before exec: move this process into ``cgroup``, or exit with :data:`ENTER_FAILED`."""
    try:
        descriptor = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(descriptor, b"0")
        finally:
            os.close(descriptor)
    except OSError:
        os.write(2, b"wave-actors: cannot enter the cgroup of the server's family\n")
        os._exit(ENTER_FAILED)


def cgroup_members(cgroup: str) -> list[int]:
    """The pids in ``cgroup`` now (none once it is gone)."""
    text = _read_text(os.path.join(cgroup, "cgroup.procs"))
    return [int(pid) for pid in text.split()] if text else []


def cgroup_populated(cgroup: str) -> bool:
    """Whether a live process is in ``cgroup`` (a zombie is not; nor is anything in a cgroup that is gone)."""
    events = _read_text(os.path.join(cgroup, "cgroup.events"))
    return events is not None and "populated 1" in events


def kill_cgroup(cgroup: str) -> bool:
    """SIGKILL to every process in ``cgroup``, at once, newcomers included; whether the kernel took it."""
    try:
        descriptor = os.open(os.path.join(cgroup, "cgroup.kill"), os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(descriptor, b"1")
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)


def _remove(directory: str) -> bool:
    try:
        os.rmdir(directory)
        return True
    except OSError:
        return False


def remove_family_cgroup(cgroup: str) -> bool:
    """Remove a family's cgroup once nothing lives in it; whether it is gone.

    Once no host holds placement any more, the process's directory goes too
    when this was its last family.
    """
    removed = _remove(cgroup)
    if removed:
        with _lock:
            if _directory is None:
                _remove(os.path.dirname(cgroup))
    return removed
