"""Model-visible tool names: ``mcp__{server}__{tool}``, a pure function of the pair; safe, short, unique, exact (R-TOOL-1)."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from wave_actors._tools import assign_names, normalize
from wave_actors._tools.naming import MAX_NAME_LENGTH, MIN_SERVER_CHARS, tool_name

VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
HASHED = re.compile(r"^mcp__(?P<server>.*?)__(?P<tool>.*)_(?P<digest>[0-9a-f]{8})$")
# What the server and tool parts of a hashed name share: 64 - "mcp__" - "__" - "_" - 8 hex digits.
BUDGET = MAX_NAME_LENGTH - 5 - 2 - 9


def plain(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def split_plain(name: str) -> tuple[str, str]:
    """The pair a plain name says: the server ends at the first ``__`` after the prefix."""
    server, _, tool = name.removeprefix("mcp__").partition("__")
    return server, tool


def index_of(pairs: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The way back from each name :func:`assign_names` gives to its pair, as a snapshot's index holds it."""
    return {name: pair for pair, name in assign_names(pairs).items()}


def test_server_and_tool_are_joined_under_the_mcp_prefix() -> None:
    # R-TOOL-1
    assert tool_name("github", "search") == "mcp__github__search"
    assert tool_name("server-everything", "get-tiny-image") == "mcp__server-everything__get-tiny-image"
    assert index_of([("github", "search")]) == {"mcp__github__search": ("github", "search")}


def test_normalize_replaces_every_character_outside_the_safe_set() -> None:
    # R-TOOL-1: one "_" per character, ASCII letters, digits, "_" and "-" kept.
    assert normalize("a.b c/d:é-_Z9") == "a_b_c_d__-_Z9"
    assert normalize("日本") == "__"
    assert normalize("😀") == "_"
    assert normalize("") == ""


def test_a_name_normalization_changed_carries_a_hash_of_the_raw_pair() -> None:
    # R-TOOL-1: "git hub" reads "git_hub"; the hash says which raw pair it was.
    name = tool_name("git hub", "search")
    match = HASHED.match(name)
    assert match is not None and match["server"] == "git_hub" and match["tool"] == "search"
    assert tool_name("git_hub", "search") == "mcp__git_hub__search"


def test_a_server_that_appears_later_never_changes_an_existing_name() -> None:
    # R-TOOL-1: mcp__a_b__x belongs to server "a_b" whether or not a server "a.b" with a tool "x" exists.
    alone = index_of([("a_b", "x")])
    together = index_of([("a_b", "x"), ("a.b", "x")])
    assert alone == {"mcp__a_b__x": ("a_b", "x")}
    assert together["mcp__a_b__x"] == ("a_b", "x")
    assert len(together) == 2


def test_a_name_of_exactly_64_characters_is_kept() -> None:
    # R-TOOL-1: "at most 64" includes 64.
    tool = "t" * (MAX_NAME_LENGTH - len("mcp__srv__"))
    assert tool_name("srv", tool) == f"mcp__srv__{tool}"


def test_a_name_one_character_too_long_keeps_its_tool_and_gets_a_hash() -> None:
    # R-TOOL-1: the server and tool parts share 48 characters; a 3-character server keeps all 3.
    tool = "t" * (MAX_NAME_LENGTH - len("mcp__srv__") + 1)
    name = tool_name("srv", tool)
    assert len(name) == MAX_NAME_LENGTH
    match = HASHED.match(name)
    assert match is not None and match["server"] == "srv" and match["tool"] == tool[: BUDGET - 3]


def test_long_server_names_give_way_before_the_tool_name() -> None:
    # R-TOOL-1: a 39- or 69-character server name no longer crowds out the tool.
    for server in ("s" * 39, "s" * 69):
        name = tool_name(server, "get-annotations-for-file")
        match = HASHED.match(name)
        assert match is not None, name
        assert match["tool"] == "get-annotations-for-file"
        assert match["server"] == server[: BUDGET - len("get-annotations-for-file")]
        assert len(name) <= MAX_NAME_LENGTH


def test_a_long_tool_name_keeps_forty_characters_and_the_server_eight() -> None:
    # R-TOOL-1: past the budget, the server keeps MIN_SERVER_CHARS and the tool the rest.
    name = tool_name("s" * 30, "t" * 80)
    match = HASHED.match(name)
    assert match is not None
    assert match["server"] == "s" * MIN_SERVER_CHARS and match["tool"] == "t" * (BUDGET - MIN_SERVER_CHARS)
    assert len(name) == MAX_NAME_LENGTH


def test_names_are_the_same_in_every_process() -> None:
    # R-TOOL-1: deterministic means a stable hash (sha256), not Python's salted hash().
    assert tool_name("s", "a" * 80) == "mcp__s__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_2b133101"


def test_long_names_sharing_a_prefix_stay_distinct() -> None:
    # R-TOOL-1: the cut parts are equal, the hashes of the raw names are not.
    pairs = [("srv", "x" * 70 + "_read"), ("srv", "x" * 70 + "_write")]
    names = index_of(pairs)
    assert len(names) == 2
    assert sorted(names.values()) == sorted(pairs)
    assert len({name[:55] for name in names}) == 1


def test_colliding_normalizations_get_distinct_names() -> None:
    # R-TOOL-1: "a.b" and "a_b" both normalize to "a_b"; the exact one keeps the plain name.
    names = index_of([("srv", "a_b"), ("srv", "a.b")])
    assert names["mcp__srv__a_b"] == ("srv", "a_b")
    assert sorted(names.values()) == [("srv", "a.b"), ("srv", "a_b")]
    assert all(VALID_NAME.match(name) for name in names)


