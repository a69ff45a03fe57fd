"""A host logs in to a remote server that requires OAuth, against a real authorization server on another origin.

Each test runs the protected reference server and its authorization server
(``oauth_server.py``) as a process, and a session whose logins go to a file
store in a scratch home (R-AUTH-1..4).
"""

from __future__ import annotations

import socket
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import trio
import trio.testing
from auth_support import OAuthServers, approve, log_in, session_options, visit

from wave_actors import (
    Credentials,
    LoginExpired,
    LoginFailed,
    LoginRequired,
    LoginState,
    LoginSuperseded,
    ServerState,
    Session,
    ToolCallError,
    open_session,
)


def entry(servers: OAuthServers, **oauth: object) -> dict[str, object]:
    docs: dict[str, object] = {"url": servers.url}
    if oauth:
        docs["oauth"] = dict(oauth)
    return docs


def docs_session(
    servers: OAuthServers, workdir: Path, home: Path, **oauth: object
) -> AbstractAsyncContextManager[Session]:
    """A session with the protected server as ``docs`` (its ``oauth`` object if any), its logins in files under ``home``."""
    return open_session(
        workdir=workdir,
        home=home,
        credentials="file",
        mcp_servers={"docs": entry(servers, **oauth)},
        options=session_options(),
    )


def refused(redirect_uri: str) -> bool:
    """Whether nothing listens at the redirect URI's port any more."""
    parts = urlsplit(redirect_uri)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=2):
            return False
    except OSError:
        return True


def callback_with(callback: str, **changes: str) -> str:
    parts = urlsplit(callback)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return parts._replace(query=urlencode(query)).geturl()


