"""Project trust mode (R-CFG-10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wave_actors._config import LoadedConfig, Severity, Source, load_config


def setup_project(workdir: Path, settings: object | None) -> None:
    servers = {name: {"command": name} for name in ("alpha", "beta", "gamma")}
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    if settings is not None:
        (workdir / ".wave").mkdir()
        text = settings if isinstance(settings, str) else json.dumps(settings)
        (workdir / ".wave" / "settings.local.json").write_text(text, encoding="utf-8")


def load(workdir: Path, trust: str = "approved", **kwargs: object) -> LoadedConfig:
    return load_config(workdir, home=workdir / "home", trust=trust, environ={}, **kwargs)  # type: ignore[arg-type]


def test_all_mode_is_the_default_and_loads_every_project_entry(tmp_path: Path) -> None:
    # R-CFG-10: default mode "all"; the settings file is not consulted.
    setup_project(tmp_path, {"mcp_json": {"disabled": ["alpha"]}})
    loaded = load_config(tmp_path, home=tmp_path / "home", environ={})
    assert list(loaded.servers) == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize(
    ("settings", "loaded_names"),
    [
        (None, []),
        ({}, []),
        ({"mcp_json": {}}, []),
        ({"mcp_json": {"enabled": ["beta"]}}, ["beta"]),
        ({"mcp_json": {"enabled": ["beta", "not-in-file"]}}, ["beta"]),
        ({"mcp_json": {"enable_all": True}}, ["alpha", "beta", "gamma"]),
        ({"mcp_json": {"enable_all": True, "disabled": ["beta"]}}, ["alpha", "gamma"]),
        ({"mcp_json": {"enabled": ["alpha", "beta"], "disabled": ["alpha"]}}, ["beta"]),
        ({"other": 1, "mcp_json": {"enabled": ["gamma"], "unknown": 1}}, ["gamma"]),
    ],
)
def test_approved_mode_loads_only_approved_project_entries_and_disabled_always_wins(
    tmp_path: Path, settings: object, loaded_names: list[str]
) -> None:
    # R-CFG-10
    setup_project(tmp_path, settings)
    loaded = load(tmp_path)
    assert list(loaded.servers) == loaded_names
    skipped = {d.server for d in loaded.diagnostics}
    assert skipped == {"alpha", "beta", "gamma"} - set(loaded_names)
    for diagnostic in loaded.diagnostics:
        assert (diagnostic.severity, diagnostic.source) == (Severity.INFO, Source.PROJECT)
        assert "not loaded" in diagnostic.message


def test_unapproved_entry_says_how_to_approve_it(tmp_path: Path) -> None:
    # R-CFG-10: a UI can say why the server is missing.
    setup_project(tmp_path, {"mcp_json": {"enabled": ["alpha", "beta"], "disabled": ["beta"]}})
    messages = {d.server: d.message for d in load(tmp_path).diagnostics}
    assert '"mcp_json.enabled"' in messages["gamma"]
    assert '"mcp_json.disabled"' in messages["beta"]


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ("{not json", None),
        ('["alpha"]', None),
        ({"mcp_json": ["alpha"]}, "mcp_json"),
        ({"mcp_json": {"enabled": "alpha"}}, "mcp_json.enabled"),
        ({"mcp_json": {"enabled": ["alpha", 1]}}, "mcp_json.enabled[1]"),
        ({"mcp_json": {"enable_all": "yes"}}, "mcp_json.enable_all"),
        ({"mcp_json": {"enable_all": True, "disabled": None}}, "mcp_json.disabled"),
    ],
)
def test_malformed_settings_approve_nothing_with_a_diagnostic(
    tmp_path: Path, settings: object, field: str | None
) -> None:
    # R-CFG-10/R-CFG-4: when in doubt, run none of the repository's commands.
    setup_project(tmp_path, settings)
    loaded = load(tmp_path)
    assert dict(loaded.servers) == {}
    [error] = [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert error.origin == str(tmp_path.resolve() / ".wave" / "settings.local.json")
    assert error.field == field
    assert "no project server is approved" in error.message


def test_unapproved_project_entry_does_not_shadow_a_user_entry(tmp_path: Path) -> None:
    # R-CFG-10 with R-CFG-1: an unapproved entry is not a definition at all.
    setup_project(tmp_path, None)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "mcp.json").write_text(json.dumps({"mcpServers": {"alpha": {"command": "mine"}}}))
    server = load(tmp_path).servers["alpha"]
    assert (server.source, server.command) == (Source.USER, "mine")


def test_unapproved_project_entries_are_not_validated(tmp_path: Path) -> None:
    # R-CFG-10: untrusted content is neither judged nor expanded.
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": 5}}}))
    loaded = load(tmp_path)
    assert [d.severity for d in loaded.diagnostics] == [Severity.INFO]


def test_trust_mode_does_not_touch_other_sources(tmp_path: Path) -> None:
    # R-CFG-10: only project entries need approval.
    loaded = load(tmp_path, constructor={"c": {"command": "x"}}, plugins=[("p", {"p": {"command": "y"}})])
    assert list(loaded.servers) == ["c", "p"]
    assert loaded.diagnostics == ()


def test_unknown_trust_mode_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="trust"):
        load(tmp_path, trust="some")
