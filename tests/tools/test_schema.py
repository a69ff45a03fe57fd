"""Input-schema sanitizing: keywords go, names and data stay (R-TOOL-2)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, cast

from hypothesis import given, strategies as st

from wave_actors._tools import sanitize_schema
from wave_actors._tools.schema import DEFAULT_DROPPED_KEYWORDS

DROPPED = ("$schema", "exclusiveMinimum", "exclusiveMaximum")

# Keywords whose value maps *names* (of properties, definitions) to schemas or name lists.
NAME_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependentRequired", "dependencies"}
)
# Keywords whose value is a JSON instance, not a schema.
DATA = frozenset({"const", "enum", "default", "examples"})


def test_the_default_list_is_the_three_keywords_of_the_spec() -> None:
    # R-TOOL-2
    assert frozenset(DROPPED) == DEFAULT_DROPPED_KEYWORDS


def test_top_level_keywords_are_dropped() -> None:
    # R-TOOL-2
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": 0,
        "exclusiveMaximum": 10,
    }
    assert sanitize_schema(schema) == {"type": "integer", "minimum": 0}


def test_keywords_are_dropped_at_any_depth() -> None:
    # R-TOOL-2: properties, items (one schema or a list), combinators, not, $defs, definitions.
    bound = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "$schema": "x"}
    clean = {"type": "number"}
    schema = {
        "type": "object",
        "properties": {
            "ratio": bound,
            "nested": {"type": "object", "properties": {"deep": bound}, "additionalProperties": bound},
            "list": {"type": "array", "items": bound, "prefixItems": [bound, bound]},
            "tuple": {"type": "array", "items": [bound]},
            "either": {"anyOf": [bound, {"type": "null"}], "oneOf": [bound], "allOf": [bound], "not": bound},
            "ref": {"$ref": "#/$defs/unit"},
        },
        "patternProperties": {"^x-": bound},
        "$defs": {"unit": bound},
        "definitions": {"old": bound},
        "if": bound,
        "then": bound,
        "else": bound,
    }
    assert sanitize_schema(schema) == {
        "type": "object",
        "properties": {
            "ratio": clean,
            "nested": {"type": "object", "properties": {"deep": clean}, "additionalProperties": clean},
            "list": {"type": "array", "items": clean, "prefixItems": [clean, clean]},
            "tuple": {"type": "array", "items": [clean]},
            "either": {"anyOf": [clean, {"type": "null"}], "oneOf": [clean], "allOf": [clean], "not": clean},
            "ref": {"$ref": "#/$defs/unit"},
        },
        "patternProperties": {"^x-": clean},
        "$defs": {"unit": clean},
        "definitions": {"old": clean},
        "if": clean,
        "then": clean,
        "else": clean,
    }


def test_properties_named_like_dropped_keywords_are_kept() -> None:
    # R-TOOL-2: a tool may take an argument called "$schema"; only its own keywords go.
    schema = {
        "type": "object",
        "properties": {
            "$schema": {"type": "string", "$schema": "x"},
            "exclusiveMinimum": {"type": "number", "exclusiveMinimum": 0},
            "exclusiveMaximum": {"type": "number"},
        },
        "required": ["$schema", "exclusiveMinimum"],
        "$defs": {"$schema": {"type": "string"}},
    }
    assert sanitize_schema(schema) == {
        "type": "object",
        "properties": {
            "$schema": {"type": "string"},
            "exclusiveMinimum": {"type": "number"},
            "exclusiveMaximum": {"type": "number"},
        },
        "required": ["$schema", "exclusiveMinimum"],
        "$defs": {"$schema": {"type": "string"}},
    }


def test_dependencies_keyed_by_property_names_are_kept() -> None:
    # R-TOOL-2: dependentRequired and (draft 7) dependencies are keyed by property names, not keywords.
    schema = {
        "type": "object",
        "properties": {"$schema": {"type": "string"}, "version": {"type": "integer"}},
        "dependentRequired": {"$schema": ["version"]},
        "dependentSchemas": {"$schema": {"required": ["version"], "$schema": "x"}},
        "dependencies": {"exclusiveMinimum": ["version"], "$schema": {"exclusiveMaximum": 3}},
    }
    assert sanitize_schema(schema) == {
        "type": "object",
        "properties": {"$schema": {"type": "string"}, "version": {"type": "integer"}},
        "dependentRequired": {"$schema": ["version"]},
        "dependentSchemas": {"$schema": {"required": ["version"]}},
        "dependencies": {"exclusiveMinimum": ["version"], "$schema": {}},
    }


def test_values_of_const_enum_default_and_examples_are_data_and_kept() -> None:
    # R-TOOL-2 drops *keywords*: an instance that happens to have a "$schema" key is not a schema.
    # Dropping it would tell the model a different constant than the server accepts.
    data = {"$schema": "https://example.com/v1", "exclusiveMinimum": 3}
    schema = {
        "type": "object",
        "properties": {
            "document": {"type": "object", "const": data, "default": data, "examples": [data]},
            "mode": {"enum": [data, "plain"]},
        },
        "default": {"document": data},
    }
    assert sanitize_schema(schema) == schema


def test_the_input_is_not_modified() -> None:
    # R-TOOL-2: sanitizing happens per declaration; the tool record keeps what the server sent.
    schema: dict[str, Any] = {
        "$schema": "x",
        "properties": {"n": {"exclusiveMinimum": 0, "anyOf": [{"exclusiveMaximum": 1}]}},
        "const": {"a": [1, {"b": 2}]},
    }
    before = copy.deepcopy(schema)
    result = sanitize_schema(schema)
    assert schema == before
    # Nor does the result share anything mutable with it.
    result["properties"]["n"]["anyOf"].append("x")
    result["const"]["a"][1]["b"] = 3
    assert schema == before


def test_read_only_mappings_are_accepted() -> None:
    # Tool records hold their schema as a MappingProxyType.
    schema = MappingProxyType({"$schema": "x", "properties": MappingProxyType({"a": {"exclusiveMinimum": 1}})})
    assert sanitize_schema(schema) == {"properties": {"a": {}}}


def test_the_dropped_list_is_configurable() -> None:
    # R-TOOL-2: "(configurable list)".
    schema = {"$schema": "x", "type": "string", "format": "uri", "properties": {"format": {"format": "date"}}}
    assert sanitize_schema(schema, ["format"]) == {"$schema": "x", "type": "string", "properties": {"format": {}}}
    assert sanitize_schema(schema, []) == schema


# Properties over generated schemas.

KEYWORDS = [*DROPPED, "type", "minimum", "description", "format", "title"]
NAMES = [*DROPPED, "a", "b", "type"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "number", "$schema"]))
json_data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES + KEYWORDS), inner, max_size=3),
    max_leaves=8,
)


def extend_schemas(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    name_map = st.dictionaries(st.sampled_from(NAMES), inner, max_size=2)
    entries = st.one_of(
        st.tuples(st.sampled_from(["properties", "patternProperties", "$defs", "dependentSchemas"]), name_map),
        st.tuples(st.just("dependentRequired"), st.dictionaries(st.sampled_from(NAMES), st.just(["a"]), max_size=2)),
        st.tuples(st.sampled_from(["items", "additionalProperties", "not"]), inner),
        st.tuples(st.sampled_from(["anyOf", "allOf", "oneOf", "prefixItems", "items"]), st.lists(inner, max_size=2)),
        st.tuples(st.sampled_from(sorted(DATA)), json_data),
        st.tuples(st.sampled_from(KEYWORDS), scalars),
    )
    return st.lists(entries, max_size=4).map(dict)


leaf_schemas = st.dictionaries(st.sampled_from(KEYWORDS), scalars, max_size=4)
schemas = st.recursive(leaf_schemas, extend_schemas, max_leaves=12)
dropped_lists = st.sampled_from([DROPPED, ("format",), (), ("type", "$schema")])


def keywords(schema: Mapping[str, Any]) -> Iterator[str]:
    """Every keyword used at a schema position, at any depth."""
    for key, value in schema.items():
        yield key
        if key in DATA:
            continue
        if key in NAME_MAPS and isinstance(value, Mapping):
            subschemas = list(cast("Mapping[str, Any]", value).values())
        else:
            subschemas = [value]
        for subschema in subschemas:
            items = cast("list[Any]", subschema) if isinstance(subschema, list) else [subschema]
            for item in items:
                if isinstance(item, Mapping):
                    yield from keywords(cast("Mapping[str, Any]", item))


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every scalar (or empty container) in ``value``, with its path."""
    children: list[tuple[Any, Any]]
    if isinstance(value, Mapping):
        children = list(cast("Mapping[Any, Any]", value).items())
    elif isinstance(value, list):
        children = list(enumerate(cast("list[Any]", value)))
    else:
        yield path, value
        return
    if not children:
        yield path, value
    for key, item in children:
        yield from leaves(item, (*path, key))


