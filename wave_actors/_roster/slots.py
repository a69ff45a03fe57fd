"""Which shared connection each session of a project uses: the pure decision of a reconcile (R-SCOPE-1, R-SCOPE-3).

A project holds one connection per entry its sessions loaded, not per name:
two sessions that loaded different entries under one name get a connection
each, and never use one made for an entry they did not load. A connection is
a :class:`Slot`, its server's name and a serial number; :func:`decide` says,
from what every session wants now and what the project holds, which slot
each session uses and what becomes of each connection (kept, reloaded in
place for another entry, added, retired). No I/O, no trio.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator, Mapping
from typing import Generic, TypeVar, cast

import attrs

from wave_actors._config import ServerConfig
from wave_actors._reconfigure import ReconfigurePlan, plan_reconfigure

__all__ = ["Decision", "Slot", "decide", "loaded_entry"]

Session = TypeVar("Session", bound=Hashable)


@attrs.frozen
class Slot:
    """One shared connection of a project: its server's name, and a serial number of the scope's own.

    The serial tells apart connections of one name made for different
    entries, and a connection from the one that replaced it after it closed.
    """

    name: str
    serial: int


def loaded_entry(config: ServerConfig) -> tuple[object, ...]:
    """What two sessions must have loaded alike to share a connection: every field of the entry (R-SCOPE-1).

    :param config: a loaded entry.
    """
    fields: list[object] = []
    for value in attrs.astuple(config, recurse=False):
        if isinstance(value, Mapping):  # env, headers, tool_overrides: hashable, in a stable order
            fields.append(tuple(sorted(cast(Mapping[str, object], value).items())))
        else:
            fields.append(value)
    return tuple(fields)


@attrs.frozen
class Decision(Generic[Session]):
    """What a reconcile does: the plan over the project's connections, and each session's connections after it.

    :param plan: what becomes of each connection.
    :param wanted: the entry of every connection the project keeps or adds.
    :param targets: each session's connection under each of its servers' names.
    """

    plan: ReconfigurePlan[Slot]
    wanted: Mapping[Slot, ServerConfig]
    targets: Mapping[Session, Mapping[str, Slot]]


def decide(
    wants: Mapping[Session, Mapping[str, ServerConfig]],
    connections: Mapping[Slot, ServerConfig],
    users: Mapping[Slot, Collection[Session]],
    serials: Iterator[int],
) -> Decision[Session]:
    """Which connection each session uses, and what becomes of each connection (R-SCOPE-1, R-SCOPE-3).

    For each name: a connection made for an entry still loaded stays; one
    whose sessions now load another entry of the name reloads in place for it
    (the entry most of them load); a new entry gets a new connection; a
    connection left over is retired.

    :param wants: each session's entries by name, as it loaded them.
    :param connections: the project's connections and the entry each was made for.
    :param users: the sessions holding each connection now.
    :param serials: where the serial numbers of new connections come from.
    """
    entries: dict[str, dict[tuple[object, ...], tuple[ServerConfig, list[Session]]]] = {}
    for session, servers in wants.items():
        for name, config in servers.items():
            entries.setdefault(name, {}).setdefault(loaded_entry(config), (config, []))[1].append(session)
    existing: dict[str, list[Slot]] = {}
    for slot in sorted(connections, key=lambda slot: slot.serial):
        existing.setdefault(slot.name, []).append(slot)
    wanted: dict[Slot, ServerConfig] = {}
    targets: dict[Session, dict[str, Slot]] = {session: {} for session in wants}

    def give(slot: Slot, config: ServerConfig, sessions: list[Session]) -> None:
        wanted[slot] = config
        for session in sessions:
            targets[session][slot.name] = slot

    for name, pending in entries.items():
        free = existing.get(name, [])
        for slot in list(free):
            match = pending.pop(loaded_entry(connections[slot]), None)
            if match is not None:
                give(slot, *match)
                free.remove(slot)
        for slot in list(free):
            holders = users.get(slot, {})
            overlap = {key: sum(session in holders for session in match[1]) for key, match in pending.items()}
            best = max(overlap, key=lambda key: overlap[key], default=None)
            if best is not None and overlap[best] > 0:
                give(slot, *pending.pop(best))
                free.remove(slot)
        for config, sessions in pending.values():
            give(Slot(name, next(serials)), config, sessions)
    return Decision(plan_reconfigure(connections, wanted), wanted, targets)
