"""Logins as a host uses them: one login for every session, machine clients, logout (R-AUTH-1..3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from auth_support import OAuthServers, approve, session_options, visit

from wave_actors import (
    DialError,
    Host,
    LoginFailed,
    LoginRequired,
    LoginState,
    ServerState,
    SessionSnapshot,
    load_config,
    open_session,
)


def connected(snapshot: SessionSnapshot) -> bool:
    return snapshot.server("docs").state is ServerState.CONNECTED


async def test_a_login_made_by_the_host_connects_every_session_that_waits_for_it(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: a settings page logs in without a session; the sessions needing it connect by themselves.
    entries = {"docs": {"url": servers.url}}
    async with Host.open(home=home, credentials="file", options=session_options(), watchdog=False) as host:
        first = await host.create_session(tmp_path, entries)
        second = await host.create_session(tmp_path, entries)
        with trio.fail_after(30):
            for session in (first, second):
                with pytest.raises(LoginRequired):
                    await session.connect("docs")
            config = load_config(tmp_path, home=home, constructor=entries).servers["docs"]
            async with host.login(config) as login:
                await visit(await approve(login.authorization_url))
                assert await login.wait() is None
            await first.wait_for(connected)
            await second.wait_for(connected)
            assert (await host.credentials.status("docs", servers.url)).state is LoginState.LOGGED_IN
            assert await host.logout("docs")
            for session in (first, second):
                await session.wait_for(lambda snapshot: snapshot.server("docs").state is ServerState.NEEDS_LOGIN)
    assert (await servers.state())["counts"]["authorizations"] == 1


async def test_a_machine_client_gets_its_token_by_itself_and_has_no_login(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1: client credentials (a daemon): no person, no login; the token is kept for the next connect.
    client = await servers.register(
        client_name="daemon", grant_types=["client_credentials"], token_endpoint_auth_method="client_secret_basic"
    )
    oauth = {
        "grant_type": "client_credentials",
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
    }
    entries = {"docs": {"url": servers.url, "oauth": oauth}}
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers=entries, options=session_options()
    ) as session:
        with trio.fail_after(30):
            status = await session.connect("docs")
            assert status.state is ServerState.CONNECTED
            assert (await session.login_status("docs")).state is LoginState.LOGGED_IN
            with pytest.raises(LoginFailed, match="machine client"):
                async with session.login("docs"):
                    pass
            await session.reconnect("docs")
    assert (await servers.state())["counts"]["machine"] == 1  # the second connection used the kept token


async def test_a_machine_client_signing_with_a_private_key_needs_a_key_it_can_sign_with(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1: private_key_jwt; a key that is not PEM fails the dial naming the field, never the key.
    oauth = {"grant_type": "client_credentials", "client_id": "daemon", "private_key": "not a key at all"}
    async with open_session(
        workdir=tmp_path,
        home=home,
        credentials="file",
        mcp_servers={"docs": {"url": servers.url, "oauth": oauth}},
        options=session_options(),
    ) as session:
        with trio.fail_after(30), pytest.raises(DialError, match=r"oauth\.private_key is not") as raised:
            await session.connect("docs")
    assert "not a key at all" not in str(raised.value)


async def test_a_logout_from_a_session_drops_its_live_connection_to_a_new_dial(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: the connection stops using the removed login at once: it is dialed again, and asks.
    async with open_session(
        workdir=tmp_path,
        home=home,
        credentials="file",
        mcp_servers={"docs": {"url": servers.url}},
        options=session_options(),
    ) as session:
        with trio.fail_after(30):
            async with session.login("docs") as login:
                await visit(await approve(login.authorization_url))
                await login.wait()
            assert await session.logout("docs")
            assert session.server("docs").state is ServerState.NEEDS_LOGIN
            assert (await session.login_status("docs")).state is LoginState.NEEDS_LOGIN
