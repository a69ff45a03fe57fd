"""Properties of source precedence (R-CFG-1)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import attrs
from hypothesis import given, settings, strategies as st

from wave_actors._config import LoadedConfig, Source, load_config
from wave_actors._config.merge import pick_winners

SOURCES = list(Source)
server_names = st.sampled_from(["alpha", "beta", "gamma", "delta"])


@attrs.frozen
class Definition:
    name: str
    source: Source
    tag: int


definitions = st.lists(st.builds(Definition, server_names, st.sampled_from(SOURCES), st.integers()), max_size=12)


@given(definitions)
def test_winner_is_the_first_definition_from_the_highest_source(given_definitions: list[Definition]) -> None:
    # R-CFG-1: precedence is a total order; ties (plugins) go to the first.
    winners = pick_winners(given_definitions)
    assert set(winners) == {d.name for d in given_definitions}
    for name, winner in winners.items():
        mine = [d for d in given_definitions if d.name == name]
        best = min(d.source.precedence for d in mine)
        assert winner is next(d for d in mine if d.source.precedence == best)


@given(definitions, definitions)
def test_unrelated_names_never_change_each_other(ours: list[Definition], theirs: list[Definition]) -> None:
    # R-CFG-1: adding or removing other names' definitions leaves a name's winner alone.
    our_names = {d.name for d in ours}
    unrelated = [d for d in theirs if d.name not in our_names]
    alone = pick_winners(ours)
    for mixed in (ours + unrelated, unrelated + ours):
        together = pick_winners(mixed)
        assert {name: together[name] for name in our_names} == alone


# End to end, through real files -----------------------------------------------

presence = st.dictionaries(server_names, st.sets(st.sampled_from(SOURCES), min_size=1), max_size=4)


def load_with(definitions: dict[str, set[Source]], directory: Path) -> LoadedConfig:
    """Each source defines the names assigned to it, with its own command."""
    workdir, home = directory / "project", directory / "home"
    workdir.mkdir()
    home.mkdir()

    def entries(source: Source) -> dict[str, dict[str, object]]:
        return {
            name: {"command": f"{source.value}-{name}", "tool_timeout_ms": source.precedence + 1}
            for name, sources in definitions.items()
            if source in sources
        }

    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": entries(Source.PROJECT)}))
    (home / "mcp.json").write_text(json.dumps({"mcp_servers": entries(Source.USER)}))
    return load_config(
        workdir,
        home=home,
        constructor=entries(Source.CONSTRUCTOR),
        plugins=[("plug", entries(Source.PLUGIN))],
        environ={},
    )


@settings(max_examples=40, deadline=None)
@given(presence)
def test_loaded_entry_is_the_whole_entry_of_the_highest_source_present(definitions: dict[str, set[Source]]) -> None:
    # R-CFG-1: for any assignment of names to sources, the highest source wins whole.
    with tempfile.TemporaryDirectory() as directory:
        loaded = load_with(definitions, Path(directory))
    assert loaded.diagnostics == ()
    assert set(loaded.servers) == set(definitions)
    for name, sources in definitions.items():
        winner = min(sources, key=lambda source: source.precedence)
        server = loaded.servers[name]
        assert (server.source, server.command, server.tool_timeout_ms) == (
            winner,
            f"{winner.value}-{name}",
            winner.precedence + 1,
        )


@settings(max_examples=25, deadline=None)
@given(presence, presence)
def test_loaded_entry_does_not_depend_on_other_names(
    ours: dict[str, set[Source]], theirs: dict[str, set[Source]]
) -> None:
    # R-CFG-1: entries with unrelated names never change each other.
    unrelated = {name: sources for name, sources in theirs.items() if name not in ours}
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        alone = load_with(ours, Path(one))
        together = load_with({**ours, **unrelated}, Path(two))
    for name in ours:
        assert attrs.evolve(together.servers[name], origin="", fingerprint="") == attrs.evolve(
            alone.servers[name], origin="", fingerprint=""
        )
