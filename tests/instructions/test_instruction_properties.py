"""Properties of instruction announcements over random lives of servers and histories (R-INS-2..4).

A model of a few servers goes through random connects, losses, reconnects,
crashes, disconnects, fresh dials, removals, rule changes and compactions
(messages with markers dropped), with turns in between. A ledger of every
message ever appended, and whether compaction has dropped it since, is the
oracle; the function under test sees only the history and the snapshot.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import attrs
from hypothesis import given, settings, strategies as st
from instruction_support import reloaded, snapshot

from wave_actors import (
    INSTRUCTIONS_LIMIT,
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

NAMES = ("alpha", "beta", "gamma")
TEXTS = (None, "", "Alpha rules.", "Two lines.\n  Second line.", "x" * 3000, "Alpha rules, revised.")
TOOL_SETS = ((), ("read", "write"))
AVAILABLE = (ServerState.CONNECTED, ServerState.RECONNECTING)


@attrs.define
class World:
    """One server as the host would see it, plus the host's rule for it."""

    present: bool = False
    state: ServerState = ServerState.DISCONNECTED
    instructions: str | None = None
    tools: tuple[str, ...] = ()
    denied: bool = False

    @property
    def available(self) -> bool:
        return self.present and self.state in AVAILABLE

    @property
    def eligible(self) -> bool:
        has_text = self.instructions is not None and self.instructions.strip() != ""
        return self.available and has_text and not (self.tools and self.denied)


@attrs.define
class Entry:
    message: InstructionMessage
    alive: bool = True


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


server = st.sampled_from(NAMES)
operation = st.one_of(
    st.tuples(st.just("connect"), server, st.sampled_from(TEXTS), st.sampled_from(TOOL_SETS)),
    st.tuples(st.sampled_from(["lose", "reconnect", "crash", "disconnect", "dial", "remove"]), server),
    st.tuples(st.just("deny"), server, st.booleans()),
    st.tuples(st.just("compact"), st.frozensets(st.integers(0, 11), max_size=6)),
    st.tuples(st.just("turn")),
)


