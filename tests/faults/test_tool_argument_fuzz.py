"""Fuzzing tool calls against a real server: whatever a host passes, nothing escapes and nothing is lost (R-TOOL-9, R-HOST-4).

Random names and arguments (lone surrogates, bytes, sets, objects, NaN,
huge integers, non-string keys, deep and circular nesting, and plenty of
valid JSON) go to ``Session.call_tool`` against the fault server, all at once
and next to an unrelated slow call. Every call returns a result or raises a
``TypeError`` or a ``WaveActorsError`` that is not a lost connection; the
unrelated call finishes; afterwards the server is the same process in the
same generation, and a valid text comes back exactly as it was sent.
"""

from __future__ import annotations

import json
import math
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import trio
from hypothesis import HealthCheck, given, settings, strategies as st
from session_support import connected_session

from wave_actors import ServerState, ServerUnavailable, Session, WaveActorsError
from wave_actors.testing import fault_server_entry

ECHO = "mcp__f__echo"

# Every code point, lone surrogates included: os.fsdecode of a non-UTF-8 file name makes those.
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
ODD: list[Any] = [b"bytes", bytearray(b"x"), {1, 2}, frozenset[int](), Decimal("1.5"), object(), math.nan, 1j]
odd_leaves: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(ODD),
    st.integers(4_000, 5_000).map(lambda digits: 10**digits),  # past what servers can read back
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities included
    any_text,
    odd_leaves,
)
keys = st.one_of(any_text, any_text, st.integers(), st.none(), st.booleans(), st.tuples(st.integers()))


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"inner": value}
    return value


def circular(base: dict[Any, Any]) -> dict[Any, Any]:
    looped: dict[Any, Any] = {**base}
    looped["loop"] = [looped]
    return looped


values: st.SearchStrategy[Any] = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=3),
    ),
    max_leaves=10,
)
mappings = st.dictionaries(keys, values, max_size=4)
arguments = st.one_of(
    mappings,
    st.fixed_dictionaries({"text": any_text}),
    st.integers(1, 600).map(nested),
    mappings.map(circular),
    st.none(),
    values,  # not a mapping at all, sometimes
)
names = st.one_of(st.just(ECHO), st.just(ECHO), st.just(ECHO), st.none(), st.integers(), any_text)
calls = st.lists(st.tuples(names, arguments), min_size=1, max_size=12)


def encodable_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def pid_of(session: Session) -> int:
    result = await session.call_tool("mcp__f__pid", {})
    return json.loads(result.content[0].text)["pid"]  # type: ignore[union-attr]


async def exercise(workdir: Path, batch: list[tuple[Any, Any]]) -> None:
    async with connected_session(workdir, {"f": fault_server_entry()}) as session:
        pid, generation = await pid_of(session), session.server("f").generation
        escaped: list[BaseException] = []
        unrelated: list[str] = []

        async def call(name: Any, args: Any) -> None:
            try:
                result = await session.call_tool(name, args)
            except TypeError:
                return
            except ServerUnavailable as error:  # a lost connection is exactly what must never happen
                escaped.append(error)
                return
            except WaveActorsError:
                return  # UnknownTool for a made-up name, say: ours, and the connection is fine
            except Exception as error:  # anything else escaped
                escaped.append(error)
                return
            sent = cast("dict[Any, Any]", args) if isinstance(args, dict) else {}
            if name == ECHO and list(sent) == ["text"] and isinstance(sent["text"], str):
                assert encodable_text(sent["text"])  # valid text arrives exactly as it was sent
                assert result.content[0].text == sent["text"]  # type: ignore[union-attr]

        async def slow_unrelated_call() -> None:
            result = await session.call_tool("mcp__f__sleep", {"seconds": 0.2})
            unrelated.append(result.content[0].text)  # type: ignore[union-attr]

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_unrelated_call)
                for name, args in batch:
                    nursery.start_soon(call, name, args)
        assert escaped == [], escaped
        assert unrelated == ["slept 0.2"]
        status = session.server("f")
        assert status.state is ServerState.CONNECTED and status.generation == generation
        assert await pid_of(session) == pid


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(calls)
def test_no_argument_escapes_as_anything_but_our_errors_or_costs_the_connection(batch: list[tuple[Any, Any]]) -> None:
    with tempfile.TemporaryDirectory(prefix="wave-fuzz-") as directory:
        trio.run(exercise, Path(directory), batch)
