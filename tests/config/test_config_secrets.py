"""Secrets in configuration are never shown: not in diagnostics, not in ``repr`` (R-CFG-12).

The values of ``env`` and ``headers`` and the query of a ``url`` hold tokens.
A diagnostic describes a wrongly typed one by its type only; ``repr()`` of a
loaded server shows names, never values. Equality and the fingerprint still
use the values.
"""

from __future__ import annotations

import json
import logging
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from wave_actors._config import (
    ConfigError,
    LoadedConfig,
    ServerConfig,
    Severity,
    Source,
    connection_fingerprint,
    load_config,
    redact_url,
    server_config,
)

SECRET = "s3cr3t-Tok3n-value"


def load_constructor(tmp_path: Path, entry: object) -> LoadedConfig:
    return load_config(tmp_path, home=tmp_path, constructor={"srv": entry}, environ={})  # type: ignore[dict-item]


def shown(loaded: LoadedConfig) -> str:
    """Everything a host might print or log about a loaded configuration."""
    parts = [str(loaded), repr(loaded)]
    parts += [str(d) for d in loaded.diagnostics] + [repr(d) for d in loaded.diagnostics]
    parts += [repr(server) for server in loaded.servers.values()]
    return "\n".join(parts)


@pytest.mark.parametrize(
    ("entry", "field", "described"),
    [
        pytest.param({"url": "http://x", "headers": f"Authorization: Bearer {SECRET}"}, "headers", "a string"),
        pytest.param({"url": "http://x", "headers": [f"Authorization: Bearer {SECRET}"]}, "headers", "a list"),
        pytest.param({"url": "http://x", "headers": {"Authorization": [SECRET]}}, "headers['Authorization']", "a list"),
        pytest.param({"command": "x", "env": f"TOKEN={SECRET}"}, "env", "a string"),
        pytest.param({"command": "x", "env": {"TOKEN": 884422331100}}, "env['TOKEN']", "a number"),
        pytest.param({"command": "x", "env": {"TOKEN": {"value": SECRET}}}, "env['TOKEN']", "an object"),
        pytest.param({"command": "x", "env": [f"TOKEN={SECRET}"]}, "env", "a list"),
        pytest.param({"url": [f"https://x/?key={SECRET}"]}, "url", "a list"),
        pytest.param({"url": 884422331100}, "url", "a number"),
    ],
)
def test_r_cfg_12_wrongly_typed_secret_is_described_by_type_never_echoed(
    tmp_path: Path, entry: dict[str, Any], field: str, described: str
) -> None:
    """R-CFG-12: a token written in the wrong shape is reported, by type, and the entry is skipped."""
    loaded = load_constructor(tmp_path, entry)
    [error] = loaded.diagnostics
    assert (error.severity, error.field) == (Severity.ERROR, field)
    assert f"got {described} (not shown: it may be a secret)" in error.message
    text = shown(loaded)
    assert SECRET not in text and "884422331100" not in text


def test_r_cfg_12_server_config_error_does_not_echo_a_secret() -> None:
    """R-CFG-12: the single-entry builder's ConfigError carries the same words."""
    with pytest.raises(ConfigError) as caught:
        server_config("srv", {"command": "x", "env": f"TOKEN={SECRET}"}, source=Source.USER, origin="o", workdir="/w")
    assert SECRET not in str(caught.value) and "env" in str(caught.value)


def test_r_cfg_12_repr_of_a_server_shows_names_never_values() -> None:
    """R-CFG-12: env and header values are masked and the URL loses its query values."""
    config = ServerConfig(
        "srv",
        Source.USER,
        "o",
        "http",
        url=f"https://user:{SECRET}@example.com/mcp?api_key={SECRET}&v=2#{SECRET}",
        headers={"Authorization": f"Bearer {SECRET}"},
        env={"TOKEN": SECRET},
    )
    text = repr(config)
    assert SECRET not in text
    assert "env={'TOKEN': '***'}" in text and "headers={'Authorization': '***'}" in text
    assert "url='https://user:***@example.com/mcp?api_key=***&v=***#***'" in text


