"""Statuses, snapshots and a conversation for instruction tests, built from the public API only.

``Conversation`` is what a host does each turn: ask for the updates, append
each as a message whose ``meta`` holds the marker, the way a host would store
it (a JSON-ready mapping). ``reloaded`` is a host's restart: the history
through JSON, the meta of its own instruction messages restored.
Everything here is pure: no session, no process.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

from wave_actors import (
    InstructionKind,
    InstructionMessage,
    ServerState,
    ServerStatus,
    SessionSnapshot,
    Source,
    ToolInfo,
    instruction_updates,
    restore_instruction_meta,
)

_versions = itertools.count(1)


def status(
    name: str,
    state: ServerState = ServerState.CONNECTED,
    *,
    instructions: str | None = None,
    tools: Sequence[str] = ("search",),
) -> ServerStatus:
    """A server's status, with tools named ``mcp__{name}__{tool}``."""
    return ServerStatus(
        name=name,
        source=Source.USER,
        origin="~/.wave/mcp.json",
        type="stdio",
        state=state,
        tools=tuple(ToolInfo(name=f"mcp__{name}__{tool}", server=name, tool=tool) for tool in tools),
        instructions=instructions,
    )


def snapshot(*statuses: ServerStatus) -> SessionSnapshot:
    return SessionSnapshot(next(_versions), tuple(sorted(statuses, key=lambda s: s.name)))


class Conversation:
    """A history of plain mappings, as a host would store it, plus the turns that grow it."""

    def __init__(self) -> None:
        self.history: list[dict[str, object]] = [{"role": "user", "content": "hello"}]

    def turn(
        self, current: SessionSnapshot, *, denied: Callable[[str], bool] | Iterable[str] = ()
    ) -> list[InstructionMessage]:
        updates = instruction_updates(self.history, current, denied=denied)
        self.history += [{"role": "user", "content": message.text, "meta": message.meta} for message in updates]
        self.history.append({"role": "assistant", "content": "ok"})
        return updates

    def compact(self, keep: Callable[[dict[str, object]], bool]) -> None:
        """Drop the messages ``keep`` refuses, as a summarizing compaction would."""
        self.history = [item for item in self.history if keep(item)]


def kinds(updates: Iterable[InstructionMessage]) -> list[tuple[InstructionKind, str]]:
    return [(message.kind, message.server) for message in updates]


def reloaded(history: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """``history`` stored as JSON and read back by a host that restores the meta of its own instruction messages.

    Here the host's instruction messages are the items with a ``"meta"``; a
    host that also stores tool results' ``_meta`` must tell them apart (R-INS-6).
    """
    items = cast("list[dict[str, object]]", json.loads(json.dumps(history)))
    return [
        {**item, "meta": restore_instruction_meta(cast("Mapping[str, object]", item["meta"]))}
        if "meta" in item
        else item
        for item in items
    ]
