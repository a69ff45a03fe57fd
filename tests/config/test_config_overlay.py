"""A constructor entry holding only ``tool_timeout_ms`` overlays the same-named lower entry (R-CFG-1, R-CFG-7).

The user guide: a native entry that holds only ``tool_timeout_ms`` (optionally
with ``enabled`` or ``tool_overrides``) changes those fields of the project
server of the same name without replacing its connection definition. The
loaded record keeps the connection's source, origin and fingerprint and names
the overlaid fields in ``constructor_overrides``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wave_actors._config import LoadedConfig, Severity, Source, ToolOverride, load_config

DOCS = {"url": "https://mcp.example.com/mcp", "transport": "http", "headers": {"A": "b"}}


def load(tmp_path: Path, where: Source | None, constructor: dict[str, Any], **kwargs: Any) -> LoadedConfig:
    """Put DOCS as server "docs" in ``where`` (or nowhere) and load with ``constructor``."""
    workdir, home = tmp_path / "project", tmp_path / "home"
    workdir.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    plugins: list[tuple[str, Any]] = []
    if where is Source.PROJECT:
        (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": DOCS}}))
    elif where is Source.USER:
        (home / "mcp.json").write_text(json.dumps({"mcp_servers": {"docs": DOCS}}))
    elif where is Source.PLUGIN:
        plugins.append(("plug", {"docs": DOCS}))
    return load_config(workdir, home=home, constructor=constructor, plugins=plugins, environ={}, **kwargs)


@pytest.mark.parametrize("where", [Source.PROJECT, Source.USER, Source.PLUGIN])
def test_r_cfg_1_timeout_only_constructor_entry_keeps_the_lower_connection(tmp_path: Path, where: Source) -> None:
    """R-CFG-1: only tool_timeout_ms changes; connection, source, origin and fingerprint are the lower entry's."""
    alone = load(tmp_path, where, {}).servers["docs"]
    loaded = load(tmp_path, where, {"docs": {"tool_timeout_ms": 120_000}})
    server = loaded.servers["docs"]
    assert loaded.diagnostics == ()
    assert server.tool_timeout_ms == 120_000
    assert (server.source, server.origin, server.type, server.url, dict(server.headers)) == (
        where,
        alone.origin,
        "http",
        DOCS["url"],
        {"A": "b"},
    )
    assert server.fingerprint == alone.fingerprint
    assert server.constructor_overrides == ("tool_timeout_ms",)
    assert alone.constructor_overrides == ()


def test_r_cfg_1_overlay_may_also_set_enabled_and_tool_overrides(tmp_path: Path) -> None:
    """R-CFG-1: the two optional fields of an overlay."""
    overlay = {"tool_timeout_ms": 5_000, "enabled": False, "tool_overrides": {"search": {"read_only": True}}}
    server = load(tmp_path, Source.PROJECT, {"docs": overlay}).servers["docs"]
    assert (server.tool_timeout_ms, server.enabled) == (5_000, False)
    assert dict(server.tool_overrides) == {"search": ToolOverride(read_only=True)}
    assert server.constructor_overrides == ("enabled", "tool_overrides", "tool_timeout_ms")


def test_r_cfg_1_overlay_keeps_the_lower_fields_it_does_not_name(tmp_path: Path) -> None:
    """R-CFG-1: an overlay without enabled does not re-enable a disabled entry."""
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"docs": {**DOCS, "enabled": False, "tool_overrides": {"t": {"read_only": True}}}}})
    )
    server = load_config(workdir, home=tmp_path, constructor={"docs": {"tool_timeout_ms": 7}}, environ={}).servers[
        "docs"
    ]
    assert (server.enabled, server.tool_timeout_ms, dict(server.tool_overrides)) == (
        False,
        7,
        {"t": ToolOverride(read_only=True)},
    )


