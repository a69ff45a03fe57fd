"""Model-visible tool names: ``mcp__{server}__{tool}``, safe, short, unique, exact (R-TOOL-1)."""

from __future__ import annotations

import re
from random import Random

from hypothesis import given, strategies as st

from wave_actors._tools import assign_names, normalize
from wave_actors._tools.naming import MAX_NAME_LENGTH

VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
HASHED = re.compile(r"^(?P<head>.*)_(?P<digest>[0-9a-f]{7})$")


def plain(server: str, tool: str) -> str:
    return f"mcp__{normalize(server)}__{normalize(tool)}"


def test_server_and_tool_are_joined_under_the_mcp_prefix() -> None:
    # R-TOOL-1
    assert assign_names([("git hub", "search")]) == {"mcp__git_hub__search": ("git hub", "search")}


def test_normalize_replaces_every_character_outside_the_safe_set() -> None:
    # R-TOOL-1: one "_" per character, ASCII letters, digits, "_" and "-" kept.
    assert normalize("a.b c/d:é-_Z9") == "a_b_c_d__-_Z9"
    assert normalize("日本") == "__"
    assert normalize("😀") == "_"
    assert normalize("") == ""


def test_a_name_of_exactly_64_characters_is_kept() -> None:
    # R-TOOL-1: "at most 64" includes 64.
    tool = "t" * (MAX_NAME_LENGTH - len("mcp__srv__"))
    assert list(assign_names([("srv", tool)])) == [f"mcp__srv__{tool}"]


def test_a_long_name_is_cut_to_64_with_a_hash_suffix() -> None:
    # R-TOOL-1
    tool = "t" * (MAX_NAME_LENGTH - len("mcp__srv__") + 1)
    [name] = assign_names([("srv", tool)])
    assert len(name) == MAX_NAME_LENGTH
    match = HASHED.match(name)
    assert match is not None
    assert match["head"] == plain("srv", tool)[: MAX_NAME_LENGTH - 8]


def test_long_names_are_shortened_the_same_way_in_every_process() -> None:
    # R-TOOL-1: deterministic means a stable hash (sha256), not Python's salted hash().
    names = assign_names([("s", "a" * 80)])
    assert list(names) == ["mcp__s__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_c067784"]


def test_long_names_sharing_a_prefix_stay_distinct() -> None:
    # R-TOOL-1: the cut parts are equal, the hashes of the raw names are not.
    pairs = [("srv", "x" * 70 + "_read"), ("srv", "x" * 70 + "_write")]
    names = assign_names(pairs)
    assert len(names) == 2
    assert sorted(names.values()) == sorted(pairs)
    assert len({name[:56] for name in names}) == 1


def test_colliding_normalizations_get_distinct_names() -> None:
    # R-TOOL-1: "a.b" and "a_b" both normalize to "a_b".
    names = assign_names([("srv", "a_b"), ("srv", "a.b")])
    assert len(names) == 2
    assert sorted(names.values()) == [("srv", "a.b"), ("srv", "a_b")]
    assert all(VALID_NAME.match(name) for name in names)
    # The first in sorted order keeps the plain name; the other is told apart by a hash.
    assert names["mcp__srv__a_b"] == ("srv", "a.b")


def test_colliding_server_and_tool_splits_get_distinct_names() -> None:
    # R-TOOL-1: "a__b" + "c" and "a" + "b__c" both read mcp__a__b__c.
    names = assign_names([("a__b", "c"), ("a", "b__c")])
    assert sorted(names.values()) == [("a", "b__c"), ("a__b", "c")]


def test_the_same_tool_of_two_servers_gets_two_names() -> None:
    # R-TOOL-1: unique across the session.
    names = assign_names([("github", "search"), ("gitlab", "search")])
    assert names == {"mcp__github__search": ("github", "search"), "mcp__gitlab__search": ("gitlab", "search")}


def test_duplicate_pairs_get_one_name() -> None:
    assert assign_names([("srv", "tool"), ("srv", "tool")]) == {"mcp__srv__tool": ("srv", "tool")}


def test_no_tools_no_names() -> None:
    assert assign_names([]) == {}


def test_a_server_name_with_a_lone_surrogate_can_still_be_hashed() -> None:
    # R-TOOL-1, R-HOST-4: JSON config may spell a lone surrogate ("\ud800"); naming must not raise.
    names = assign_names([("\ud800", "t" * 80), ("\ud800", "a.b"), ("\ud800", "a_b")])
    assert len(names) == 3
    assert all(VALID_NAME.match(name) for name in names)


# Properties over arbitrary unicode, lone surrogates included.

characters = st.characters(exclude_categories=())
texts = st.text(characters, max_size=70)
long_texts = st.text(characters, min_size=60, max_size=70)
short_ascii = st.text("ab._- ", max_size=4)
names_in = st.one_of(texts, long_texts, short_ascii)
pairs = st.lists(st.tuples(names_in, names_in), max_size=12)


@given(pairs)
def test_every_name_is_safe_and_short(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1
    for name in assign_names(given_pairs):
        assert VALID_NAME.match(name), name
        assert name.startswith("mcp__")


@given(pairs)
def test_every_pair_gets_exactly_one_name_and_maps_back_exactly(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1: names are unique (dict keys) and each pair appears once.
    names = assign_names(given_pairs)
    assert sorted(names.values()) == sorted(set(given_pairs))


@given(pairs, st.randoms(use_true_random=False))
def test_names_do_not_depend_on_input_order(given_pairs: list[tuple[str, str]], random: Random) -> None:
    # R-TOOL-1: the same tools get the same names, whatever order servers connected in.
    shuffled = list(given_pairs)
    random.shuffle(shuffled)
    assert dict(assign_names(given_pairs)) == dict(assign_names(shuffled))


@given(pairs)
def test_every_name_keeps_as_much_of_its_plain_form_as_fits(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1: a name that fits is used as is unless taken; otherwise it is cut and given a hash.
    for name, (server, tool) in assign_names(given_pairs).items():
        full = plain(server, tool)
        if name != full:
            match = HASHED.match(name)
            assert match is not None, name
            assert match["head"] == full[: MAX_NAME_LENGTH - 8]


@given(st.lists(st.tuples(short_ascii, short_ascii), max_size=12))
def test_names_that_fit_and_do_not_collide_are_plain(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1
    unique = set(given_pairs)
    if len({plain(server, tool) for server, tool in unique}) == len(unique):
        assert {name: pair for name, pair in assign_names(unique).items()} == {
            plain(server, tool): (server, tool) for server, tool in unique
        }


@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=6))
def test_long_names_are_exactly_64_characters(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1
    for name, (server, tool) in assign_names(given_pairs).items():
        if len(plain(server, tool)) > MAX_NAME_LENGTH:
            assert len(name) == MAX_NAME_LENGTH
