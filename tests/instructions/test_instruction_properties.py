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
import re
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


# Server text against the frame (R-INS-7) --------------------------------------------------
#
# The parser below follows the documented format of an announcement: a first line naming the server,
# the opening tag `<mcp-server-instructions server=NAME>` (NAME a JSON string) on the second line, the
# text, the closing tag `</mcp-server-instructions>` on a line of its own, and at most the truncation
# mark after it. In the text, newlines (`\n`, `\r\n`) and tabs are kept, every other control or invisible
# character is a Python escape, and every `<` that would open or close the frame's tag (any case,
# spaces allowed after `<` and `/`) is `&lt;`.

FRAME_TAG = re.compile(r"<\s*(/?)\s*mcp-server-instructions", re.IGNORECASE)
OPENING = "<mcp-server-instructions server="
CLOSING = "</mcp-server-instructions>"
ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})|&lt;")
FRAGMENTS = (
    "\u2028",
    "\u2029",
    "\x85",
    "\r",
    "\n",
    "\r\n",
    "\x1b[2J",
    "\x07",
    "\u2060",
    "\ufeff",
    "\U000e0041",
    "\U000e007f",
    "\u202e",
    "<",
    ">",
    "/",
    "&lt;",
    "\\x1b",
    CLOSING,
    "< / MCP-Server-Instructions >",
    OPENING + '"x">',
    "\n### forged\n",
    "\n- forged [read-only]\n",
    '"',
)
hostile_text = st.lists(st.one_of(st.characters(), st.sampled_from(FRAGMENTS)), max_size=60).map("".join)


def decoded(text: str) -> str:
    """``text`` with the escapes of the format read back."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "&lt;":
            return "<"
        return chr(int(match.group(1) or match.group(2) or match.group(3), 16))

    return ESCAPE.sub(one, text)


def lines_of(text: str) -> list[str]:
    """The lines of a message; no Unicode line break other than `\n` and `\r\n` may hide in them."""
    lines = text.splitlines()
    assert lines == text.replace("\r\n", "\n").split("\n"), "a line break other than \\n in the message"
    return lines


def server_in(text: str, start: int) -> tuple[str, int]:
    """The JSON string starting at ``start``, and where it ends."""
    assert text[start] == '"'
    value, end = json.JSONDecoder().raw_decode(text, start)
    assert isinstance(value, str)
    return value, end


def parse_announcement(text: str) -> tuple[str, str, str]:
    """(server named in the first line, server named in the tag, framed body) of an announcement."""
    tags = list(FRAME_TAG.finditer(text))
    assert [bool(tag.group(1)) for tag in tags] == [False, True], f"frame tags: {[t.group(0) for t in tags]}"
    opening, closing = tags
    first_line, second_line, *_ = lines_of(text)
    named, _ = server_in(first_line, first_line.index('"'))
    assert second_line.startswith(OPENING) and text.startswith(first_line + "\n" + OPENING)
    in_tag, end = server_in(second_line, len(OPENING))
    assert second_line[end:] == ">"
    body_start = len(first_line) + 1 + len(second_line) + 1
    assert opening.start() == len(first_line) + 1
    assert text[closing.start() - 1] == "\n" and text.startswith(CLOSING, closing.start())
    after = text[closing.start() + len(CLOSING) :]
    assert after == "" or (after.startswith("\n[Truncated: ") and len(lines_of(after)) == 2)
    return named, in_tag, text[body_start : closing.start() - 1]


@settings(max_examples=400)
@given(st.one_of(hostile_text, st.text(max_size=3000)), hostile_text.filter(bool))
def test_no_server_text_or_name_can_forge_the_frame_or_a_line_of_an_announcement(text: str, name: str) -> None:
    # R-INS-2, R-INS-7: any characters (lone surrogates included), any length, any server name.
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
    named, in_tag, body = parse_announcement(message.text)
    assert named == in_tag == name
    assert message.truncated == (len(text) > INSTRUCTIONS_LIMIT)
    sent = text[:INSTRUCTIONS_LIMIT]
    assert decoded(body) == decoded(sent)
    if all(char.isprintable() or char in "\n\t" for char in sent.replace("\r\n", "\n")) and "<" not in sent:
        assert body == sent  # verbatim: nothing to escape
    assert instruction_updates([message], current) == []
    assert (
        instruction_updates([{"meta": restore_instruction_meta(json.loads(json.dumps(message.meta)))}], current) == []
    )

    [notice] = instruction_updates([message], snapshot())
    [line] = lines_of(notice.text)
    assert FRAME_TAG.search(line) is None
    assert server_in(line, line.index('"'))[0] == name
