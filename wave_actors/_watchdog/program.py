"""The watchdog process: when its host dies, it reclaims every server family the host registered (R-KILL-7).

Run it by file path (``python -I -S path/to/program.py``), never with ``-m``:
it uses the standard library only, so it starts in milliseconds and costs a
few megabytes. :mod:`wave_actors._watchdog.client` starts it, and is the
only thing that speaks to it. It reads ``/proc`` with the library's one
reader, :mod:`wave_actors._family.procfs` (stdlib only too), which it loads
without the package's ``__init__`` and the runtime that imports (see below
the imports).

It detaches at once (forks; the first process exits), so it is not in its
host's process tree: whatever kills the host's tree or process group
(``kill -9 -PGID``, a tree-killer walking parent pids) leaves it standing to
do its work. Its standard input is one end of a Unix socket pair whose other
end only the host holds, so the socket reaches end of file exactly when the
host is gone, however it went (SIGKILL included) -- or when the host closes
it on purpose.

Protocol, one ASCII line per message:

host to watchdog

- ``begin TAG EOF TERM``: a server is about to be spawned with
  ``WAVE_ACTORS_FAMILY=TAG`` in its environment; EOF and TERM are its
  reclamation graces in seconds. Sent *before* the spawn, so no moment
  exists when the family runs unregistered.
- ``cgroup TAG PATH``: the family runs in the cgroup PATH (the rest of the
  line), which holds every process it will ever start (R-KILL-10). Sent
  with ``begin``.
- ``root TAG PID START``: the server is PID, started at START (clock ticks
  since boot, ``/proc/PID/stat`` field 22): a pid alone may be reused.
- ``end TAG``: the host reclaimed the family itself.
- ``release``: the host is closing normally; exit without touching anything.

watchdog to host

- ``ready PID START``: sent once detached, naming the watchdog itself.

At end of file without ``release``, the host is gone: every family still
registered is reclaimed with the stages of :mod:`wave_actors._transport.reclamation`
-- found by tag, by session, by descendance and by cgroup, snapshotted
before any signal; the servers already have end of file on stdin (the
host's end of their pipes died with it), so the roots get their EOF grace,
then every member SIGTERM and its grace, then SIGKILL, and ``cgroup.kill``
for every family in a cgroup, which ends whatever the scans could not see
(:mod:`wave_actors._family.cgroup`, loaded only then) -- with each grace cut
so that the whole reclamation ends within :data:`BUDGET` seconds of the
host's death (R-KILL-7 promises 2 s). Then it removes the families' cgroups
and exits.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import types
from typing import Final, NoReturn

if "wave_actors" not in sys.modules:
    # Run by path: importing the package would run its __init__, which imports the whole
    # runtime (trio, attrs, ...): tens of milliseconds, and not even importable under -S.
    # An empty package object in its place lets the stdlib-only leaf load alone.
    _package = types.ModuleType("wave_actors")
    _package.__path__ = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    sys.modules["wave_actors"] = _package

from wave_actors._family.procfs import (
    ProcessStat,
    read_environment_variable,
    read_pids,
    read_stat,
    session_still_started_by,
)

BUDGET: Final = 1.6
"""Seconds from noticing the host's death to the last SIGKILL."""
EOF_LIMIT: Final = 0.5
"""The longest EOF grace the watchdog grants, whatever the family asked for."""
TERM_LIMIT: Final = 0.8
"""The longest SIGTERM grace the watchdog grants."""
KILL_WAIT: Final = 0.5
"""How long to wait for SIGKILLed members to die before giving up on them."""
_POLL: Final = 0.01
_ROUNDS: Final = 3


class Family:
    """One registered server family."""

    __slots__ = ("cgroup", "eof", "root", "start", "tag", "term")

    def __init__(self, tag: str, eof: float, term: float) -> None:
        self.tag = tag
        self.eof = eof
        self.term = term
        self.cgroup: str | None = None
        self.root: int | None = None
        self.start: int | None = None


