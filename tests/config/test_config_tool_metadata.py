"""What an entry may say about its server and tools beyond the connection (R-TOOL-8, R-WS-3).

``tool_overrides`` may set ``read_only``, ``concurrency_safe``, ``capability``
and ``guidance`` per tool; ``description`` says what the server is for. Each is
type-checked like every other field: a wrong type skips the entry with a
diagnostic naming the field, an unknown setting is a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wave_actors._config import ServerConfig, Severity, Source, ToolOverride, load_config, server_config


def build(entry: dict[str, Any], *, workdir: str = "/work") -> ServerConfig:
    return server_config("srv", entry, source=Source.CONSTRUCTOR, origin="test", workdir=workdir, environ={})


def test_tool_overrides_carry_concurrency_capability_and_guidance() -> None:
    overrides = {
        "search": {"read_only": True, "concurrency_safe": True, "capability": "web.read", "guidance": "Cite sources."},
        "write": {"concurrency_safe": False},
    }
    server = build({"command": "x", "tool_overrides": overrides})
    assert dict(server.tool_overrides) == {
        "search": ToolOverride(read_only=True, concurrency_safe=True, capability="web.read", guidance="Cite sources."),
        "write": ToolOverride(concurrency_safe=False),
    }


def test_unset_tool_override_settings_are_none() -> None:
    assert build({"command": "x", "tool_overrides": {"t": {}}}).tool_overrides["t"] == ToolOverride(
        read_only=None, concurrency_safe=None, capability=None, guidance=None
    )


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("concurrency_safe", "yes"),
        ("concurrency_safe", 1),
        ("capability", ["files.read"]),
        ("capability", 3),
        ("guidance", {"text": "x"}),
        ("guidance", False),
    ],
)
def test_wrong_type_of_a_tool_override_setting_skips_the_entry_naming_it(
    tmp_path: Path, setting: str, value: object
) -> None:
    loaded = load_config(
        tmp_path, home=tmp_path, constructor={"srv": {"command": "x", "tool_overrides": {"t": {setting: value}}}}
    )
    assert "srv" not in loaded.servers
    [error] = [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert error.field == f"tool_overrides['t'].{setting}"
    assert "expected" in error.message and "skipped" in error.message


def test_unknown_tool_override_setting_is_a_warning_listing_the_known_ones(tmp_path: Path) -> None:
    loaded = load_config(
        tmp_path, home=tmp_path, constructor={"srv": {"command": "x", "tool_overrides": {"t": {"parallel": True}}}}
    )
    assert "srv" in loaded.servers
    [warning] = loaded.diagnostics
    assert warning.severity is Severity.WARNING
    for known in ("capability", "concurrency_safe", "guidance", "read_only"):
        assert known in warning.message


def test_description_is_kept_and_is_not_part_of_the_fingerprint() -> None:
    described = build({"command": "x", "description": "Local file system access"})
    plain = build({"command": "x"})
    assert (described.description, plain.description) == ("Local file system access", None)
    assert described.fingerprint == plain.fingerprint


def test_description_that_is_not_a_string_skips_the_entry(tmp_path: Path) -> None:
    loaded = load_config(tmp_path, home=tmp_path, constructor={"srv": {"command": "x", "description": ["files"]}})
    assert "srv" not in loaded.servers
    [error] = loaded.diagnostics
    assert (error.severity, error.field) == (Severity.ERROR, "description")


def test_description_in_a_project_file_is_not_expanded(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"p": {"command": "x", "description": "${HOME} files"}}}')
    loaded = load_config(tmp_path, home=tmp_path / "home", environ={"HOME": "/h"})
    assert loaded.servers["p"].description == "${HOME} files"
