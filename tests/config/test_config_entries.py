"""One entry: kinds, types, validation, enabled, tool_timeout_ms, overrides (R-CFG-2, -3, -6, -7; R-TOOL-8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wave_actors._config import (
    ConfigError,
    ServerConfig,
    Severity,
    Source,
    ToolOverride,
    TransportType,
    load_config,
    server_config,
)


def build(entry: dict[str, Any], *, workdir: Path | str = "/work", source: Source = Source.CONSTRUCTOR) -> ServerConfig:
    return server_config("srv", entry, source=source, origin="test", workdir=workdir, environ={})


def rejection(entry: object, tmp_path: Path) -> list[tuple[str | None, str]]:
    """(field, message) of each error when loading ``entry`` as a constructor entry."""
    loaded = load_config(tmp_path, home=tmp_path, constructor={"srv": entry}, environ={})  # type: ignore[dict-item]
    assert "srv" not in loaded.servers
    errors = [(d.field, d.message) for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert errors, loaded.diagnostics
    for diagnostic in loaded.diagnostics:
        assert (diagnostic.server, diagnostic.origin, diagnostic.source) == ("srv", "constructor", Source.CONSTRUCTOR)
    return errors


def test_stdio_entry_keeps_command_args_env_and_cwd() -> None:
    # R-CFG-2
    server = build({"command": "node", "args": ["server.js", "--port", "0"], "env": {"A": "1"}, "cwd": "/srv"})
    assert (server.type, server.transport) == ("stdio", TransportType.STDIO)
    assert (server.command, server.args, dict(server.env), server.cwd) == (
        "node",
        ("server.js", "--port", "0"),
        {"A": "1"},
        "/srv",
    )


@pytest.mark.parametrize(("written", "read"), [("http", "http"), ("streamable-http", "http"), ("sse", "sse")])
def test_remote_entry_types(written: str, read: str) -> None:
    # R-CFG-2: streamable-http is http.
    server = build({"type": written, "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}})
    assert (server.type, server.url) == (read, "https://example.com/mcp")
    assert dict(server.headers) == {"Authorization": "Bearer x"}


def test_command_without_type_is_stdio() -> None:
    # R-CFG-2
    assert build({"command": "x"}).transport is TransportType.STDIO


def test_url_without_type_is_http_never_sse() -> None:
    # R-CFG-2: no guessing SSE, even for an URL that ends in /sse.
    assert build({"url": "http://localhost/sse"}).transport is TransportType.HTTP


def test_unknown_type_is_kept_and_not_an_error(tmp_path: Path) -> None:
    # R-CFG-3: kept in the registry as written; it fails at connect time, not here.
    loaded = load_config(
        tmp_path, home=tmp_path, constructor={"ws": {"type": "websocket", "url": "ws://x", "command": "y"}}, environ={}
    )
    server = loaded.servers["ws"]
    assert (server.type, server.transport, server.url, server.command) == ("websocket", None, "ws://x", "y")
    assert loaded.diagnostics == ()


def test_type_is_case_sensitive_and_an_odd_case_is_an_unknown_type() -> None:
    # R-CFG-3: "HTTP" is not silently "http"; the connect error will name it.
    assert build({"type": "HTTP", "url": "http://x"}).transport is None


def test_entry_without_command_or_url_is_skipped(tmp_path: Path) -> None:
    # R-CFG-2/R-CFG-4
    [(field, message)] = rejection({"args": ["x"]}, tmp_path)
    assert field is None and '"command"' in message and '"url"' in message


def test_command_and_url_without_type_is_ambiguous_and_skipped(tmp_path: Path) -> None:
    # R-CFG-2: not guessed.
    [(_, message)] = rejection({"command": "x", "url": "http://x"}, tmp_path)
    assert '"type"' in message


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "stdio", "url": "http://x"}, "command"),
        ({"type": "stdio", "command": ""}, "command"),
        ({"type": "http", "command": "x"}, "url"),
        ({"type": "sse", "url": ""}, "url"),
    ],
)
def test_known_type_without_its_required_field_is_skipped(tmp_path: Path, entry: dict[str, Any], field: str) -> None:
    # R-CFG-2
    [(reported, _)] = rejection(entry, tmp_path)
    assert reported == field


def test_fields_of_the_other_transport_are_dropped_with_a_warning(tmp_path: Path) -> None:
    # R-CFG-2: a stdio server has no url; an ignored field cannot change the fingerprint.
    loaded = load_config(
        tmp_path,
        home=tmp_path,
        constructor={
            "s": {"command": "x", "type": "stdio", "headers": {"A": "b"}},
            "h": {"url": "http://x", "args": ["y"], "env": {"A": "b"}},
        },
        environ={},
    )
    assert dict(loaded.servers["s"].headers) == {}
    assert (loaded.servers["h"].args, dict(loaded.servers["h"].env)) == ((), {})
    assert {(d.server, d.field, d.severity) for d in loaded.diagnostics} == {
        ("s", "headers", Severity.WARNING),
        ("h", "args", Severity.WARNING),
        ("h", "env", Severity.WARNING),
    }


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"command": ["node", "x"]}, "command"),
        ({"command": "x", "args": "--verbose"}, "args"),
        ({"command": "x", "args": ["ok", 1]}, "args[1]"),
        ({"command": "x", "env": ["A=1"]}, "env"),
        ({"command": "x", "env": {"A": 1}}, "env['A']"),
        ({"command": "x", "cwd": 7}, "cwd"),
        ({"url": 7}, "url"),
        ({"url": "http://x", "headers": {"A": None}}, "headers['A']"),
        ({"url": "http://x", "headers": "A: b"}, "headers"),
        ({"type": 1, "url": "http://x"}, "type"),
        ({"command": "x", "tool_overrides": []}, "tool_overrides"),
        ({"command": "x", "tool_overrides": {"t": True}}, "tool_overrides['t']"),
        ({"command": "x", "tool_overrides": {"t": {"read_only": "yes"}}}, "tool_overrides['t'].read_only"),
    ],
)
def test_wrong_field_type_skips_the_entry_naming_the_field(tmp_path: Path, entry: dict[str, Any], field: str) -> None:
    # R-CFG-4: a diagnostic naming the field and saying what was expected.
    errors = rejection(entry, tmp_path)
    assert [reported for reported, _ in errors] == [field]
    assert "expected" in errors[0][1] and "skipped" in errors[0][1]


def test_every_bad_field_of_an_entry_is_reported(tmp_path: Path) -> None:
    # R-CFG-4: one diagnostic per bad field, so a user fixes them all at once.
    errors = rejection({"command": 1, "args": "x", "tool_timeout_ms": "1"}, tmp_path)
    assert sorted(field or "" for field, _ in errors) == ["args", "command", "tool_timeout_ms"]


def test_entry_that_is_not_an_object_is_skipped(tmp_path: Path) -> None:
    # R-CFG-4
    [(_, message)] = rejection(["command", "x"], tmp_path)
    assert "must be a JSON object" in message and "a list" in message


def test_empty_server_name_is_skipped(tmp_path: Path) -> None:
    loaded = load_config(tmp_path, home=tmp_path, constructor={"": {"command": "x"}}, environ={})
    assert dict(loaded.servers) == {} and loaded.diagnostics[0].severity is Severity.ERROR


def test_null_means_absent_for_optional_connection_fields() -> None:
    # Decision (converter docstring): null is "not given" except for enabled and tool_timeout_ms.
    server = build({"command": "x", "args": None, "env": None, "cwd": None, "type": None, "tool_overrides": None})
    assert (server.args, dict(server.env), server.cwd, server.type) == ((), {}, None, "stdio")


def test_unknown_fields_are_ignored_with_a_warning(tmp_path: Path) -> None:
    # Decision (entry docstring): a typo must not go unnoticed, but it does not cost the entry.
    loaded = load_config(
        tmp_path,
        home=tmp_path,
        constructor={"s": {"url": "http://x", "timeout": 5, "tool_overrides": {"t": {"readonly": True}}}},
        environ={},
    )
    assert loaded.servers["s"].tool_timeout_ms == 30_000
    assert [(d.severity, d.field) for d in loaded.diagnostics] == [
        (Severity.WARNING, "timeout"),
        (Severity.WARNING, "tool_overrides['t']"),
    ]
    assert 'did you mean "tool_timeout_ms"' in loaded.diagnostics[0].message


@pytest.mark.parametrize(
    ("written", "meant"),
    [("comand", "command"), ("Command", "command"), ("cmd", "command"), ("ulr", "url"), ("arg", "args")],
)
def test_a_misspelled_field_gets_the_field_it_probably_meant(tmp_path: Path, written: str, meant: str) -> None:
    loaded = load_config(tmp_path, home=tmp_path, constructor={"s": {"url": "http://x", written: "x"}}, environ={})

    [warning] = loaded.diagnostics
    assert warning.field == written and f'did you mean "{meant}"?' in warning.message


def test_an_entry_skipped_for_a_misspelled_command_says_so_in_its_error(tmp_path: Path) -> None:
    # The error is what a reader looks for: it names the typo, not only the missing field.
    loaded = load_config(tmp_path, home=tmp_path, constructor={"time": {"comand": "npx"}}, environ={})

    assert "time" not in loaded.servers
    [error] = [diagnostic for diagnostic in loaded.diagnostics if diagnostic.severity is Severity.ERROR]
    assert 'needs "command"' in error.message and '"comand" is not a field: did you mean "command"?' in error.message


# transport, the user guide's name for type (R-CFG-2) --------------------------------


@pytest.mark.parametrize(
    ("entry", "read"),
    [
        ({"url": "https://x/sse", "transport": "sse"}, "sse"),
        ({"url": "https://x/mcp", "transport": "http"}, "http"),
        ({"url": "https://x/mcp", "transport": "streamable-http"}, "http"),
        ({"command": "x", "transport": "stdio"}, "stdio"),
        ({"url": "https://x/sse", "transport": "sse", "type": "sse"}, "sse"),
        ({"url": "https://x/mcp", "transport": "streamable-http", "type": "http"}, "http"),
        ({"url": "ws://x", "transport": "websocket"}, "websocket"),
    ],
)
def test_r_cfg_2_transport_is_a_synonym_of_type(tmp_path: Path, entry: dict[str, Any], read: str) -> None:
    """R-CFG-2: the user guide writes "transport": "http" | "streamable-http" | "sse"; a native
    "transport": "sse" entry is SSE, not silently HTTP."""
    loaded = load_config(tmp_path, home=tmp_path, constructor={"srv": entry}, environ={})
    assert loaded.servers["srv"].type == read
    assert loaded.diagnostics == ()


def test_r_cfg_2_transport_in_a_project_file_is_read_too(tmp_path: Path) -> None:
    """R-CFG-2: the same synonym in the project file."""
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"srv": {"url": "https://x", "transport": "sse"}}}')
    assert load_config(tmp_path, home=tmp_path, environ={}).servers["srv"].transport is TransportType.SSE


def test_r_cfg_2_type_and_transport_that_differ_reject_the_entry_naming_both(tmp_path: Path) -> None:
    """R-CFG-2/R-CFG-4: two different answers to one question are not guessed between."""
    [(field, message)] = rejection({"url": "https://x", "type": "http", "transport": "sse"}, tmp_path)
    assert field == "transport"
    assert "'http'" in message and "'sse'" in message and "skipped" in message


def test_r_cfg_2_transport_of_the_wrong_type_is_an_error(tmp_path: Path) -> None:
    """R-CFG-4: like type, transport is a string."""
    [(field, _)] = rejection({"url": "https://x", "transport": 1}, tmp_path)
    assert field == "transport"


# R-CFG-6 ---------------------------------------------------------------------


def test_enabled_defaults_to_true() -> None:
    assert build({"command": "x"}).enabled is True


def test_disabled_entry_is_still_listed() -> None:
    # R-CFG-6: listed, never dialed (dialing is the session's business).
    assert build({"command": "x", "enabled": False}).enabled is False


@pytest.mark.parametrize("value", [0, 1, "false", None, []])
def test_enabled_must_be_a_boolean(tmp_path: Path, value: object) -> None:
    # R-CFG-6: "false" as a string is a mistake, not false.
    [(field, _)] = rejection({"command": "x", "enabled": value}, tmp_path)
    assert field == "enabled"


# R-CFG-7 ---------------------------------------------------------------------


def test_tool_timeout_defaults_to_thirty_seconds() -> None:
    assert build({"command": "x"}).tool_timeout_ms == 30_000


@pytest.mark.parametrize("value", [1, 30_000, 3_600_000])
def test_valid_tool_timeout_is_kept(value: int) -> None:
    # R-CFG-7
    assert build({"command": "x", "tool_timeout_ms": value}).tool_timeout_ms == value


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(1.5, id="fractional"),
        pytest.param(1000.0, id="float-even-if-whole"),
        pytest.param(None, id="null"),
        pytest.param("1000", id="string"),
        pytest.param(True, id="bool-is-not-an-int-here"),
        pytest.param(3_600_001, id="over-an-hour"),
        pytest.param(float("inf"), id="infinite"),
    ],
)
def test_invalid_tool_timeout_skips_the_entry_with_an_error(tmp_path: Path, value: object) -> None:
    # R-CFG-7: rejected with a diagnostic for that entry; others load.
    loaded = load_config(
        tmp_path,
        home=tmp_path,
        constructor={"bad": {"command": "x", "tool_timeout_ms": value}, "good": {"command": "x"}},
        environ={},
    )
    assert list(loaded.servers) == ["good"]
    [error] = loaded.diagnostics
    assert (error.severity, error.server, error.field) == (Severity.ERROR, "bad", "tool_timeout_ms")
    assert "3600000" in error.message


# R-TOOL-8 --------------------------------------------------------------------


def test_tool_overrides_become_records() -> None:
    overrides = {"search": {"read_only": True}, "write": {"read_only": False}, "other": {}}
    server = build({"command": "x", "tool_overrides": overrides})
    assert dict(server.tool_overrides) == {
        "search": ToolOverride(read_only=True),
        "write": ToolOverride(read_only=False),
        "other": ToolOverride(read_only=None),
    }


# cwd (decision, entry docstring) -------------------------------------------


def test_relative_cwd_is_resolved_against_the_workdir(tmp_path: Path) -> None:
    server = build({"command": "x", "cwd": "tools/../server"}, workdir=tmp_path)
    assert server.cwd == str(tmp_path.resolve() / "server")


def test_absolute_cwd_is_kept() -> None:
    assert build({"command": "x", "cwd": "/opt/server"}).cwd == "/opt/server"


# server_config ---------------------------------------------------------------


def test_server_config_raises_a_config_error_naming_server_origin_field_and_value() -> None:
    with pytest.raises(ConfigError) as caught:
        server_config(
            "db", {"command": "x", "tool_timeout_ms": 1.5}, source=Source.USER, origin="/h/mcp.json", workdir="/w"
        )
    message = str(caught.value)
    assert "'db'" in message and "/h/mcp.json" in message and "tool_timeout_ms" in message and "1.5" in message


def test_server_config_accepts_a_valid_entry_with_warnings(caplog: pytest.LogCaptureFixture) -> None:
    server = server_config("db", {"command": "${NOPE}"}, source=Source.PROJECT, origin="p", workdir="/w", environ={})
    assert server.command == "${NOPE}"
    assert "NOPE" in caplog.text


def test_records_are_immutable() -> None:
    server = build({"command": "x", "env": {"A": "1"}})
    with pytest.raises(TypeError):
        server.env["B"] = "2"  # type: ignore[index]