def _log(message: str) -> None:
    try:
        os.write(2, f"wave-actors watchdog[{os.getpid()}]: {message}\n".encode())
    except OSError:
        pass  # nobody is listening any more: the host's stderr may have died with it


class Reclaimer:
    """Finds the members of the registered families and ends them in stages."""

    def __init__(self, families: list[Family], variable: str) -> None:
        self.families = families
        self.variable = variable
        self.known: dict[int, int] = {}  # pid -> start
        self.me = os.getpid()

    def alive(self, pid: int, start: int) -> bool:
        stat = read_stat(pid)
        return stat is not None and not stat.zombie and stat.start == start

    def survivors(self) -> list[int]:
        return [pid for pid, start in self.known.items() if self.alive(pid, start)]

    def scan(self) -> None:
        """Record every live member of every family (and their descendants) into :attr:`known`."""
        tags = {family.tag for family in self.families}
        contained = {pid for members in self.cgroup_members() for pid in members}
        roots = {family.root: family.start for family in self.families if family.root is not None}
        # A root's pid names its session only while it is free or still the root's: once
        # reused, a session of that id is the newcomer's (pid reuse, R-KILL-7).
        sessions = {
            root for root, start in roots.items() if start is not None and session_still_started_by(root, start)
        }
        rows: dict[int, ProcessStat] = {}
        members: set[int] = set()
        for pid in read_pids():
            if pid == self.me:
                continue
            stat = read_stat(pid)
            if stat is None or stat.zombie:
                continue
            rows[pid] = stat
            if (
                pid in contained
                or roots.get(pid) == stat.start
                or stat.sid in sessions
                or read_environment_variable(pid, self.variable) in tags
            ):
                members.add(pid)
        children: dict[int, list[int]] = {}
        for pid, stat in rows.items():
            children.setdefault(stat.ppid, []).append(pid)
        stack = list(members)
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in members:
                    members.add(child)
                    stack.append(child)
        for pid in members:
            self.known.setdefault(pid, rows[pid].start)

    def cgroups(self) -> list[str]:
        return [family.cgroup for family in self.families if family.cgroup is not None]

    def cgroup_members(self) -> list[list[int]]:
        """The pids in each family's cgroup (nothing to load or read when no family has one)."""
        if not self.cgroups():
            return []
        from wave_actors._family.cgroup import cgroup_members

        return [cgroup_members(cgroup) for cgroup in self.cgroups()]

    def end_cgroups(self) -> None:
        """``cgroup.kill`` for every family in a cgroup, then, once each is empty, remove it."""
        if not self.cgroups():
            return
        from wave_actors._family.cgroup import cgroup_populated, kill_cgroup, remove_family_cgroup

        for cgroup in self.cgroups():
            kill_cgroup(cgroup)
        deadline = time.monotonic() + KILL_WAIT
        for cgroup in self.cgroups():
            while cgroup_populated(cgroup) and time.monotonic() < deadline:
                time.sleep(_POLL / 10)
            remove_family_cgroup(cgroup)  # no host holds placement here: the host's directory goes with its last

    def signal(self, pids: list[int], signum: int) -> None:
        for pid in pids:
            if self.alive(pid, self.known[pid]):
                try:
                    os.kill(pid, signum)
                except OSError:
                    continue

    def wait_gone(self, pids: list[int], limit: float) -> list[int]:
        deadline = time.monotonic() + max(0.0, limit)
        while True:
            pids = [pid for pid in pids if self.alive(pid, self.known[pid])]
            if not pids or time.monotonic() >= deadline:
                return pids
            time.sleep(_POLL)

    def run(self) -> tuple[int, list[int]]:
        """The stages; returns how many members were found and which survived SIGKILL."""
        deadline = time.monotonic() + BUDGET
        self.scan()  # before any signal: members re-parent once their parent dies
        eof = min(EOF_LIMIT, max((family.eof for family in self.families), default=0.0))
        term = min(TERM_LIMIT, max((family.term for family in self.families), default=0.0))
        roots = [family.root for family in self.families if family.root in self.known]
        self.wait_gone(roots, min(eof, deadline - time.monotonic()))
        try:
            # A member may fork between a scan and the signal meant for it; a few rounds settle it.
            for _ in range(_ROUNDS):
                self.scan()
                survivors = self.survivors()
                if not survivors:
                    break
                self.signal(survivors, signal.SIGTERM)
                survivors = self.wait_gone(survivors, min(term, deadline - time.monotonic()))
                if survivors:
                    self.signal(survivors, signal.SIGKILL)
                    if self.wait_gone(survivors, KILL_WAIT):
                        break  # unkillable: reported below
                if time.monotonic() >= deadline:
                    break
        finally:
            self.end_cgroups()
            leftovers = self.survivors()
            if leftovers:
                self.signal(leftovers, signal.SIGKILL)
                leftovers = self.wait_gone(leftovers, KILL_WAIT)
        return len(self.known), leftovers


