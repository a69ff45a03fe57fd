"""No token, client secret or authorization code in a log record, a ``repr``, a diagnostic or the command line (R-AUTH-3, R-CFG-12).

Hypothesis chooses the tokens the authorization server issues (the access
and refresh tokens of a login and of the refreshes after it) and the
``client_secret`` an entry is configured with; a whole login, call, refresh
and logout runs with every logger at DEBUG, and everything a host could print
is searched for them.
"""

from __future__ import annotations

import json
import logging
import string
import subprocess
import sys
from typing import Any

import pytest
import trio
from auth_support import OAuthServers, approve, session_options
from hypothesis import HealthCheck, given, settings, strategies as st

from wave_actors import (
    Credentials,
    LoginRequired,
    LoginStatus,
    ServerConfig,
    Source,
    load_config,
    open_session,
)
from wave_actors._auth.records import LoginRecord, StoredLogin, StoredTokens

# Token-like text that no other text of a run contains by chance.
TOKENS = st.text(alphabet=string.ascii_letters + string.digits + "-._~", min_size=10, max_size=40).map(
    lambda text: f"Zq{text}"
)


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return [formatter.format(record) for record in caplog.records]


def assert_hidden(secrets: list[str], texts: list[str]) -> None:
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"{secret!r} shown in: {text[:500]}"


def cli_output(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "wave_actors", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.timeout(240)  # six whole logins, each with two runs of the command: a loaded machine takes minutes
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(TOKENS, min_size=8, max_size=8, unique=True))
async def test_no_issued_token_is_ever_shown(
    servers: OAuthServers,
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    tokens: list[str],
) -> None:
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    home, workdir = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"url": servers.url}}}), encoding="utf-8")
    await servers.settings(next_tokens=tokens, expires_in=0)  # every later use refreshes: more tokens go by
    shown: list[str] = []
    async with open_session(workdir=workdir, home=home, credentials="file", options=session_options()) as session:
        with trio.fail_after(30):
            try:
                await session.connect("docs")
            except LoginRequired as error:
                shown += [str(error), repr(error)]
            async with session.login("docs", listen=False) as login:
                shown.append(repr(login))
                callback = await approve(login.authorization_url)
                await login.complete(callback)
                status = await login.wait()
            shown += [repr(status), repr(session.snapshot()), repr(session.servers())]
            await session.call_tool("mcp__docs__echo", {"text": "x"})
            await session.reconnect("docs")  # a refresh, in a new connection
            shown.append(repr(await session.login_status("docs")))
            shown.append(cli_output("servers", "--home", str(home), "--workdir", str(workdir)))
            shown.append(cli_output("servers", "--json", "--home", str(home), "--workdir", str(workdir)))
            credentials = Credentials(home, "file")
            shown.append(repr(credentials))
            for record in credentials.records_directory.glob("*.record.json"):
                shown.append(record.read_text())
            await session.logout("docs")
            with pytest.raises(LoginRequired) as raised:
                await session.connect("docs")
            shown += [str(raised.value), repr(raised.value), repr(session.servers())]
    assert (await servers.state())["counts"]["refreshes"] >= 1
    assert_hidden(tokens, shown + logged(caplog))


@given(access=TOKENS, refresh=TOKENS, secret=TOKENS)
def test_records_and_settings_never_show_their_secrets(access: str, refresh: str, secret: str) -> None:
    login = StoredLogin(
        resource=f"https://h.example/mcp?key={secret}",
        tokens=StoredTokens(access_token=access, refresh_token=refresh, expires_at=1.0, scope="a b"),
        client={"client_id": "c", "client_secret": secret},
    )
    record = LoginRecord().committed(login)
    shown = [repr(login), str(login), repr(login.tokens), repr(record), record.to_json()]
    shown.append(repr(LoginStatus(state=__import__("wave_actors").LoginState.LOGGED_IN, scope="a b")))
    assert_hidden([access, refresh, secret], shown)
    assert StoredLogin.from_json(login.to_json()) == login  # the store keeps them whole


@given(secret=TOKENS)
def test_a_configured_client_secret_is_never_shown(tmp_path_factory: pytest.TempPathFactory, secret: str) -> None:
    workdir = tmp_path_factory.mktemp("config")
    entries: dict[str, Any] = {
        "good": {"url": "https://h.example/mcp", "oauth": {"client_id": "c", "client_secret": secret}},
        "typed": {"url": "https://h.example/mcp", "oauth": {"client_id": "c", "client_secret": [secret]}},
        "orphan": {"url": "https://h.example/mcp", "oauth": {"client_secret": secret}},
        "key": {"url": "https://h.example/mcp", "oauth": {"private_key": secret}},
    }
    loaded = load_config(workdir, home=workdir, constructor=entries, environ={})
    shown = [repr(loaded), *map(str, loaded.diagnostics), *map(repr, loaded.diagnostics)]
    shown += [repr(server) for server in loaded.servers.values()]
    assert set(loaded.servers) == {"good"}
    assert {diagnostic.field for diagnostic in loaded.diagnostics} == {
        "oauth.client_secret",
        "oauth.private_key",
    }
    assert_hidden([secret], shown)
    good: ServerConfig = loaded.servers["good"]
    assert good.source is Source.CONSTRUCTOR and good.oauth is not None and good.oauth.client_secret == secret