async def test_a_server_that_asks_for_a_login_needs_one_and_connects_after_it_through_the_listener(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: needs_login is a state; the login's loopback listener takes the callback; the server connects.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            with pytest.raises(LoginRequired, match="needs a login") as raised:
                await session.connect("docs")
            assert raised.value.server == "docs"
            assert session.server("docs").state is ServerState.NEEDS_LOGIN
            assert "unavailable: waiting for a login" in session.working_set().render()
            assert (await session.login_status("docs")).display.startswith("needs login: the server asks")
            async with session.login("docs") as login:
                assert login.listening and login.redirect_uri.startswith("http://127.0.0.1:")
                callback = await approve(login.authorization_url)
                page = await visit(callback)
                assert page.status_code == 200 and "complete" in page.text
                status = await login.wait()
            assert refused(login.redirect_uri)  # closed with the completion
            assert status is not None and status.state is ServerState.CONNECTED
            result = await session.call_tool("mcp__docs__echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            login_status = await session.login_status("docs")
    assert login_status.state is LoginState.LOGGED_IN and login_status.refreshable
    counts = (await servers.state())["counts"]
    assert (counts["registrations"], counts["authorizations"], counts["exchanges"]) == (1, 1, 1)


async def test_a_browser_host_completes_the_login_with_the_callback_url_it_was_given(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: no listener (the browser is elsewhere): the host pastes the URL the browser ended on.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            async with session.login("docs", listen=False) as login:
                assert not login.listening
                await login.complete(await approve(login.authorization_url))
                status = await login.wait()
            assert status is not None and status.state is ServerState.CONNECTED


async def test_a_pasted_code_completes_a_login_whose_redirect_uri_is_not_this_machines(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: a non-local redirect URI (a browser host's page); the host passes the bare code back.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            async with session.login("docs", redirect_uri="https://host.example/oauth/callback") as login:
                assert not login.listening and login.redirect_uri == "https://host.example/oauth/callback"
                callback = await approve(login.authorization_url)
                assert callback.startswith("https://host.example/oauth/callback?")
                await login.complete(dict(parse_qsl(urlsplit(callback).query))["code"])
                status = await login.wait()
            assert status is not None and status.state is ServerState.CONNECTED


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_listener_listens_at_the_entrys_own_redirect_uri_and_only_on_its_path(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: a fixed redirect_uri (a client registered with it, say): the listener takes that port and path.
    fixed = f"http://localhost:{free_port()}/oauth/callback"
    async with docs_session(servers, tmp_path, home, redirect_uri=fixed) as session:
        with trio.fail_after(30):
            async with session.login("docs") as login:
                assert (login.redirect_uri, login.listening) == (fixed, True)
                assert dict(parse_qsl(urlsplit(login.authorization_url).query))["redirect_uri"] == fixed
                callback = await approve(login.authorization_url)
                assert callback.startswith(fixed + "?")
                elsewhere = urlsplit(callback)._replace(path="/other").geturl()
                assert (await visit(elsewhere)).status_code == 404  # not the callback: ignored
                assert not login.finished and login.refused_callbacks == 0
                assert (await visit(callback)).status_code == 200
                status = await login.wait()
            assert refused(fixed)
            assert status is not None and status.state is ServerState.CONNECTED


async def test_a_fixed_redirect_uri_whose_port_is_taken_fails_the_login_instead_of_moving(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: the authorization server knows only the fixed URI; another port would strand the browser.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        fixed = f"http://127.0.0.1:{taken.getsockname()[1]}/callback"
        async with docs_session(servers, tmp_path, home, redirect_uri=fixed) as session:
            with trio.fail_after(30), pytest.raises(LoginFailed, match="cannot listen for the login's callback"):
                async with session.login("docs"):
                    pass
    assert (await servers.state())["counts"]["authorizations"] == 0


async def test_a_callback_of_another_state_is_refused_and_the_login_goes_on_waiting(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: state checked, at the listener and in complete(); neither ends the login.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            async with session.login("docs") as login:
                callback = await approve(login.authorization_url)
                forged = callback_with(callback, state="not-the-state", code="forged")
                page = await visit(forged)
                assert page.status_code == 400 and "state mismatch" in page.text
                with pytest.raises(LoginFailed, match="state mismatch"):
                    await login.complete(forged)
                assert login.refused_callbacks == 2 and not login.finished and login.listening
                assert (await visit(callback)).status_code == 200
                status = await login.wait()
            assert status is not None and status.state is ServerState.CONNECTED
    assert (await servers.state())["counts"]["exchanges"] == 1  # the forged code was never exchanged


async def test_a_login_expires_after_ten_minutes_and_closes_its_listener(
    servers: OAuthServers, tmp_path: Path, home: Path, mock_clock: trio.testing.MockClock
) -> None:
    # R-AUTH-2: ten minutes on trio's clock; the listener closes, a late callback is refused.
    async with docs_session(servers, tmp_path, home) as session, session.login("docs") as login:
        assert login.deadline == pytest.approx(trio.current_time() + 600.0, abs=1.0)
        callback = await approve(login.authorization_url)
        mock_clock.jump(599.0)
        await trio.testing.wait_all_tasks_blocked()
        assert not login.finished and login.listening
        mock_clock.jump(2.0)
        with pytest.raises(LoginExpired, match="in time"):
            await login.wait()
        assert not login.listening
        assert refused(login.redirect_uri)
        with pytest.raises(LoginExpired):
            await login.complete(callback)
    assert (await servers.state())["counts"]["exchanges"] == 0


async def test_leaving_a_login_unfinished_cancels_it_and_closes_its_listener(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: cancel closes the listener; nothing is stored.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            async with session.login("docs") as login:
                callback = await approve(login.authorization_url)
                assert not refused(login.redirect_uri)
            assert refused(login.redirect_uri)
            with pytest.raises(LoginFailed, match="cancelled"):
                await login.wait()
            with pytest.raises(LoginFailed, match="cancelled"):
                await login.complete(callback)
            assert (await session.login_status("docs")).state is LoginState.NONE


async def test_the_newest_login_wins_over_an_older_one_completing_late(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-2: two logins of one server; the first completes after the second started and is not saved.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            async with session.login("docs", listen=False) as older:
                older_callback = await approve(older.authorization_url)
                async with session.login("docs", listen=False) as newer:
                    await older.complete(older_callback)
                    with pytest.raises(LoginSuperseded, match="newer login"):
                        await older.wait()
                    await newer.complete(await approve(newer.authorization_url))
                    status = await newer.wait()
            assert status is not None and status.state is ServerState.CONNECTED


async def test_a_refused_browser_step_or_exchange_keeps_the_stored_login(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: a failed login writes nothing; the server keeps working with the login it had.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
            record = Credentials(home, "file").records_directory
            before = {path.name: path.read_bytes() for path in record.iterdir() if path.suffix == ".json"}
            await servers.settings(fail_exchange=True)
            async with session.login("docs", listen=False) as login:
                await login.complete(await approve(login.authorization_url))
                with pytest.raises(LoginFailed, match="invalid_grant"):
                    await login.wait()
            await servers.settings(fail_exchange=False, deny=True)
            async with session.login("docs", listen=False) as login:
                with pytest.raises(LoginFailed, match="access_denied"):
                    await login.complete(await approve(login.authorization_url))
                with pytest.raises(LoginFailed, match="access_denied"):
                    await login.wait()
            after = {path.name: path.read_bytes() for path in record.iterdir() if path.suffix == ".json"}
            # The secret is untouched; the record changed only by the numbers of the two logins started.
            assert {name: data for name, data in after.items() if name.endswith(".secret.json")} == {
                name: data for name, data in before.items() if name.endswith(".secret.json")
            }
            await session.reconnect("docs")
            assert (await session.call_tool("mcp__docs__echo", {"text": "still"})).content[0].text == "still"  # type: ignore[union-attr]


async def test_expired_tokens_are_refreshed_without_a_second_login_also_by_a_new_session(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1: the access token expires at once; the connection refreshes it at the authorization
    # server's token endpoint (another origin, known from the stored login in a new session).
    await servers.settings(expires_in=0)
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            status = await log_in(session, "docs")
            assert status is not None and status.state is ServerState.CONNECTED
    refreshed = (await servers.state())["counts"]["refreshes"]
    assert refreshed >= 1
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await session.connect("docs")
            assert (await session.call_tool("mcp__docs__echo", {"text": "again"})).content[0].text == "again"  # type: ignore[union-attr]
    counts = (await servers.state())["counts"]
    assert counts["refreshes"] > refreshed and counts["authorizations"] == 1


async def test_a_token_the_server_no_longer_accepts_is_refreshed_once_and_the_request_sent_again(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1: a 401 to a token that looked valid: one refresh, then the same request with the new token.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
            await servers.control("revoke")
            assert (await session.call_tool("mcp__docs__echo", {"text": "ok"})).content[0].text == "ok"  # type: ignore[union-attr]
    counts = (await servers.state())["counts"]
    assert (counts["refreshes"], counts["authorizations"]) == (1, 1)


async def test_a_refused_refresh_asks_for_a_login(servers: OAuthServers, tmp_path: Path, home: Path) -> None:
    # R-AUTH-1: the authorization server no longer knows the refresh token: needs_login, saying why.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
            await session.disconnect("docs")
            await servers.control("revoke-all")
            with pytest.raises(LoginRequired, match="refused to refresh"):
                await session.connect("docs")
            status = await session.login_status("docs")
            assert status.state is LoginState.NEEDS_LOGIN and "refused to refresh" in (status.reason or "")
            await log_in(session, "docs")
            assert session.server("docs").state is ServerState.CONNECTED
            assert (await session.login_status("docs")).state is LoginState.LOGGED_IN


async def test_a_changed_url_needs_a_login_again_and_the_new_login_replaces_the_old(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: bound to the resource URL: another query is another resource.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
            await session.reconfigure({"docs": {"url": servers.url + "?tenant=2"}})
            with pytest.raises(LoginRequired, match="another URL"):
                await session.connect("docs")
            status = await session.login_status("docs")
            assert status.state is LoginState.NEEDS_LOGIN and "another URL" in (status.reason or "")
            secrets = list(Credentials(home, "file").records_directory.glob("*.secret.json"))
            assert len(secrets) == 1  # the old login is kept until a new one replaces it
            await log_in(session, "docs")
            assert (await session.login_status("docs")).state is LoginState.LOGGED_IN
            await session.reconfigure({"docs": {"url": servers.url}})
            with pytest.raises(LoginRequired, match="another URL"):
                await session.connect("docs")


async def test_a_call_that_needs_more_scope_asks_for_a_login_and_the_connection_stays_up(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1, R-AUTH-2: a step-up (403 insufficient_scope) on a call; the login asks for the union of scopes.
    async with docs_session(servers, tmp_path, home, scopes=["mcp:read"]) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
            await servers.settings(step_up_scope="mcp:write")
            with pytest.raises(LoginRequired, match="more scope") as raised:
                await session.call_tool("mcp__docs__echo", {"text": "x"})
            assert raised.value.scope == "mcp:write"
            assert session.server("docs").state is ServerState.CONNECTED
            await log_in(session, "docs")
            assert (await session.call_tool("mcp__docs__echo", {"text": "x"})).content[0].text == "x"  # type: ignore[union-attr]
            status = await session.login_status("docs")
    assert set((status.scope or "").split()) == {"mcp:read", "mcp:write"}


async def test_a_step_up_for_scope_the_login_already_grants_is_refused_not_asked_again(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-1: the retry limit: a server that keeps refusing a scope the login grants gets no new login.
    async with docs_session(servers, tmp_path, home) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")  # granted: mcp:read mcp:write (the resource's scopes_supported)
            await servers.settings(step_up_scope="mcp:write", refuse_always=True)
            with pytest.raises(ToolCallError, match="already grants") as raised:
                await session.call_tool("mcp__docs__echo", {"text": "x"})
            assert raised.value.code == 403
            assert session.server("docs").state is ServerState.CONNECTED
    assert (await servers.state())["counts"]["authorizations"] == 1
