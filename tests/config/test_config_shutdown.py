"""An entry's ``shutdown``: its own reclamation graces, validated like ``tool_timeout_ms`` (R-KILL-9, R-CFG-4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wave_actors._config import (
    ConfigError,
    ServerConfig,
    Severity,
    ShutdownGraces,
    Source,
    load_config,
    server_config,
)


def build(entry: dict[str, Any]) -> ServerConfig:
    return server_config("srv", entry, source=Source.CONSTRUCTOR, origin="test", workdir="/work", environ={})


def test_an_entry_without_shutdown_leaves_the_graces_to_the_host() -> None:
    assert build({"command": "x"}).shutdown == ShutdownGraces()
    assert build({"command": "x", "shutdown": None}).shutdown == ShutdownGraces()  # null is "not given"
    assert build({"command": "x", "shutdown": {}}).shutdown == ShutdownGraces()


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ({"eof_ms": 0}, ShutdownGraces(eof_ms=0)),
        ({"term_ms": 1}, ShutdownGraces(term_ms=1)),
        ({"eof_ms": 250, "term_ms": 60_000}, ShutdownGraces(eof_ms=250, term_ms=60_000)),
    ],
)
def test_valid_graces_are_kept(written: dict[str, int], read: ShutdownGraces) -> None:
    # R-KILL-9: 0 is meaningful (do not wait), a minute is the most.
    assert build({"command": "x", "shutdown": written}).shutdown == read


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(-1, id="negative"),
        pytest.param(1.5, id="fractional"),
        pytest.param(500.0, id="float-even-if-whole"),
        pytest.param(None, id="null"),
        pytest.param("500", id="string"),
        pytest.param(True, id="bool-is-not-an-int-here"),
        pytest.param(60_001, id="over-a-minute"),
        pytest.param(float("inf"), id="infinite"),
    ],
)
@pytest.mark.parametrize("setting", ["eof_ms", "term_ms"])
def test_an_invalid_grace_skips_the_entry_with_an_error_naming_the_field(
    tmp_path: Path, setting: str, value: object
) -> None:
    # R-KILL-9, R-CFG-4: rejected with a diagnostic for that entry; the others load.
    loaded = load_config(
        tmp_path,
        home=tmp_path,
        constructor={"bad": {"command": "x", "shutdown": {setting: value}}, "good": {"command": "x"}},
        environ={},
    )
    assert list(loaded.servers) == ["good"]
    [error] = loaded.diagnostics
    assert (error.severity, error.server, error.field) == (Severity.ERROR, "bad", f"shutdown.{setting}")
    assert "milliseconds from 0 to 60000" in error.message and "skipped" in error.message


@pytest.mark.parametrize("value", [500, "fast", ["eof_ms", 1], True])
def test_a_shutdown_that_is_not_an_object_skips_the_entry(tmp_path: Path, value: object) -> None:
    loaded = load_config(tmp_path, home=tmp_path, constructor={"bad": {"command": "x", "shutdown": value}}, environ={})
    assert "bad" not in loaded.servers
    [error] = loaded.diagnostics
    assert (error.severity, error.field) == (Severity.ERROR, "shutdown")
    assert "expected an object" in error.message


def test_both_bad_graces_are_reported_at_once(tmp_path: Path) -> None:
    # R-CFG-4: one diagnostic per bad value, so a user fixes them all at once.
    entry = {"command": "x", "shutdown": {"eof_ms": -5, "term_ms": "1"}}
    loaded = load_config(tmp_path, home=tmp_path, constructor={"bad": entry}, environ={})
    assert sorted(d.field or "" for d in loaded.diagnostics) == ["shutdown.eof_ms", "shutdown.term_ms"]


def test_an_unknown_shutdown_setting_is_ignored_with_a_warning(tmp_path: Path) -> None:
    entry = {"command": "x", "shutdown": {"eof_ms": 100, "kill_ms": 5}}
    loaded = load_config(tmp_path, home=tmp_path, constructor={"s": entry}, environ={})
    assert loaded.servers["s"].shutdown == ShutdownGraces(eof_ms=100)
    [warning] = loaded.diagnostics
    assert (warning.severity, warning.field) == (Severity.WARNING, "shutdown")
    assert "'kill_ms'" in warning.message and "eof_ms, term_ms" in warning.message


@pytest.mark.parametrize("kind", ["http", "sse"])
def test_a_remote_entry_drops_shutdown_with_a_warning(tmp_path: Path, kind: str) -> None:
    # A remote server has no process to stop.
    entry = {"type": kind, "url": "https://example.com/mcp", "shutdown": {"term_ms": 100}}
    loaded = load_config(tmp_path, home=tmp_path, constructor={"s": entry}, environ={})
    assert loaded.servers["s"].shutdown == ShutdownGraces()
    [warning] = loaded.diagnostics
    assert (warning.severity, warning.field) == (Severity.WARNING, "shutdown")


def test_shutdown_does_not_change_the_fingerprint() -> None:
    # R-CFG-8: it says how a server is stopped, not what is started; a changed one never restarts it.
    plain = build({"command": "x", "args": ["a"]})
    graced = build({"command": "x", "args": ["a"], "shutdown": {"eof_ms": 10, "term_ms": 20}})
    assert plain.fingerprint == graced.fingerprint
    assert plain != graced


def test_server_config_raises_a_config_error_naming_server_origin_field_and_value() -> None:
    with pytest.raises(ConfigError) as caught:
        server_config(
            "db", {"command": "x", "shutdown": {"term_ms": 2.5}}, source=Source.USER, origin="/h/mcp.json", workdir="/w"
        )
    message = str(caught.value)
    assert "'db'" in message and "/h/mcp.json" in message and "shutdown.term_ms" in message and "2.5" in message
