"""An entry's ``oauth`` object: read, checked field by field, expanded, fingerprinted (R-AUTH-1, R-CFG-8, R-CFG-12)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from wave_actors._config import (
    ConfigError,
    OAuthGrant,
    OAuthSettings,
    ServerConfig,
    Severity,
    Source,
    connection_fingerprint,
    load_config,
    server_config,
)
from wave_actors._config.approvals import Approval

URL = "https://tracker.example/mcp"


def build(oauth: object, *, environ: dict[str, str] | None = None) -> ServerConfig:
    return server_config(
        "tracker",
        {"url": URL, "oauth": oauth},
        source=Source.CONSTRUCTOR,
        origin="test",
        workdir="/tmp",
        environ=environ or {},
    )


def test_an_entry_needs_no_oauth_object_and_may_set_every_field() -> None:
    assert build(None).oauth is None  # null: absent, like any optional field
    oauth = build(
        {
            "redirect_uri": "http://127.0.0.1:8765/callback",
            "client_id": "wave",
            "client_secret": "s3cret",
            "scopes": ["tools:read", "tools:write"],
            "client_metadata_url": "https://client.example/metadata.json",
            "issuer": "https://auth.example",
        }
    ).oauth
    assert oauth == OAuthSettings(
        redirect_uri="http://127.0.0.1:8765/callback",
        client_id="wave",
        client_secret="s3cret",
        scopes=("tools:read", "tools:write"),
        client_metadata_url="https://client.example/metadata.json",
        grant=OAuthGrant.AUTHORIZATION_CODE,
        issuer="https://auth.example",
    )
    assert "s3cret" not in repr(oauth)


@pytest.mark.parametrize(
    ("oauth", "field", "says"),
    [
        ("client_id=x", "oauth", "expected an object"),
        ({"redirect_uri": "http://example.com/cb"}, "oauth.redirect_uri", "loopback host"),
        ({"redirect_uri": "ftp://127.0.0.1/cb"}, "oauth.redirect_uri", "absolute http or https URL"),
        ({"redirect_uri": "http://127.0.0.1:8765/cb#frag"}, "oauth.redirect_uri", "fragment"),
        ({"client_id": ""}, "oauth.client_id", "must not be empty"),
        ({"client_secret": "x"}, "oauth.client_secret", "without client_id"),
        ({"client_id": "x", "client_secret": 12}, "oauth.client_secret", "not shown"),
        ({"scopes": "read write"}, "oauth.scopes", "expected a list"),
        ({"scopes": []}, "oauth.scopes", "empty list"),
        ({"scopes": ["read write"]}, "oauth.scopes[0]", "one word"),
        ({"client_metadata_url": "http://client.example/m.json"}, "oauth.client_metadata_url", "https"),
        ({"client_metadata_url": "https://client.example/"}, "oauth.client_metadata_url", "needs a path"),
        ({"issuer": "auth.example"}, "oauth.issuer", "absolute"),
        ({"grant_type": "password"}, "oauth.grant_type", "expected 'authorization_code' or 'client_credentials'"),
        ({"grant_type": "client_credentials", "client_id": "x"}, "oauth.grant_type", "one of client_secret"),
        ({"private_key": "k"}, "oauth.private_key", "client_credentials"),
    ],
)
def test_an_unusable_oauth_object_rejects_the_entry_naming_the_field(oauth: object, field: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"field '{field}'")) as raised:
        build(oauth)
    assert says in str(raised.value)


def test_a_machine_client_is_read_and_its_unused_settings_are_warned_of(tmp_path: Path) -> None:
    entry = {
        "url": URL,
        "oauth": {
            "grant_type": "client_credentials",
            "client_id": "daemon",
            "client_secret": "s",
            "redirect_uri": "http://127.0.0.1:1/cb",
            "colour": "blue",
        },
    }
    loaded = load_config(tmp_path, home=tmp_path, constructor={"tracker": entry}, environ={})
    oauth = loaded.servers["tracker"].oauth
    assert oauth is not None and oauth.grant is OAuthGrant.CLIENT_CREDENTIALS
    warnings = {(diagnostic.field, diagnostic.severity) for diagnostic in loaded.diagnostics}
    assert warnings == {("oauth.redirect_uri", Severity.WARNING), ("oauth", Severity.WARNING)}


def test_a_stdio_entry_drops_its_oauth_object_with_a_warning(tmp_path: Path) -> None:
    entry = {"command": "server", "oauth": {"client_id": "x"}}
    loaded = load_config(tmp_path, home=tmp_path, constructor={"local": entry}, environ={})
    assert loaded.servers["local"].oauth is None
    assert [diagnostic.field for diagnostic in loaded.diagnostics] == ["oauth"]


def test_file_sources_expand_the_oauth_object_and_constructor_entries_keep_it_literal(tmp_path: Path) -> None:
    entry = {"url": URL, "oauth": {"client_id": "${CLIENT:-wave}", "client_secret": "${SECRET}", "scopes": ["${S}"]}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"tracker": entry}}), encoding="utf-8")
    environ = {"SECRET": "from-the-environment", "S": "read"}
    expanded = load_config(tmp_path, home=tmp_path, environ=environ).servers["tracker"].oauth
    assert expanded == OAuthSettings(client_id="wave", client_secret="from-the-environment", scopes=("read",))
    literal = build(entry["oauth"], environ=environ).oauth
    assert literal is not None and literal.client_secret == "${SECRET}"


def test_an_entry_without_oauth_keeps_its_fingerprint_and_every_oauth_setting_changes_it() -> None:
    # R-CFG-8: the fingerprint of an entry written before the field existed does not move.
    plain = server_config("tracker", {"url": URL}, source=Source.CONSTRUCTOR, origin="test", workdir="/tmp")
    fields = {"type": "http", "command": None, "args": [], "cwd": None, "url": URL, "env": {}, "headers": {}}
    text = json.dumps({**fields, "workdir": "/tmp"}, sort_keys=True, separators=(",", ":"))
    assert plain.fingerprint == hashlib.sha256(text.encode()).hexdigest()[:16]
    variants = [{"client_id": "a"}, {"client_id": "b"}, {"client_id": "a", "client_secret": "x"}, {"scopes": ["r"]}]
    prints = {build(oauth).fingerprint for oauth in variants} | {plain.fingerprint}
    assert len(prints) == len(variants) + 1
    assert connection_fingerprint(build(variants[0]), "/tmp") == build(variants[0]).fingerprint


def test_an_approval_names_a_changed_oauth_object_without_its_values() -> None:
    # R-CFG-10: approved with one client, changed to another.
    approved = Approval.of(build({"client_id": "a", "client_secret": "first"}), by="approve")
    assert approved.changes(build({"client_id": "a", "client_secret": "second"})) == ("oauth",)
    plain = server_config("tracker", {"url": URL}, source=Source.CONSTRUCTOR, origin="test", workdir="/tmp")
    assert Approval.of(plain, by="approve").changes(build({"client_id": "a"})) == ("oauth",)
