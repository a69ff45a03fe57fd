"""Bad tool-call arguments fail that call in the caller's task and never cost the connection (R-TOOL-9, R-HOST-4).

Arguments are checked and encoded before anything is queued: a value JSON
cannot carry (a lone surrogate, bytes, a non-string key, NaN, a circular or
too deeply nested mapping, ...) is a :class:`TypeError` for that call, the
server never receives it, and everything else on the connection carries on:
an unrelated call in flight finishes, the process is not restarted and no
reconnect budget is spent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import trio
from polling import poll_until
from process_support import tools_called
from session_support import connected_session

from wave_actors import ServerState, Session
from wave_actors.testing import fault_server_entry


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"inner": value}
    return value


def circular() -> dict[str, Any]:
    value: dict[str, Any] = {"text": "loop"}
    value["self"] = {"back": value}
    return value


async def server_pid(session: Session) -> int:
    result = await session.call_tool("mcp__f__pid", {})
    return json.loads(result.content[0].text)["pid"]  # type: ignore[union-attr]


BAD_ARGUMENTS: dict[str, tuple[Any, str]] = {
    "lone surrogate": ({"text": "\ud800"}, r"surrogate"),
    "lone surrogate in a key": ({"\udc80": "x"}, r"surrogate"),
    "lone surrogate deep inside": ({"text": ["ok", {"nested": "a\udfffb"}]}, r"\['text'\]\[1\]\['nested'\]"),
    "bytes": ({"text": b"raw"}, r"bytes"),
    "non-string key": ({1: "x"}, r"key"),
    "non-string key inside": ({"text": {None: 2}}, r"key"),
    "nested 500 deep": (nested(500), r"deep"),
    "circular": (circular(), r"circular"),
    "NaN": ({"text": math.nan}, r"NaN|finite"),
    "Infinity": ({"text": -math.inf}, r"finite"),
    "5 000-digit integer": ({"text": 10**5000}, r"digits"),
    "a set": ({"text": {1, 2}}, r"set"),
    "an object": ({"text": object()}, r"object"),
}


@pytest.mark.parametrize("label", BAD_ARGUMENTS)
async def test_an_argument_json_cannot_carry_is_a_type_error_and_nothing_is_sent(tmp_path: Path, label: str) -> None:
    # R-TOOL-9: checked in the caller's task; the server never sees the call.
    arguments, what = BAD_ARGUMENTS[label]
    log = tmp_path / "calls.jsonl"
    async with connected_session(tmp_path, {"f": fault_server_entry(call_log=log)}) as session:
        before = session.server("f")
        with trio.fail_after(5), pytest.raises(TypeError, match=what) as raised:
            await session.call_tool("mcp__f__echo", arguments)
        assert "mcp__f__echo" in str(raised.value)
        assert tools_called(log) == []
        after = session.server("f")
        assert after.state is ServerState.CONNECTED and after.generation == before.generation
        result = await session.call_tool("mcp__f__echo", {"text": "still here"})
        assert result.content[0].text == "still here"  # type: ignore[union-attr]


async def test_a_lone_surrogate_never_costs_the_connection_or_an_unrelated_call(tmp_path: Path) -> None:
    # R-TOOL-9, R-HOST-4: a file name from os.fsdecode of non-UTF-8 bytes carries a lone surrogate.
    bad = {"text": b"caf\xe9.txt".decode("utf-8", "surrogateescape")}
    log = tmp_path / "calls.jsonl"
    async with connected_session(tmp_path, {"f": fault_server_entry(call_log=log)}) as session:
        pid = await server_pid(session)
        generation = session.server("f").generation
        finished: list[str] = []

        async def unrelated_call() -> None:
            result = await session.call_tool("mcp__f__sleep", {"seconds": 0.5})
            finished.append(result.content[0].text)  # type: ignore[union-attr]

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(unrelated_call)
                await poll_until(lambda: "sleep" in tools_called(log), limit=5, what="the unrelated call received")
                # More than the reconnect budget (three restarts): none of them may spend it.
                for _ in range(7):
                    with pytest.raises(TypeError, match="surrogate"):
                        await session.call_tool("mcp__f__echo", bad)
        assert finished == ["slept 0.5"]
        status = session.server("f")
        assert status.state is ServerState.CONNECTED and status.generation == generation
        assert await server_pid(session) == pid


@pytest.mark.parametrize("name", [123, None, b"mcp__f__echo"])
async def test_a_tool_name_that_is_not_a_string_is_a_type_error(tmp_path: Path, name: object) -> None:
    # R-TOOL-9: never an AttributeError from deep inside.
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        with pytest.raises(TypeError, match="tool name"):
            await session.call_tool(name, {"text": "x"})  # type: ignore[arg-type]
        assert session.server("f").state is ServerState.CONNECTED


async def test_json_compatible_arguments_arrive_as_json(tmp_path: Path) -> None:
    # Tuples are JSON arrays, int and str subclasses are numbers and strings: accepted, sent as JSON.
    async with connected_session(tmp_path, {"f": fault_server_entry()}) as session:
        result = await session.call_tool("mcp__f__echo", {"text": ("a", 1, 2.5, True, None, {"k": []})})
        # The fault server echoes str() of what it parsed.
        assert result.content[0].text == "['a', 1, 2.5, True, None, {'k': []}]"  # type: ignore[union-attr]
