"""Tool-call arguments are checked and copied as plain JSON, or refused with a TypeError saying where (R-TOOL-9).

Unit tests of ``wave_actors._transport.arguments``: what JSON can carry comes
back equal and plain; anything else, wherever it hides, is a ``TypeError``
whose message points at it.
"""

from __future__ import annotations

import enum
import json
import math
import time
import types
from collections import OrderedDict, namedtuple
from typing import Any

import pytest
import trio
from hypothesis import given, strategies as st

from wave_actors import ServerConfig, Source
from wave_actors._transport import Graces, TransportOptions, open_connection
from wave_actors._transport.arguments import MAX_CONTAINERS, MAX_DEPTH, tool_call_arguments
from wave_actors.testing import reference_server_entry

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8")),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=5)

UNSENDABLE: list[tuple[Any, str]] = [
    ("\ud800", "lone surrogate"),
    (b"raw", "bytes"),
    (bytearray(b"raw"), "bytes"),
    ({1, 2}, "sets"),
    (math.nan, "not a JSON number"),
    (math.inf, "not a JSON number"),
    (10**5000, "too long to write as text"),
    (object(), "not a JSON value"),
    (1j, "not a JSON value"),
    ({1: "one"}, "JSON object keys are strings"),
    ({"\udfff": 1}, "a key has a lone surrogate"),
]


@given(json_objects)
def test_json_arguments_come_back_equal_and_plain(arguments: dict[str, Any]) -> None:
    plain = tool_call_arguments("t", arguments)
    assert plain == arguments
    assert json.loads(json.dumps(plain, allow_nan=False)) == arguments


@given(json_objects, st.sampled_from(UNSENDABLE), st.data())
def test_anything_json_cannot_carry_is_a_type_error_naming_where_it_is(
    arguments: dict[str, Any], bad: tuple[Any, str], data: st.DataObject
) -> None:
    value, reason = bad
    # Hide the value somewhere inside, and remember the way to it.
    path = data.draw(st.lists(st.sampled_from(["list", "object"]), max_size=5))
    where = ""
    for step in reversed(path):
        if step == "list":
            value, where = [0, value], f"[1]{where}"
        else:
            value, where = {"k": value}, f"['k']{where}"
    arguments = {**arguments, "hidden": value}
    with pytest.raises(TypeError) as raised:
        tool_call_arguments("t", arguments)
    message = str(raised.value)
    assert reason in message and "nothing was sent" in message
    assert f"arguments['hidden']{where}" in message


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_nesting_is_allowed_to_the_limit_and_refused_past_it() -> None:
    assert tool_call_arguments("t", nested(MAX_DEPTH)) == nested(MAX_DEPTH)
    with pytest.raises(TypeError, match=f"nest deeper than {MAX_DEPTH} levels"):
        tool_call_arguments("t", nested(MAX_DEPTH + 1))
    with pytest.raises(TypeError, match="nest deeper"):
        tool_call_arguments("t", nested(100_000))  # no RecursionError, whatever the depth


async def test_the_deepest_arguments_allowed_reach_a_server_built_on_the_reference_sdk() -> None:
    # MAX_DEPTH is chosen for these servers: deeper, their parser could not read the request at all.
    entry = reference_server_entry()
    config = ServerConfig(
        name="reference",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type="stdio",
        command=str(entry["command"]),
        args=tuple(str(arg) for arg in entry["args"]),  # type: ignore[union-attr]
    )
    arguments = tool_call_arguments("echo", {"text": "deep", "extra": nested(MAX_DEPTH - 1)})
    with trio.fail_after(30):
        async with open_connection(
            config, options=TransportOptions(graces=Graces(eof=1, term=1, kill=1))
        ) as connection:
            result = await connection.call_tool("echo", arguments, timeout=10)
    assert not result.is_error and "deep" in result.content[0].text  # type: ignore[union-attr]


def test_a_circular_reference_is_named_as_such() -> None:
    looped: dict[str, Any] = {"list": []}
    looped["list"].append({"back": looped})
    with pytest.raises(TypeError, match="circular reference"):
        tool_call_arguments("t", looped)


def test_shared_containers_are_fine_until_they_would_be_astronomical() -> None:
    shared = [1, 2]
    assert tool_call_arguments("t", {"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}
    doubling: list[Any] = [1]
    for _ in range(60):
        doubling = [doubling, doubling]  # 2**60 containers once written out
    started = time.perf_counter()
    with pytest.raises(TypeError, match=f"more than {MAX_CONTAINERS:,} objects and arrays"):
        tool_call_arguments("t", {"tree": doubling})
    assert time.perf_counter() - started < 5


class Colour(enum.StrEnum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 3


Point = namedtuple("Point", "x y")


def test_mappings_sequences_and_subclasses_of_json_types_become_plain_data() -> None:
    arguments = {
        "proxy": types.MappingProxyType({"k": (1, 2)}),
        "ordered": OrderedDict(a=Point(1, 2)),
        Colour.RED: Size.BIG,
        "flag": True,
    }
    plain = tool_call_arguments("t", arguments)
    assert plain == {"proxy": {"k": [1, 2]}, "ordered": {"a": [1, 2]}, "red": 3, "flag": True}
    assert type(plain["proxy"]) is dict and type(plain["ordered"]["a"]) is list
    assert type(next(key for key in plain if key == "red")) is str and type(plain["red"]) is int
    assert plain["flag"] is True


def test_the_copy_is_the_callers_no_longer() -> None:
    inner = {"text": "before"}
    arguments = {"inner": inner}
    plain = tool_call_arguments("t", arguments)
    inner["text"] = "after"
    assert plain == {"inner": {"text": "before"}}


@pytest.mark.parametrize("name", [None, 1, b"t", ["t"]])
def test_a_tool_name_that_is_not_a_string_is_a_type_error(name: object) -> None:
    with pytest.raises(TypeError, match="a tool name is a string"):
        tool_call_arguments(name, {})


@pytest.mark.parametrize("arguments", [["a"], "text", 1, (("a", 1),)])
def test_arguments_that_are_not_a_mapping_are_a_type_error(arguments: object) -> None:
    with pytest.raises(TypeError, match="must be a JSON object"):
        tool_call_arguments("t", arguments)


def test_no_arguments_are_an_empty_object() -> None:
    assert tool_call_arguments("t", None) == {}


def test_a_huge_key_is_named_briefly() -> None:
    with pytest.raises(TypeError) as raised:
        tool_call_arguments("t", {"k" * 10_000: b"x"})
    assert len(str(raised.value)) < 400
