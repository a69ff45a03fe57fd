"""Every stdio server family this process runs, told to whoever guards them (R-KILL-7).

The stdio transport (:mod:`wave_actors._transport.stdio`) reports each family
three times: :meth:`FamilyRegistry.begin` before spawning (the tag is chosen
first, so a host killed during the spawn still leaves a findable family),
:meth:`FamilyRegistry.started` once the server's pid is known, and
:meth:`FamilyRegistry.end` once it has reclaimed the family itself.

Listeners -- the watchdog clients of :mod:`wave_actors._watchdog.client` --
receive those events as lines of the watchdog's protocol (see
:mod:`wave_actors._watchdog.program`), and on attaching, a snapshot of every
live family, so a watchdog started late or replaced after its death knows
everything the host runs; subreaper mode (:mod:`wave_actors._watchdog.subreaper`)
reads the live families. The registry is process-wide, like the death it
guards against: while any host of the process has a watchdog, every family
the process starts is guarded. Calls may come from any thread (one trio run
per thread is allowed, and the spawner's threads report pids), hence the
lock; listeners must never block.

It lives with the family, below both the transport and the watchdog, so that
neither imports the other: the transport reports, the watchdog listens.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import attrs

from wave_actors._family.graces import Graces
from wave_actors._family.procfs import LINUX, read_stat

__all__ = ["Family", "FamilyRegistry", "Listener", "registry"]


class Listener(Protocol):
    """Receives protocol lines; must return at once and never raise."""

    def send(self, data: bytes) -> None: ...


@attrs.frozen
class Family:
    """One live server family.

    :param tag: its :data:`~wave_actors._family.tag.FAMILY_VARIABLE` value.
    :param graces: the graces its own reclamation would use.
    :param cgroup: its cgroup's directory, when it has one (R-KILL-10).
    :param root: the server's pid, once spawned.
    :param start: the server's start time (``/proc`` clock ticks), with the pid its identity.
    """

    tag: str
    graces: Graces
    cgroup: str | None = None
    root: int | None = None
    start: int | None = None

    def begin_line(self) -> bytes:
        line = f"begin {self.tag} {self.graces.eof:g} {self.graces.term:g}\n"
        if self.cgroup is not None:
            line += f"cgroup {self.tag} {self.cgroup}\n"  # the rest of the line: a path may hold spaces
        return line.encode(errors="surrogateescape")

    def root_line(self) -> bytes:
        return f"root {self.tag} {self.root} {self.start}\n".encode() if self.root is not None else b""


class FamilyRegistry:
    """The live families of this process and the listeners told about them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, Family] = {}
        self._listeners: list[Listener] = []

    def begin(self, tag: str, graces: Graces, cgroup: str | None = None) -> None:
        """A family tagged ``tag`` is about to be spawned (into ``cgroup``, if it has one)."""
        if not LINUX:
            return
        family = Family(tag, graces, cgroup)
        with self._lock:
            self._families[tag] = family
            self._tell(family.begin_line())

    def started(self, tag: str, pid: int) -> None:
        """The family's server is ``pid``.

        Said twice for a server spawned with a parent-death signal: by the
        spawner thread as soon as it has the pid (the stdio transport hands
        this method to :func:`~wave_actors._transport.spawn.open_server_process`),
        then by the transport, whose call then costs nothing.
        """
        if not LINUX:
            return
        with self._lock:
            family = self._families.get(tag)
            if family is None or family.root == pid:
                return  # ended already, or told already
        stat = read_stat(pid)
        with self._lock:
            family = self._families.get(tag)
            if family is None or stat is None or family.root == pid:
                return  # ended already, or exited before we looked (found by tag alone), or told meanwhile
            family = attrs.evolve(family, root=pid, start=stat.start)
            self._families[tag] = family
            self._tell(family.root_line())

    def end(self, tag: str) -> None:
        """The family has been reclaimed; nobody needs to guard it any more."""
        if not LINUX:
            return
        with self._lock:
            if self._families.pop(tag, None) is not None:
                self._tell(f"end {tag}\n".encode())

    def families(self) -> list[Family]:
        """The live families, in registration order."""
        with self._lock:
            return list(self._families.values())

    def attach(self, listener: Listener) -> None:
        """Tell ``listener`` every live family, then every change until :meth:`detach`."""
        with self._lock:
            snapshot = b"".join(family.begin_line() + family.root_line() for family in self._families.values())
            if snapshot:
                listener.send(snapshot)
            self._listeners.append(listener)

    def detach(self, listener: Listener) -> None:
        """Stop telling ``listener`` anything."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _tell(self, data: bytes) -> None:
        for listener in self._listeners:
            listener.send(data)

    def forget_in_child(self) -> None:
        """After ``os.fork()``, in the child: it runs none of these families and guards nothing.

        The lock is new too: another thread of the parent may have held it at the fork.
        """
        self._lock = threading.Lock()
        self._families = {}
        self._listeners = []


registry = FamilyRegistry()
"""The process's one registry."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=registry.forget_in_child)