class Run:
    def __init__(self) -> None:
        self.worlds = {name: World() for name in NAMES}
        self.ledger: list[Entry] = []
        self.history: list[dict[str, object]] = []

    def snapshot(self) -> SessionSnapshot:
        statuses: list[ServerStatus] = []
        for name, world in self.worlds.items():
            if world.present:
                tools = tuple(ToolInfo(name=f"mcp__{name}__{tool}", server=name, tool=tool) for tool in world.tools)
                statuses.append(
                    ServerStatus(
                        name=name,
                        source=Source.PROJECT,
                        origin=".mcp.json",
                        type="stdio",
                        state=world.state,
                        tools=tools,
                        instructions=world.instructions,
                    )
                )
        return snapshot(*statuses)

    def denied(self, tool_name: str) -> bool:
        return self.worlds[tool_name.split("__")[1]].denied

    def last_alive(self, name: str) -> Entry | None:
        return next((e for e in reversed(self.ledger) if e.alive and e.message.server == name), None)

    def apply(self, step: Sequence[object]) -> None:
        kind, *rest = step
        if kind == "turn":
            self.turn()
        elif kind == "compact":
            self.compact(rest[0])  # type: ignore[arg-type]
        elif kind == "deny":
            self.worlds[rest[0]].denied = bool(rest[1])  # type: ignore[index]
        else:
            self.change(str(kind), self.worlds[rest[0]], rest[1:])  # type: ignore[index]

    @staticmethod
    def change(kind: str, world: World, rest: Sequence[object]) -> None:
        if kind == "connect":
            world.present, world.state = True, ServerState.CONNECTED
            world.instructions, world.tools = rest[0], rest[1]  # type: ignore[assignment]
        elif not world.present:
            return
        elif kind == "lose" and world.state is ServerState.CONNECTED:
            world.state = ServerState.RECONNECTING
        elif kind == "reconnect" and world.state is ServerState.RECONNECTING:
            world.state = ServerState.CONNECTED
        elif kind == "crash":
            world.state = ServerState.ERROR
        elif kind == "disconnect":
            world.state = ServerState.DISCONNECTED
        elif kind == "dial":
            world.state = ServerState.CONNECTING
        elif kind == "remove":
            world.present = False

    def compact(self, drop: frozenset[int]) -> None:
        marked = [item for item in self.history if "meta" in item]
        dropped = {id(item) for position, item in enumerate(marked) if position in drop}
        for item in marked:
            if id(item) in dropped:
                self.ledger[item["entry"]].alive = False  # type: ignore[index]
        self.history = [item for item in self.history if id(item) not in dropped]

    def turn(self) -> None:
        current = self.snapshot()
        before = {name: self.last_alive(name) for name in NAMES}
        updates = instruction_updates(self.history, current, denied=self.denied)
        for message in updates:
            self.check(message, before[message.server])
            self.ledger.append(Entry(message))
            self.history.append({"content": message.text, "meta": message.meta, "entry": len(self.ledger) - 1})
        self.history.append({"content": "model answer"})
        # Every eligible server's current text is in force in the history after the turn.
        for name, world in self.worlds.items():
            if world.eligible:
                last = self.last_alive(name)
                assert last is not None and last.message.kind is InstructionKind.ANNOUNCE, name
                assert last.message.sha256 == digest(world.instructions or ""), name
        # An announcement left in force in the history belongs to a server that is still there with instructions.
        for name, world in self.worlds.items():
            last = self.last_alive(name)
            if last is not None and last.message.kind is InstructionKind.ANNOUNCE:
                assert world.available and (world.instructions or "").strip(), name
        # Nothing changed since: nothing to say, and a stored-and-reloaded history says the same.
        assert instruction_updates(self.history, current, denied=self.denied) == []
        assert instruction_updates(reloaded(self.history), current, denied=self.denied) == []

    def check(self, message: InstructionMessage, last_before: Entry | None) -> None:
        world = self.worlds[message.server]
        assert message.text.strip()
        if message.kind is InstructionKind.ANNOUNCE:
            assert world.eligible
            text = world.instructions or ""
            assert text[:INSTRUCTIONS_LIMIT] in message.text and message.sha256 == digest(text)
            self.check_not_repeated(message)
        else:
            # A notice retracts an announcement still in force in the history, and only then.
            assert last_before is not None and last_before.message.kind is InstructionKind.ANNOUNCE
            if message.kind is InstructionKind.OFFLINE:
                assert not world.available
            else:
                assert world.available and not world.eligible

    def check_not_repeated(self, message: InstructionMessage) -> None:
        # Never twice without, in between, a notice, a lost marker or a changed text.
        previous = next(
            (
                (index, entry)
                for index, entry in reversed(list(enumerate(self.ledger)))
                if entry.message.server == message.server and entry.message.kind is InstructionKind.ANNOUNCE
            ),
            None,
        )
        if previous is None:
            return
        index, entry = previous
        notice_since = any(
            later.message.server == message.server and later.message.kind is not InstructionKind.ANNOUNCE
            for later in self.ledger[index + 1 :]
        )
        assert notice_since or not entry.alive or entry.message.sha256 != message.sha256


@settings(max_examples=400, deadline=None)
@given(st.lists(operation, max_size=40))
def test_announcements_follow_the_history_over_any_life_of_the_servers(steps: list[tuple[object, ...]]) -> None:
    # R-INS-2, R-INS-3, R-INS-4: no repeat without a notice or a lost marker, every available server
    # with instructions announced by the next turn, every gone server retracted by it, and no notice
    # for a server not announced.
    run = Run()
    for step in steps:
        run.apply(step)
    run.turn()


@given(st.text(max_size=5000), st.text(min_size=1, max_size=40))
def test_any_text_is_announced_verbatim_up_to_the_limit_and_marked_beyond(text: str, name: str) -> None:
    # R-INS-2: any characters (lone surrogates included), any length, any server name.
    current = snapshot(
        ServerStatus(
            name=name, source=Source.USER, origin="x", type="stdio", state=ServerState.CONNECTED, instructions=text
        )
    )
    updates = instruction_updates([], current)

    if not text.strip():
        assert updates == []
        return
    [message] = updates
    assert message.truncated == (len(text) > INSTRUCTIONS_LIMIT)
    if message.truncated:
        shown = text[:INSTRUCTIONS_LIMIT]
        assert (
            f"\n{shown}\n</mcp-server-instructions>\n[Truncated: the server sent {len(text)} characters" in message.text
        )
    else:
        assert message.text.endswith(f"\n{text}\n</mcp-server-instructions>")
    assert instruction_updates([message], current) == []
    assert (
        instruction_updates([{"meta": restore_instruction_meta(json.loads(json.dumps(message.meta)))}], current) == []
    )