class Registry:
    """The families the host registered and has not ended, from its lines."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}
        self.released = False

    def feed(self, line: str) -> None:
        words = line.split()
        try:
            if words[0] == "begin" and len(words) == 4:
                self.families[words[1]] = Family(words[1], float(words[2]), float(words[3]))
            elif words[0] == "cgroup" and len(words) >= 3 and words[1] in self.families:
                self.families[words[1]].cgroup = line.split(" ", 2)[2]
            elif words[0] == "root" and len(words) == 4 and words[1] in self.families:
                family = self.families[words[1]]
                family.root, family.start = int(words[2]), int(words[3])
            elif words[0] == "end" and len(words) == 2:
                self.families.pop(words[1], None)
            elif words[0] == "release":
                self.released = True
        except (IndexError, ValueError):
            _log(f"ignoring a malformed line from the host: {line!r}")


def _detach() -> None:
    """Leave the host's process tree: the first process exits and the host collects it."""
    if os.fork() != 0:
        os._exit(0)
    os.chdir("/")  # never keep a directory busy (an unmount) for the host


def _listen(registry: Registry) -> None:
    """Read the host's lines until end of file or ``release``."""
    pending = b""
    while not registry.released:
        try:
            chunk = os.read(0, 65536)
        except OSError:
            chunk = b""  # a reset is the host's death too
        if not chunk:
            return  # a partial last line is a message the host never finished: ignored
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                registry.feed(line.decode(errors="replace"))


def _arguments(argv: list[str]) -> tuple[int, str]:
    """``--host PID --variable NAME`` (no argparse: it would double the start-up time)."""
    values = dict(zip(argv[::2], argv[1::2], strict=False))
    try:
        return int(values["--host"]), values["--variable"]
    except (KeyError, ValueError):
        _log(f"usage: program.py --host PID --variable NAME (got {argv!r})")
        os._exit(2)


def main(argv: list[str] | None = None) -> NoReturn:
    """Detach, say ready, wait for the host's end, reclaim what it left."""
    host, variable = _arguments(sys.argv[1:] if argv is None else argv)
    _detach()  # first: the host waits for the first process to exit
    # Its own session already (the host starts it so): no terminal's Ctrl-C or hangup is meant for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stat = read_stat(os.getpid())
    try:
        os.write(0, f"ready {os.getpid()} {stat.start if stat else 0}\n".encode())
    except OSError:
        pass  # the host is gone already: what it registered is read below all the same
    registry = Registry()
    _listen(registry)
    if registry.released or not registry.families:
        os._exit(0)
    started = time.monotonic()
    families = list(registry.families.values())
    found, leftovers = Reclaimer(families, variable).run()
    message = (
        f"host pid {host} is gone; reclaimed {found} process(es) of {len(families)} server "
        f"famil{'y' if len(families) == 1 else 'ies'} in {time.monotonic() - started:.2f} s"
    )
    if leftovers:
        message += f"; pids {leftovers} survived SIGKILL"
    _log(message)
    os._exit(0)


if __name__ == "__main__":
    main()
