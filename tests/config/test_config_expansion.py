"""``${VAR}`` expansion in file sources (R-CFG-5)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from wave_actors._config import Severity, Source, load_config
from wave_actors._config.expand import expand_variables

ENVIRON = {"TOKEN": "secret", "HOST": "example.com", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expanded", "missing"),
    [
        ("${TOKEN}", "secret", ()),
        ("https://${HOST}/mcp?t=${TOKEN}", "https://example.com/mcp?t=secret", ()),
        ("${NOPE:-fallback}", "fallback", ()),
        ("${TOKEN:-fallback}", "secret", ()),
        ("${EMPTY:-fallback}", "fallback", ()),  # shell ":-": empty counts as unset
        ("${EMPTY}", "", ()),
        ("${NOPE:-}", "", ()),
        ("${NOPE}", "${NOPE}", ("NOPE",)),
        ("${NOPE}-${NOPE}-${OTHER}", "${NOPE}-${NOPE}-${OTHER}", ("NOPE", "OTHER")),
        ("$TOKEN and ${not a name} and ${}", "$TOKEN and ${not a name} and ${}", ()),
        ("${NOPE:-${TOKEN}}", "${TOKEN}", ()),  # defaults are literal, nothing nested; stops at the first }
        ("no placeholders", "no placeholders", ()),
    ],
)
def test_expansion_rules(text: str, expanded: str, missing: tuple[str, ...]) -> None:
    # R-CFG-5
    result = expand_variables(text, ENVIRON)
    assert (result.text, result.missing) == (expanded, missing)


def write_project(workdir: Path, entries: dict[str, object]) -> None:
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": entries}), encoding="utf-8")


def test_file_entries_are_expanded_in_command_args_env_url_and_headers(tmp_path: Path) -> None:
    # R-CFG-5: exactly these fields.
    write_project(
        tmp_path,
        {
            "local": {
                "command": "${HOST}-bin",
                "args": ["--token", "${TOKEN}"],
                "env": {"T": "${TOKEN}", "${HOST}": "key not expanded"},
                "cwd": "${HOST}",
            },
            "remote": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        },
    )
    loaded = load_config(tmp_path, home=tmp_path / "home", environ=ENVIRON)
    local, remote = loaded.servers["local"], loaded.servers["remote"]
    assert local.command == "example.com-bin"
    assert local.args == ("--token", "secret")
    assert dict(local.env) == {"T": "secret", "${HOST}": "key not expanded"}
    assert local.cwd == str(tmp_path.resolve() / "${HOST}")  # cwd is not listed by R-CFG-5
    assert remote.url == "https://example.com/mcp"
    assert dict(remote.headers) == {"Authorization": "Bearer secret"}
    assert loaded.diagnostics == ()


def test_user_file_is_expanded_too(tmp_path: Path) -> None:
    # R-CFG-5: "file sources" are the project and the user file.
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"u": {"command": "${HOST}"}}}), encoding="utf-8")
    loaded = load_config(tmp_path / "project", home=tmp_path, environ=ENVIRON)
    assert loaded.servers["u"].command == "example.com"


def test_missing_variable_stays_literal_with_a_warning_naming_server_and_field(tmp_path: Path) -> None:
    # R-CFG-5: the entry still loads.
    write_project(tmp_path, {"s": {"command": "x", "env": {"API_KEY": "${API_KEY}"}}})
    loaded = load_config(tmp_path, home=tmp_path / "home", environ={})
    assert dict(loaded.servers["s"].env) == {"API_KEY": "${API_KEY}"}
    [warning] = loaded.diagnostics
    assert (warning.severity, warning.source, warning.server, warning.field) == (
        Severity.WARNING,
        Source.PROJECT,
        "s",
        "env['API_KEY']",
    )
    assert "${API_KEY}" in warning.message


def test_constructor_and_plugin_entries_are_literal(tmp_path: Path) -> None:
    # R-CFG-5: constructor entries are literal; decision: plugin entries too.
    entry = {"command": "${HOST}", "args": ["${TOKEN}"]}
    loaded = load_config(
        tmp_path, home=tmp_path, constructor={"c": entry}, plugins=[("p", {"p": entry})], environ=ENVIRON
    )
    for name in ("c", "p"):
        assert (loaded.servers[name].command, loaded.servers[name].args) == ("${HOST}", ("${TOKEN}",))
    assert loaded.diagnostics == ()


def test_environ_defaults_to_the_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # R-CFG-5
    monkeypatch.setenv("WAVE_ACTORS_CONFIG_TEST", "from-os")
    write_project(tmp_path, {"s": {"command": "${WAVE_ACTORS_CONFIG_TEST}"}})
    assert load_config(tmp_path, home=tmp_path / "home").servers["s"].command == "from-os"


def test_fingerprint_is_taken_after_expansion(tmp_path: Path) -> None:
    # R-CFG-8: a changed variable is a changed server.
    write_project(tmp_path, {"s": {"url": "https://${HOST}/mcp"}})
    one = load_config(tmp_path, home=tmp_path / "home", environ={"HOST": "a"}).servers["s"].fingerprint
    two = load_config(tmp_path, home=tmp_path / "home", environ={"HOST": "b"}).servers["s"].fingerprint
    assert one != two


@pytest.mark.timeout(30)
@pytest.mark.parametrize("unit", ["${A:-", "${A:-${", "${A"])
def test_r_cfg_11_expansion_takes_linear_time_on_unclosed_placeholders(tmp_path: Path, unit: str) -> None:
    """R-CFG-11: a project file full of placeholders that never close (here twice 450 KB of them) expands in
    linear time; a quadratic rescan would hold the GIL, and so the event loop, for minutes."""
    hostile = unit * (450_000 // len(unit))
    write_project(tmp_path, {"s": {"command": "x", "args": [hostile, hostile + "}"]}})
    started = time.monotonic()
    loaded = load_config(tmp_path, home=tmp_path / "home", environ={})
    assert time.monotonic() - started < 3
    assert loaded.servers["s"].args[0] == hostile