@given(schemas, dropped_lists)
def test_no_dropped_keyword_is_left_as_a_keyword(schema: dict[str, Any], dropped: tuple[str, ...]) -> None:
    # R-TOOL-2
    assert not set(keywords(sanitize_schema(schema, dropped))) & set(dropped)


@given(schemas, dropped_lists)
def test_sanitizing_is_idempotent(schema: dict[str, Any], dropped: tuple[str, ...]) -> None:
    once = sanitize_schema(schema, dropped)
    assert sanitize_schema(once, dropped) == once


@given(schemas, dropped_lists)
def test_sanitizing_only_removes(schema: dict[str, Any], dropped: tuple[str, ...]) -> None:
    # Nothing is renamed, reordered or invented; the input is left as it was.
    before = copy.deepcopy(schema)
    result = sanitize_schema(schema, dropped)
    assert schema == before
    original = dict(leaves(schema))
    for path, value in leaves(result):
        if value in ({}, []):
            continue  # an emptied container
        assert original[path] == value


@given(schemas)
def test_a_schema_without_dropped_keywords_is_unchanged(schema: dict[str, Any]) -> None:
    # R-TOOL-2: keeps names and data, whatever they are called.
    if not set(keywords(schema)) & set(DROPPED):
        assert sanitize_schema(schema) == schema