def test_r_cfg_12_masking_changes_neither_equality_nor_the_fingerprint() -> None:
    """R-CFG-12 with R-CFG-8: the values are still what makes two servers the same."""

    def config(token: str) -> ServerConfig:
        return ServerConfig("s", Source.USER, "o", "http", url=f"https://x/?k={token}", headers={"A": token})

    assert config("one") == config("one") and config("one") != config("two")
    assert repr(config("one")) == repr(config("two"))
    assert connection_fingerprint(config("one"), "/w") != connection_fingerprint(config("two"), "/w")
    assert connection_fingerprint(config("one"), "/w") == connection_fingerprint(config("one"), "/w")


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("https://example.com/mcp", "https://example.com/mcp"),
        ("https://example.com/mcp?api_key=abc", "https://example.com/mcp?api_key=***"),
        ("https://example.com/mcp?a=1&b=&c", "https://example.com/mcp?a=***&b=***&***"),
        ("https://example.com/mcp?", "https://example.com/mcp?"),
        ("https://example.com/mcp#token", "https://example.com/mcp#***"),
        ("https://user:pw@example.com:8080/mcp", "https://user:***@example.com:8080/mcp"),
        ("https://token@example.com/mcp", "https://token@example.com/mcp"),
        ("http://[::1]:80/x?k=v", "http://[::1]:80/x?k=***"),
        ("http://[::1/x?k=v", "http://[::1/x?k=***"),  # not a valid URL: redacted all the same
        ("not a url?k=v", "not a url?k=***"),
        ("", ""),
    ],
)
def test_r_cfg_12_redact_url_keeps_names_and_drops_values(url: str, redacted: str) -> None:
    """R-CFG-12: what status displays, the CLI and logs use to print a configured URL."""
    assert redact_url(url) == redacted


# Property: no secret, anywhere, from any source ------------------------------------

secrets = st.text(string.ascii_letters + string.digits, min_size=16, max_size=24)
numeric_secrets = st.integers(10**15, 10**18)


@st.composite
def entries_hiding(draw: st.DrawFn, secret: str, number: int) -> dict[str, object]:
    """An entry with the secret somewhere it belongs, or written in the wrong shape."""
    placement = draw(
        st.sampled_from(
            [
                {"command": "x", "env": {"TOKEN": secret}},
                {"command": "x", "env": {"TOKEN": f"${{UNSET}}{secret}"}},
                {"command": "x", "env": f"TOKEN={secret}"},
                {"command": "x", "env": {"TOKEN": number}},
                {"command": "x", "env": [secret]},
                {"command": "x", "env": {"TOKEN": [secret]}},
                {"command": "x", "headers": {"Authorization": f"Bearer {secret}"}},  # ignored on stdio
                {"command": "x", "url": f"https://x/?key={secret}"},  # ignored on stdio
                {"url": "https://x/mcp", "headers": {"Authorization": f"Bearer {secret}"}},
                {"url": "https://x/mcp", "headers": f"Authorization: Bearer {secret}"},
                {"url": "https://x/mcp", "headers": {"Authorization": number}},
                {"url": "https://x/mcp", "headers": {"Authorization": {"v": secret}}},
                {"url": f"https://x/mcp?api_key={secret}"},
                {"url": f"https://x/mcp?a=1&api_key={secret}#{secret}"},
                {"url": f"https://u:{secret}@x/mcp"},
                {"url": [secret]},
                {"url": number},
                {"type": "sse", "url": f"https://x/sse?token={secret}", "env": {"T": secret}},  # env ignored
                {"type": "websocket", "url": f"wss://x/?token={secret}", "headers": {"A": secret}},
            ]
        )
    )
    extra = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "tool_timeout_ms": st.sampled_from([0, 1000, "x"]),
                "enabled": st.sampled_from([True, "no"]),
                "transport": st.sampled_from(["http", "sse"]),
            },
        )
    )
    return {**placement, **extra}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), secrets, numeric_secrets, st.sampled_from(list(Source)))
def test_r_cfg_12_no_secret_reaches_repr_diagnostics_or_logs(
    caplog: pytest.LogCaptureFixture, data: st.DataObject, secret: str, number: int, source: Source
) -> None:
    """R-CFG-12: random secrets in env, headers and URL queries, of right or wrong types, from every
    source, never appear in repr(config), in a diagnostic, in str(LoadedConfig) or in a log record."""
    entry = data.draw(entries_hiding(secret, number))
    caplog.clear()
    with caplog.at_level(logging.DEBUG), tempfile.TemporaryDirectory() as directory:
        workdir, home = Path(directory) / "project", Path(directory) / "home"
        workdir.mkdir()
        home.mkdir()
        constructor: dict[str, Any] = {}
        plugins: list[tuple[str, Any]] = []
        if source is Source.CONSTRUCTOR:
            constructor["srv"] = entry
        elif source is Source.PLUGIN:
            plugins.append(("plug", {"srv": entry}))
        else:
            path = workdir / ".mcp.json" if source is Source.PROJECT else home / "mcp.json"
            path.write_text(json.dumps({"mcpServers": {"srv": entry}}), encoding="utf-8")
        loaded = load_config(workdir, home=home, constructor=constructor, plugins=plugins, environ={})
        try:
            server_config("srv", entry, source=source, origin="o", workdir=workdir, environ={})
        except ConfigError as error:
            assert secret not in str(error) and str(number) not in str(error)
    text = shown(loaded) + "\n" + caplog.text
    assert secret not in text
    assert str(number) not in text
