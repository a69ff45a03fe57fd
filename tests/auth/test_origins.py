"""No credentials across origins: tokens and configured headers stay with the resource (R-AUTH-4)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
import trio
from auth_support import OAuthServers, log_in, oauth_servers, session_options

from wave_actors import DialError, LoginRequired, ServerState, ServerUnavailable, ToolCallError, open_session

RESOURCE_SECRET = "resource-header-secret-7"


async def test_the_entrys_headers_never_reach_the_authorization_server_on_another_origin(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-4: discovery, registration, the token exchange and a refresh carry none of the entry's headers.
    await servers.settings(expires_in=0)  # so that the connection refreshes as well
    entry = {"url": servers.url, "headers": {"X-Api-Key": RESOURCE_SECRET}}
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers={"docs": entry}, options=session_options()
    ) as session:
        with trio.fail_after(30):
            status = await log_in(session, "docs")
            assert status is not None and status.state is ServerState.CONNECTED
    state = await servers.state()
    assert state["counts"]["refreshes"] >= 1
    assert state["headers_seen"], "the authorization server saw no request"
    for headers in state["headers_seen"]:
        assert "x-api-key" not in headers and RESOURCE_SECRET not in str(headers)


@pytest.mark.parametrize("elsewhere", ["port", "host", "scheme"])
@pytest.mark.parametrize("carried", ["a token", "the entry's headers"])
async def test_a_request_is_never_redirected_to_another_origin(
    servers: OAuthServers, tmp_path: Path, home: Path, carried: str, elsewhere: str
) -> None:
    # R-AUTH-4: the resource answers 307 to another port (the authorization server), another host name
    # of the same server (localhost), or https on the same port; the request is not sent there.
    entry: dict[str, object] = {"url": servers.url}
    if carried == "the entry's headers":
        entry["headers"] = {"Authorization": f"Bearer {RESOURCE_SECRET}"}  # its own credentials: no OAuth
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers={"docs": entry}, options=session_options()
    ) as session:
        with trio.fail_after(30):
            if carried == "a token":
                await log_in(session, "docs")
                await servers.settings(redirect_away=elsewhere)
                with pytest.raises((ServerUnavailable, ToolCallError), match="not followed"):
                    await session.call_tool("mcp__docs__echo", {"text": "x"})
            else:
                await servers.settings(redirect_away=elsewhere)
                with pytest.raises(DialError, match="not followed"):
                    await session.connect("docs")
    assert (await servers.state())["moved_requests"] == []
    if elsewhere != "scheme":  # the trap works: a request that does go there is recorded, with what it carried
        async with httpx2.AsyncClient() as client:
            await client.get(capture_url(servers, elsewhere), headers={"X-Probe": "followed"})
        assert [moved.get("x-probe") for moved in (await servers.state())["moved_requests"]] == ["followed"]


def capture_url(servers: OAuthServers, elsewhere: str) -> str:
    port = urlsplit(servers.url).port
    return f"{servers.issuer}/capture/mcp" if elsewhere == "port" else f"http://localhost:{port}/capture/mcp"


async def test_an_entry_with_its_own_authorization_header_is_not_logged_in(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-4: the entry manages its credentials; a 401 stays "credentials refused", no login is asked.
    entry = {"url": servers.url, "headers": {"Authorization": "Bearer not-a-token-of-this-server"}}
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers={"docs": entry}, options=session_options()
    ) as session:
        with trio.fail_after(30), pytest.raises(DialError, match="refused the credentials or headers") as raised:
            await session.connect("docs")
        assert not isinstance(raised.value, LoginRequired)
        assert session.server("docs").state is ServerState.ERROR
    assert (await servers.state())["counts"]["authorizations"] == 0


async def test_an_sse_server_asks_for_a_login_and_connects_after_it(tmp_path: Path, home: Path) -> None:
    # R-AUTH-1, R-AUTH-2: the same login over the SSE transport (a refused event stream).
    with oauth_servers("sse") as servers:
        async with open_session(
            workdir=tmp_path,
            home=home,
            credentials="file",
            mcp_servers={"docs": {"type": "sse", "url": servers.url}},
            options=session_options(),
        ) as session:
            with trio.fail_after(30):
                with pytest.raises(LoginRequired):
                    await session.connect("docs")
                status = await log_in(session, "docs")
                assert status is not None and status.state is ServerState.CONNECTED
                assert (await session.call_tool("mcp__docs__echo", {"text": "sse"})).content[0].text == "sse"  # type: ignore[union-attr]
