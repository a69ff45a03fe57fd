"""The credential stores, and the rules of the records that coordinate them (R-AUTH-3).

The system keyring is an optional dependency (``wave-actors[keyring]``): here
it is missing, and then a stand-in ``keyring`` module plays the backends
(one that works, the "fail" backend of a machine without a keyring, one that
raises) so that what the store says is checked without touching a real
keyring.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import trio

from wave_actors import (
    Credentials,
    CredentialStoreError,
    FileCredentialStore,
    KeyringCredentialStore,
    LoginState,
    LoginSuperseded,
)
from wave_actors._auth.credentials import credential_key, vault_of
from wave_actors._auth.records import LoginRecord, StoredLogin, StoredTokens, resource_of

URL = "https://tracker.example/mcp"


def login(access: str = "token-a", *, url: str = URL, refresh: str | None = "refresh-a") -> StoredLogin:
    return StoredLogin(
        resource=resource_of(url), tokens=StoredTokens(access_token=access, refresh_token=refresh, expires_at=2e9)
    )


def fake_keyring(monkeypatch: pytest.MonkeyPatch, backend_module: str = "keyring.backends.SecretService") -> dict:
    """A ``keyring`` module holding its passwords in a dict; its backend's module says which backend it is."""
    passwords: dict[tuple[str, str], str] = {}
    module = types.ModuleType("keyring")
    backend = type("Keyring", (), {"__module__": backend_module})()
    module.get_keyring = lambda: backend  # type: ignore[attr-defined]
    module.get_password = lambda service, user: passwords.get((service, user))  # type: ignore[attr-defined]
    module.set_password = lambda service, user, secret: passwords.__setitem__((service, user), secret)  # type: ignore[attr-defined]
    module.delete_password = lambda service, user: passwords.pop((service, user))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyring", module)
    return passwords


def test_the_keyring_chosen_and_not_installed_says_so_and_writes_no_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # `import keyring` raises ImportError
    vault = vault_of(Credentials(tmp_path, "keyring"))
    ticket = vault.begin_login_blocking("docs")
    with pytest.raises(CredentialStoreError, match=r"keyring package is not installed.*wave-actors\[keyring\]"):
        vault.commit_login_blocking("docs", ticket, login())
    assert list(tmp_path.rglob("*.secret.json")) == []  # never a file instead
    assert vault.read_blocking("docs") is None  # and the record commits nothing


def test_a_machine_without_a_keyring_is_told_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_keyring(monkeypatch, backend_module="keyring.backends.fail")
    with pytest.raises(CredentialStoreError, match="no keyring is available here") as raised:
        KeyringCredentialStore().write("k", "secret")
    assert "Secret Service" in str(raised.value) and 'credentials="file"' in str(raised.value)


def test_a_failing_keyring_is_reported_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_keyring(monkeypatch)

    def locked(service: str, user: str, secret: str) -> None:
        raise RuntimeError("the collection is locked")

    monkeypatch.setattr(sys.modules["keyring"], "set_password", locked)
    with pytest.raises(CredentialStoreError, match=r"collection is locked.*not replaced by a file"):
        KeyringCredentialStore().write("k", "secret")


def test_the_keyring_store_keeps_the_secret_in_the_keyring_and_only_the_record_in_the_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    passwords = fake_keyring(monkeypatch)
    credentials = Credentials(tmp_path, "keyring")
    vault = vault_of(credentials)
    stored = vault.commit_login_blocking("docs", vault.begin_login_blocking("docs"), login())
    assert passwords[("wave-actors", credential_key("docs"))] == stored.to_json()
    assert sorted(path.name.split(".", 1)[1] for path in credentials.records_directory.iterdir()) == [
        "lock",
        "record.json",
    ]
    found = vault.read_blocking("docs")
    assert found is not None and found[1] == stored
    assert credentials.status_blocking("docs", URL).state is LoginState.LOGGED_IN
    vault.remove_blocking("docs")
    assert passwords == {}


def test_a_stored_login_is_used_only_at_the_version_its_record_commits(tmp_path: Path) -> None:
    # A secret written by a process that died before committing its record, or one a logout disowned.
    credentials = Credentials(tmp_path, "file")
    vault = vault_of(credentials)
    stored = vault.commit_login_blocking("docs", vault.begin_login_blocking("docs"), login())
    store = credentials.store
    assert isinstance(store, FileCredentialStore)
    uncommitted = (
        StoredLogin.from_json(stored.to_json())
        .to_json()
        .replace(f'"version":{stored.version}', f'"version":{stored.version + 1}')
    )
    store.write(credential_key("docs"), uncommitted)
    assert vault.read_blocking("docs") is None