def test_r_cfg_1_overlay_goes_to_the_highest_lower_entry(tmp_path: Path) -> None:
    """R-CFG-1: with a project and a user entry, the project's connection is the one kept."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "user-docs"}}}))
    server = load(tmp_path, Source.PROJECT, {"docs": {"tool_timeout_ms": 9}}).servers["docs"]
    assert (server.source, server.url, server.tool_timeout_ms) == (Source.PROJECT, DOCS["url"], 9)


def test_r_cfg_1_overlay_without_a_lower_entry_overrides_nothing(tmp_path: Path) -> None:
    """R-CFG-1: an overlay is not a server of its own; alone, it is an error and nothing loads."""
    loaded = load(tmp_path, None, {"docs": {"tool_timeout_ms": 120_000}, "other": {"command": "x"}})
    assert list(loaded.servers) == ["other"]
    [error] = loaded.diagnostics
    assert (error.severity, error.source, error.server) == (Severity.ERROR, Source.CONSTRUCTOR, "docs")
    assert error.message.startswith("overrides nothing")


def test_r_cfg_1_overlay_of_an_unapproved_project_entry_overrides_nothing(tmp_path: Path) -> None:
    """R-CFG-1 with R-CFG-10: an unapproved project entry is no definition to overlay."""
    loaded = load(tmp_path, Source.PROJECT, {"docs": {"tool_timeout_ms": 1}}, trust="approved")
    assert dict(loaded.servers) == {}
    assert {(d.severity, d.source) for d in loaded.diagnostics} == {
        (Severity.INFO, Source.PROJECT),
        (Severity.ERROR, Source.CONSTRUCTOR),
    }


@pytest.mark.parametrize("value", [0, 1.5, None, "1000", 3_600_001])
def test_r_cfg_7_invalid_overlay_is_an_error_and_the_name_is_not_loaded(tmp_path: Path, value: object) -> None:
    """R-CFG-7: a rejected tool_timeout_ms skips the overlay; as for any invalid winner, the lower entry
    does not silently load with another timeout."""
    loaded = load(tmp_path, Source.PROJECT, {"docs": {"tool_timeout_ms": value}})
    assert dict(loaded.servers) == {}
    assert [(d.severity, d.source, d.field) for d in loaded.diagnostics] == [
        (Severity.ERROR, Source.CONSTRUCTOR, "tool_timeout_ms"),
        (Severity.WARNING, Source.PROJECT, None),
    ]


def test_r_cfg_1_overlay_of_an_invalid_lower_entry_loads_nothing(tmp_path: Path) -> None:
    """R-CFG-1/R-CFG-4: the lower entry's own error is what the user sees."""
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": 5}}}))
    loaded = load_config(workdir, home=tmp_path, constructor={"docs": {"tool_timeout_ms": 7}}, environ={})
    assert dict(loaded.servers) == {}
    assert [(d.source, d.field) for d in loaded.diagnostics] == [(Source.PROJECT, "command")]


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({"tool_timeout_ms": 9, "command": "own"}, id="with-a-connection-field"),
        pytest.param({"tool_timeout_ms": 9, "url": "https://own"}, id="with-a-url"),
    ],
)
def test_r_cfg_1_constructor_entry_with_a_connection_still_wins_whole(tmp_path: Path, entry: dict[str, Any]) -> None:
    """R-CFG-1: only an entry holding nothing but the overlay fields is an overlay."""
    server = load(tmp_path, Source.PROJECT, {"docs": entry}).servers["docs"]
    assert (server.source, server.tool_timeout_ms, server.constructor_overrides) == (Source.CONSTRUCTOR, 9, ())


def test_r_cfg_1_enabled_alone_is_not_an_overlay(tmp_path: Path) -> None:
    """R-CFG-1: the user guide's overlay holds tool_timeout_ms; {"enabled": false} alone is an incomplete entry."""
    loaded = load(tmp_path, Source.PROJECT, {"docs": {"enabled": False}})
    assert "docs" not in loaded.servers
    assert '"command"' in loaded.diagnostics[0].message
