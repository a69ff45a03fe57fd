"""Fingerprints: what makes two entries the same server (R-CFG-8)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, cast

from hypothesis import given, strategies as st

from wave_actors._config import ServerConfig, Source, connection_fingerprint, server_config

text = st.text(max_size=8)
names = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
string_maps = st.dictionaries(names, text, max_size=4)
stdio_entries = st.fixed_dictionaries(
    {"type": st.just("stdio"), "command": text.filter(bool), "args": st.lists(text, max_size=4), "env": string_maps},
    optional={"cwd": st.sampled_from(["/a", "/b", "rel"])},
)
remote_entries = st.fixed_dictionaries(
    {"type": st.sampled_from(["http", "sse"]), "url": text.filter(bool), "headers": string_maps}
)
entries = st.one_of(stdio_entries, remote_entries)
workdirs = st.sampled_from(["/w/one", "/w/two"])


def fingerprint(entry: dict[str, Any], workdir: str = "/w/one", source: Source = Source.CONSTRUCTOR) -> str:
    return server_config("s", entry, source=source, origin="test", workdir=workdir, environ={}).fingerprint


def shuffled(mapping: dict[str, Any], seed: int) -> dict[str, Any]:
    items = list(mapping.items())
    random.Random(seed).shuffle(items)
    return {
        key: shuffled(cast(dict[str, Any], value), seed) if isinstance(value, dict) else value for key, value in items
    }


def test_fingerprint_is_pinned_so_caches_survive_upgrades() -> None:
    # R-CFG-8/R-CACHE-1: the canonical form must not drift between releases.
    config = ServerConfig("s", Source.CONSTRUCTOR, "c", "stdio", command="node", args=("a",), env={"A": "1"})
    assert connection_fingerprint(config, "/work/project") == "1daac43bdf002ce1"


@given(entries, st.integers())
def test_fingerprint_is_unchanged_by_key_order(entry: dict[str, Any], seed: int) -> None:
    # R-CFG-8: stable hash, independent of how the file orders keys.
    assert fingerprint(shuffled(entry, seed)) == fingerprint(entry)


@given(
    entries,
    st.booleans(),
    st.integers(1, 3_600_000),
    st.dictionaries(names, st.fixed_dictionaries({"read_only": st.booleans()}), max_size=2),
    st.sampled_from(list(Source)),
)
def test_fingerprint_ignores_enabled_timeout_overrides_and_source(
    entry: dict[str, Any], enabled: bool, timeout: int, overrides: dict[str, Any], source: Source
) -> None:
    # R-CFG-8: only connection-relevant fields count. (Plain strings: no ${VAR}
    # here, so file sources expand to the same values.)
    changed = {**entry, "enabled": enabled, "tool_timeout_ms": timeout, "tool_overrides": overrides}
    assert fingerprint(changed, source=source) == fingerprint(entry)


@st.composite
def entry_and_connection_change(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    entry = draw(entries)
    fields = ["command", "args", "env", "cwd"] if entry["type"] == "stdio" else ["type", "url", "headers"]
    field = draw(st.sampled_from(fields))
    strategy: st.SearchStrategy[Any] = {
        "type": st.sampled_from(["http", "sse"]),
        "command": text.filter(bool),
        "args": st.lists(text, max_size=4),
        "env": string_maps,
        "cwd": st.sampled_from(["/a", "/b", "rel"]),
        "url": text.filter(bool),
        "headers": string_maps,
    }[field]
    new_value = draw(strategy.filter(lambda value: value != entry.get(field)))
    return entry, {**entry, field: new_value}


@given(entry_and_connection_change())
def test_fingerprint_changes_with_any_connection_field(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    # R-CFG-8: type, command, args, cwd, url, env, headers.
    before, after = pair
    assert fingerprint(before) != fingerprint(after)


@given(entries)
def test_fingerprint_changes_with_the_workdir(entry: dict[str, Any]) -> None:
    # R-CFG-8: the same entry in another project is another server.
    assert fingerprint(entry, "/w/one") != fingerprint(entry, "/w/two")


def test_fingerprint_uses_the_resolved_workdir(tmp_path: Path) -> None:
    # R-CFG-8: a symlink to the project is the same project.
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    entry = {"command": "x"}
    assert fingerprint(entry, str(tmp_path / "link")) == fingerprint(entry, str(tmp_path / "real"))


def test_streamable_http_and_http_are_the_same_server() -> None:
    # R-CFG-2/R-CFG-8: the alias is resolved before hashing.
    assert fingerprint({"type": "streamable-http", "url": "u"}) == fingerprint({"url": "u"})


def test_fingerprint_is_short_hex() -> None:
    value = fingerprint({"command": "x"})
    assert len(value) == 16 and int(value, 16) >= 0