def test_a_refresh_commits_only_over_the_version_it_refreshed(tmp_path: Path) -> None:
    vault = vault_of(Credentials(tmp_path, "file"))
    first = vault.commit_login_blocking("docs", vault.begin_login_blocking("docs"), login("a"))
    refreshed = vault.commit_refresh_blocking("docs", first.version, login("b"))
    assert refreshed is not None and refreshed.version == first.version + 1
    assert vault.commit_refresh_blocking("docs", first.version, login("c")) is None  # stale: another refreshed
    vault.remove_blocking("docs")
    assert vault.commit_refresh_blocking("docs", refreshed.version, login("d")) is None  # logged out meanwhile
    assert vault.read_blocking("docs") is None


def test_a_logout_or_a_newer_login_wins_over_a_login_started_before_it(tmp_path: Path) -> None:
    vault = vault_of(Credentials(tmp_path, "file"))
    older = vault.begin_login_blocking("docs")
    newer = vault.begin_login_blocking("docs")
    with pytest.raises(LoginSuperseded):
        vault.commit_login_blocking("docs", older, login("old"))
    vault.commit_login_blocking("docs", newer, login("new"))
    started = vault.begin_login_blocking("docs")
    vault.remove_blocking("docs")
    with pytest.raises(LoginSuperseded):
        vault.commit_login_blocking("docs", started, login("late"))
    assert vault.read_blocking("docs") is None


def test_a_login_status_comes_from_the_record_and_names_what_is_missing(tmp_path: Path) -> None:
    credentials = Credentials(tmp_path, "file")
    vault = vault_of(credentials)
    assert credentials.status_blocking("docs", URL).state is LoginState.NONE
    vault.note_needs_login_blocking("docs", "the server asks for an OAuth login")
    status = credentials.status_blocking("docs", URL)
    assert (status.state, status.display) == (LoginState.NEEDS_LOGIN, "needs login: the server asks for an OAuth login")
    vault.commit_login_blocking("docs", vault.begin_login_blocking("docs"), login(refresh=None))
    assert credentials.status_blocking("docs", URL).display.startswith("logged in (expires ")
    assert credentials.status_blocking("docs", URL + "?v=2").reason == (
        "the login was made for another URL; log in again for this one"
    )
    assert credentials.status_blocking("docs", None).state is LoginState.NONE  # a stdio server has no login


@pytest.mark.parametrize(
    ("url", "same"),
    [
        ("HTTPS://Tracker.Example/mcp", True),  # scheme and host are case-insensitive
        ("https://tracker.example/mcp#top", True),  # a fragment never reaches the server
        ("http://tracker.example/mcp", False),
        ("https://tracker.example:8443/mcp", False),
        ("https://other.example/mcp", False),
        ("https://tracker.example/mcp/v2", False),
        ("https://tracker.example/MCP", False),
        ("https://tracker.example/mcp?tenant=2", False),
    ],
)
def test_a_login_is_bound_to_the_url_it_was_made_for(tmp_path: Path, url: str, same: bool) -> None:
    # R-AUTH-3: another scheme, host, port, path or query is another resource; the stored login stays.
    credentials = Credentials(tmp_path, "file")
    vault = vault_of(credentials)
    vault.commit_login_blocking("docs", vault.begin_login_blocking("docs"), login())
    status = credentials.status_blocking("docs", url)
    if same:
        assert status.state is LoginState.LOGGED_IN
    else:
        assert (status.state, status.reason) == (
            LoginState.NEEDS_LOGIN,
            "the login was made for another URL; log in again for this one",
        )
    stored = vault.read_blocking("docs")
    assert stored is not None and stored[1].tokens.access_token == "token-a"


def test_records_refuse_what_they_cannot_read() -> None:
    for text in ("not json", "[]", '{"format": 2}', '{"format": 1, "version": -1}', '{"format": 1, "present": 1}'):
        with pytest.raises(ValueError):
            LoginRecord.from_json(text)
    for text in ('{"format": 1, "resource": "x", "tokens": {}}', '{"format": 1, "tokens": {"access_token": "a"}}'):
        with pytest.raises(ValueError):
            StoredLogin.from_json(text)


async def test_credentials_can_be_chosen_by_store_and_refuse_anything_else(tmp_path: Path) -> None:
    assert isinstance(Credentials(tmp_path, "file").store, FileCredentialStore)
    assert isinstance(Credentials(tmp_path).store, KeyringCredentialStore)
    own = FileCredentialStore(tmp_path / "vault")
    assert Credentials(tmp_path, own).store is own
    with pytest.raises(TypeError, match="store must be"):
        Credentials(tmp_path, "memory")  # type: ignore[arg-type]
    assert await Credentials(tmp_path, "file").logout("never") is False
    await trio.lowlevel.checkpoint()
