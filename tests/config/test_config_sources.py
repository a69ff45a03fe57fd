"""Configuration sources, precedence and malformed files (R-CFG-1, R-CFG-2, R-CFG-4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from config_support import Layout, write

from wave_actors._config import Severity, Source, load_config


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    return Layout(tmp_path / "project", tmp_path / "home")


def test_no_files_and_no_entries_is_an_empty_config_without_diagnostics(layout: Layout) -> None:
    # R-CFG-4: a missing user (or project) file is fine.
    loaded = layout.load()
    assert dict(loaded.servers) == {}
    assert loaded.diagnostics == ()
    assert loaded.workdir == str(layout.workdir.resolve())


def test_home_defaults_to_dot_wave_in_the_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # R-CFG-1: the user file is ~/.wave/mcp.json.
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".wave").mkdir()
    write(tmp_path / ".wave" / "mcp.json", {"mcpServers": {"mine": {"command": "mine"}}})
    loaded = load_config(tmp_path, environ={})
    assert loaded.servers["mine"].source is Source.USER


def test_each_source_is_read(layout: Layout) -> None:
    # R-CFG-1: constructor, project file, user file and plugins all contribute.
    write(layout.project_file, {"mcpServers": {"from-project": {"command": "p"}}})
    write(layout.user_file, {"mcpServers": {"from-user": {"command": "u"}}})
    loaded = layout.load(
        constructor={"from-constructor": {"command": "c"}},
        plugins=[("a-plugin", {"from-plugin": {"command": "x"}})],
    )
    assert {name: server.source for name, server in loaded.servers.items()} == {
        "from-constructor": Source.CONSTRUCTOR,
        "from-project": Source.PROJECT,
        "from-user": Source.USER,
        "from-plugin": Source.PLUGIN,
    }
    assert loaded.servers["from-constructor"].origin == "constructor"
    assert loaded.servers["from-project"].origin == str(layout.project_file.resolve())
    assert loaded.servers["from-user"].origin == str(layout.user_file)
    assert loaded.servers["from-plugin"].origin == "a-plugin"
    assert loaded.diagnostics == ()


def test_higher_source_wins_whole_entry(layout: Layout) -> None:
    # R-CFG-1: same name, the higher source's entry is taken whole: no field of
    # the lower one (args, env, tool_timeout_ms) survives.
    write(
        layout.user_file,
        {"mcpServers": {"db": {"command": "user-db", "args": ["--x"], "env": {"A": "1"}, "tool_timeout_ms": 5}}},
    )
    write(layout.project_file, {"mcpServers": {"db": {"command": "project-db"}}})
    server = layout.load().servers["db"]
    assert (server.source, server.command, server.args, dict(server.env), server.tool_timeout_ms) == (
        Source.PROJECT,
        "project-db",
        (),
        {},
        30_000,
    )


@pytest.mark.parametrize(
    ("present", "winner"),
    [
        ({"constructor", "project", "user", "plugin"}, Source.CONSTRUCTOR),
        ({"project", "user", "plugin"}, Source.PROJECT),
        ({"user", "plugin"}, Source.USER),
        ({"plugin"}, Source.PLUGIN),
        ({"constructor", "plugin"}, Source.CONSTRUCTOR),
    ],
)
def test_precedence_is_constructor_then_project_then_user_then_plugins(
    layout: Layout, present: set[str], winner: Source
) -> None:
    # R-CFG-1
    entry = {"command": "x"}
    if "project" in present:
        write(layout.project_file, {"mcpServers": {"s": entry}})
    if "user" in present:
        write(layout.user_file, {"mcpServers": {"s": entry}})
    loaded = layout.load(
        constructor={"s": entry} if "constructor" in present else None,
        plugins=[("plug", {"s": entry})] if "plugin" in present else (),
    )
    assert loaded.servers["s"].source is winner


def test_first_plugin_wins_among_plugins_and_the_other_is_warned_about(layout: Layout) -> None:
    # R-CFG-1: plugins share a precedence; the order given by the host decides.
    loaded = layout.load(plugins=[("first", {"s": {"url": "http://one"}}), ("second", {"s": {"url": "http://two"}})])
    assert loaded.servers["s"].url == "http://one"
    [warning] = loaded.diagnostics
    assert (warning.severity, warning.origin, warning.server) == (Severity.WARNING, "second", "s")


def test_invalid_winner_hides_the_name_instead_of_falling_back(layout: Layout) -> None:
    # R-CFG-1/R-CFG-4: the higher entry wins whole even when invalid, so the
    # name is absent (with an error) rather than silently the user's server.
    write(layout.user_file, {"mcpServers": {"s": {"command": "user-s"}}})
    write(layout.project_file, {"mcpServers": {"s": {"command": "project-s", "tool_timeout_ms": 0}}})
    loaded = layout.load()
    assert "s" not in loaded.servers
    severities = {(d.source, d.severity) for d in loaded.diagnostics}
    assert severities == {(Source.PROJECT, Severity.ERROR), (Source.USER, Severity.WARNING)}


@pytest.mark.parametrize("key", ["mcpServers", "mcp_servers"])
def test_both_top_level_keys_are_accepted(layout: Layout, key: str) -> None:
    # R-CFG-2
    write(layout.project_file, {key: {"s": {"command": "x"}}})
    loaded = layout.load()
    assert list(loaded.servers) == ["s"]
    assert loaded.diagnostics == ()


def test_mcp_servers_key_wins_over_its_alias_with_a_warning(layout: Layout) -> None:
    # R-CFG-2: both keys present is ambiguous; mcpServers is used, never merged.
    write(layout.project_file, {"mcpServers": {"a": {"command": "x"}}, "mcp_servers": {"b": {"command": "y"}}})
    loaded = layout.load()
    assert list(loaded.servers) == ["a"]
    [warning] = loaded.diagnostics
    assert (warning.severity, warning.field) == (Severity.WARNING, "mcp_servers")


def test_other_top_level_keys_are_ignored(layout: Layout) -> None:
    # R-CFG-2: a file may carry other settings (R-STORE-1 keeps them).
    write(layout.user_file, {"theme": "dark", "mcpServers": {"s": {"command": "x"}}})
    loaded = layout.load()
    assert list(loaded.servers) == ["s"] and loaded.diagnostics == ()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"mcpServers": {"s": {"command": "x"},}}', "not valid JSON"),
        ("", "not valid JSON"),
        ("[]", "top level must be a JSON object"),
        ('"mcpServers"', "top level must be a JSON object"),
        ('{"mcpServers": []}', '"mcpServers" must be an object'),
        ('{"mcpServers": null}', '"mcpServers" must be an object'),
        ('{"mcp_servers": "s"}', '"mcp_servers" must be an object'),
    ],
)
def test_malformed_file_is_skipped_with_a_diagnostic_and_others_load(layout: Layout, content: str, reason: str) -> None:
    # R-CFG-4: bad JSON or wrong shape skips that source only.
    layout.project_file.write_text(content, encoding="utf-8")
    write(layout.user_file, {"mcpServers": {"from-user": {"command": "u"}}})
    loaded = layout.load(constructor={"from-constructor": {"command": "c"}})
    assert set(loaded.servers) == {"from-user", "from-constructor"}
    [error] = loaded.diagnostics
    assert error.severity is Severity.ERROR
    assert error.source is Source.PROJECT
    assert error.origin == str(layout.project_file.resolve())
    assert reason in error.message and "skipped" in error.message


def test_malformed_user_file_does_not_prevent_the_project_file(layout: Layout) -> None:
    # R-CFG-4
    layout.user_file.write_text("{nope", encoding="utf-8")
    write(layout.project_file, {"mcpServers": {"p": {"command": "p"}}})
    loaded = layout.load()
    assert list(loaded.servers) == ["p"]
    assert [(d.source, d.severity) for d in loaded.diagnostics] == [(Source.USER, Severity.ERROR)]
    assert "line 1" in loaded.diagnostics[0].message


def test_file_that_is_not_utf8_is_skipped_with_a_diagnostic(layout: Layout) -> None:
    # R-CFG-4
    layout.user_file.write_bytes(b'{"mcpServers": {"\xff": {}}}')
    loaded = layout.load()
    assert "UTF-8" in loaded.diagnostics[0].message


def test_byte_order_mark_is_tolerated(layout: Layout) -> None:
    # R-CFG-4: editors on Windows write one; it is not worth rejecting a file for.
    layout.user_file.write_bytes(b"\xef\xbb\xbf" + json.dumps({"mcpServers": {"s": {"command": "x"}}}).encode())
    assert list(layout.load().servers) == ["s"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files regardless of mode bits")
def test_unreadable_file_is_skipped_with_a_diagnostic(layout: Layout) -> None:
    # R-CFG-4
    write(layout.user_file, {"mcpServers": {"s": {"command": "x"}}})
    layout.user_file.chmod(0)
    try:
        loaded = layout.load()
    finally:
        layout.user_file.chmod(0o600)
    assert dict(loaded.servers) == {}
    assert "cannot be read" in loaded.diagnostics[0].message


def test_bad_entry_is_skipped_and_the_rest_of_its_file_loads(layout: Layout) -> None:
    # R-CFG-4: a bad entry costs only itself.
    write(layout.project_file, {"mcpServers": {"bad": {"command": 5}, "good": {"command": "x"}}})
    loaded = layout.load()
    assert list(loaded.servers) == ["good"]
    [error] = loaded.diagnostics
    assert (error.server, error.field, error.severity) == ("bad", "command", Severity.ERROR)
    assert "got 5" in error.message


def test_invalid_constructor_and_plugin_entries_are_diagnostics_not_exceptions(layout: Layout) -> None:
    # R-CFG-4: "never raise out of startup for config" includes the host's own entries.
    loaded = layout.load(
        constructor={"c": {"args": "not a list"}},
        plugins=[("plug", {"p": []}), ("broken", [])],  # type: ignore[list-item]
    )
    assert dict(loaded.servers) == {}
    assert {(d.source, d.origin) for d in loaded.diagnostics} == {
        (Source.CONSTRUCTOR, "constructor"),
        (Source.PLUGIN, "plug"),
        (Source.PLUGIN, "broken"),
    }


@pytest.mark.parametrize("key", ["mcpServers", "mcp_servers"])
def test_a_plugin_may_pass_its_file_as_it_is_with_the_servers_wrapped(layout: Layout, key: str) -> None:
    # R-CFG-2: a plugin's .mcp.json (or manifest) wraps its servers; the document is read as a file is.
    document = {key: {"d": {"command": "x"}, "e": {"url": "http://e"}}, "name": "plug", "version": "1.0"}
    loaded = layout.load(plugins=[("plug", document), ("bare", {"f": {"command": "y"}})])

    assert {name: (server.source, server.origin) for name, server in loaded.servers.items()} == {
        "d": (Source.PLUGIN, "plug"),
        "e": (Source.PLUGIN, "plug"),
        "f": (Source.PLUGIN, "bare"),
    }
    assert loaded.diagnostics == ()


def test_a_plugin_document_with_both_keys_or_no_servers_object_is_told_like_a_file(layout: Layout) -> None:
    # R-CFG-2, R-CFG-4: the same rules and words as a file, naming the plugin; never a server "mcpServers".
    loaded = layout.load(
        plugins=[
            ("both", {"mcpServers": {"d": {"command": "x"}}, "mcp_servers": {"e": {"command": "x"}}}),
            ("wrong", {"mcpServers": ["d"]}),
        ]
    )

    assert list(loaded.servers) == ["d"]
    [warning, error] = loaded.diagnostics
    assert (warning.severity, warning.origin, warning.field) == (Severity.WARNING, "both", "mcp_servers")
    assert (error.severity, error.origin, error.field) == (Severity.ERROR, "wrong", "mcpServers")
    assert "the plugin was skipped" in error.message


def test_servers_are_listed_in_precedence_then_file_order(layout: Layout) -> None:
    # R-CFG-1: a stable order for listings.
    write(layout.project_file, {"mcpServers": {"p2": {"command": "x"}, "p1": {"command": "x"}}})
    write(layout.user_file, {"mcpServers": {"u": {"command": "x"}, "p1": {"command": "x"}}})
    loaded = layout.load(constructor={"c": {"command": "x"}}, plugins=[("plug", {"z": {"command": "x"}})])
    assert list(loaded.servers) == ["c", "p2", "p1", "u", "z"]


def test_loaded_servers_cannot_be_mutated(layout: Layout) -> None:
    loaded = layout.load(constructor={"c": {"command": "x"}})
    with pytest.raises(TypeError):
        loaded.servers["d"] = loaded.servers["c"]  # type: ignore[index]