def test_colliding_server_and_tool_splits_get_distinct_names() -> None:
    # R-TOOL-1: "a__b" + "c" and "a" + "b__c" would both read mcp__a__b__c; only the one that splits back is plain.
    assert tool_name("a", "b__c") == "mcp__a__b__c"
    assert HASHED.match(tool_name("a__b", "c"))
    assert HASHED.match(tool_name("a_", "b"))  # "mcp__a___b" would split as ("a", "_b")
    assert tool_name("a", "_b") == "mcp__a___b"


def test_a_plain_name_that_looks_hashed_is_hashed_too() -> None:
    # R-TOOL-1: so that a server cannot pick a tool name that equals another pair's hashed name.
    lookalike = tool_name("a_b", "x_0123abcd")
    assert lookalike != "mcp__a_b__x_0123abcd"
    assert HASHED.match(lookalike)
    assert tool_name("a_b", "x_0123abcg") == "mcp__a_b__x_0123abcg"


def test_the_same_tool_of_two_servers_gets_two_names() -> None:
    # R-TOOL-1: unique across the session.
    names = index_of([("github", "search"), ("gitlab", "search")])
    assert names == {"mcp__github__search": ("github", "search"), "mcp__gitlab__search": ("gitlab", "search")}


def test_duplicate_pairs_get_one_name() -> None:
    assert index_of([("srv", "tool"), ("srv", "tool")]) == {"mcp__srv__tool": ("srv", "tool")}


def test_no_tools_no_names() -> None:
    assert index_of([]) == {}


def test_a_server_name_with_a_lone_surrogate_can_still_be_hashed() -> None:
    # R-TOOL-1, R-HOST-4: JSON config may spell a lone surrogate ("\ud800"); naming must not raise.
    names = index_of([("\ud800", "t" * 80), ("\ud800", "a.b"), ("\ud800", "a_b")])
    assert len(names) == 3
    assert all(VALID_NAME.match(name) for name in names)


# Properties over arbitrary unicode, lone surrogates included.

characters = st.characters(exclude_categories=())
texts = st.text(characters, max_size=70)
long_texts = st.text(characters, min_size=60, max_size=70)
short_ascii = st.text("ab._- ", max_size=4)
safe = st.text("ab_-019", max_size=30)
names_in = st.one_of(texts, long_texts, short_ascii, safe)
pairs = st.lists(st.tuples(names_in, names_in), max_size=12)


@given(st.tuples(names_in, names_in), pairs, pairs)
def test_a_name_is_a_pure_function_of_server_and_tool(
    pair: tuple[str, str], others: list[tuple[str, str]], more: list[tuple[str, str]]
) -> None:
    # R-TOOL-1: whatever else the session lists, the pair gets the same name.
    expected = tool_name(*pair)
    for company in (others, more, others + more):
        index = assign_names([*company, pair])
        assert index[pair] == expected


@given(pairs)
def test_every_name_is_safe_and_short(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1
    for name in index_of(given_pairs):
        assert VALID_NAME.match(name), name
        assert name.startswith("mcp__")


@given(pairs)
def test_every_pair_gets_exactly_one_name_and_maps_back_exactly(given_pairs: list[tuple[str, str]]) -> None:
    # R-TOOL-1: names are unique (dict keys) and each pair appears once.
    names = index_of(given_pairs)
    assert sorted(names.values()) == sorted(set(given_pairs))


@given(st.tuples(names_in, names_in))
def test_a_plain_name_splits_back_into_its_pair(pair: tuple[str, str]) -> None:
    # R-TOOL-1: plain names are reversible on their own; every other name carries a hash.
    name = tool_name(*pair)
    if HASHED.match(name) is None:
        assert name == plain(*pair)
        assert split_plain(name) == pair


@given(st.tuples(names_in, names_in))
def test_the_plain_form_is_used_exactly_when_it_says_everything(pair: tuple[str, str]) -> None:
    # R-TOOL-1: exact characters, a server part that splits back, at most 64, not hash-like.
    server, tool = pair
    full = plain(server, tool)
    exact = (
        normalize(server) == server
        and normalize(tool) == tool
        and "__" not in server
        and not server.endswith("_")
        and len(full) <= MAX_NAME_LENGTH
        and not re.search(r"_[0-9a-f]{8}$", full)
    )
    assert (tool_name(server, tool) == full) is exact


@given(st.tuples(names_in, names_in))
def test_the_tool_part_survives_shortening_as_far_as_possible(pair: tuple[str, str]) -> None:
    # R-TOOL-1: the server gives way first (down to 8 characters), so up to 40 characters of the tool survive whole.
    server, tool = pair
    name = tool_name(server, tool)
    if name == plain(server, tool):
        return
    server_part, tool_part = normalize(server), normalize(tool)
    tool_kept = min(len(tool_part), BUDGET - min(len(server_part), MIN_SERVER_CHARS))
    assert re.fullmatch(r"_[0-9a-f]{8}", name[-9:])
    assert name[:-9].endswith("__" + tool_part[:tool_kept])
    server_kept = len(name) - len("mcp__") - len("__") - tool_kept - 9
    assert min(len(server_part), MIN_SERVER_CHARS) <= server_kept <= len(server_part)
    assert name.startswith("mcp__" + server_part[:server_kept] + "__")
    if len(server_part) + len(tool_part) <= BUDGET:
        assert (server_kept, tool_kept) == (len(server_part), len(tool_part))
