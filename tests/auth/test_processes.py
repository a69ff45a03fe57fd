"""What the processes of one machine agree on: the file store's modes, its lock, and a logout racing a refresh (R-AUTH-3)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from auth_support import OAuthServers, approve, log_in, session_options

from wave_actors import (
    Credentials,
    CredentialStoreError,
    LoginRequired,
    LoginState,
    LoginSuperseded,
    ServerState,
    open_session,
)
from wave_actors._auth.credentials import vault_of

SECOND = Path(__file__).resolve().parent / "second_process.py"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_file_store_is_owner_only_and_holds_the_login_outside_the_configuration(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: 0700 directory, 0600 files; the configuration file is untouched.
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"url": servers.url}}}))
    before = (home / "mcp.json").read_bytes()
    async with open_session(workdir=tmp_path, home=home, credentials="file", options=session_options()) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
    directory = Credentials(home, "file").records_directory
    assert mode(directory) == 0o700
    files = sorted(directory.iterdir())
    assert {path.name.rsplit(".", 2)[-2] for path in files if path.suffix == ".json"} == {"secret", "record"}
    for path in files:
        assert mode(path) == 0o600, path
    assert (home / "mcp.json").read_bytes() == before
    record = next(path for path in files if path.name.endswith(".record.json")).read_text()
    assert "access_token" not in record and "refresh_token" not in record and servers.url not in record


async def test_the_record_lock_is_honoured_by_a_second_process(servers: OAuthServers, home: Path) -> None:
    # R-AUTH-3: while another process holds a server's lock, no write happens here; after, it does.
    vault = vault_of(Credentials(home, "file", lock_timeout=0.5))
    holder = subprocess.Popen(
        [sys.executable, str(SECOND), "lock", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(CredentialStoreError, match="held the login lock"):
            await trio.to_thread.run_sync(vault.begin_login_blocking, "docs")
        assert vault.record_blocking("docs") is None  # nothing was written meanwhile
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        assert holder.stdout is not None
        holder.stdout.close()
    assert await trio.to_thread.run_sync(vault.begin_login_blocking, "docs") == 1


async def test_a_logout_in_one_process_drops_a_refresh_racing_in_another(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: the second process's refresh is held at the authorization server while this one logs out;
    # its answer arrives after the logout and brings nothing back.
    await servers.settings(expires_in=0)  # every token is refreshed at its next use
    entries = {"docs": {"url": servers.url}}
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers=entries, options=session_options()
    ) as session:
        with trio.fail_after(30):
            await log_in(session, "docs")
    await servers.settings(hold_refresh=True)
    outcome: list[str] = []

    async def second_process() -> None:
        done = await trio.run_process(
            [sys.executable, str(SECOND), "connect", str(home), servers.url], capture_stdout=True, check=True
        )
        outcome.append(done.stdout.decode())

    credentials = Credentials(home, "file")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(second_process)
            await servers.control("held")  # its refresh reached the authorization server, and waits there
            assert await credentials.logout("docs")
            await servers.control("release")
    second = json.loads(outcome[0])
    assert second["state"] == ServerState.NEEDS_LOGIN.value
    assert "removed while its tokens were being refreshed" in second["error"]
    assert list(credentials.records_directory.glob("*.secret.json")) == []
    assert (await credentials.status("docs", servers.url)).state is LoginState.NONE
    await servers.settings(hold_refresh=False)
    async with open_session(
        workdir=tmp_path, home=home, credentials="file", mcp_servers=entries, options=session_options()
    ) as session:
        with trio.fail_after(30), pytest.raises(LoginRequired):
            await session.connect("docs")


async def test_a_logout_in_another_process_voids_a_login_in_progress_here(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    # R-AUTH-3: a logout (the command, another process) comes after this login started and before its
    # code is exchanged: the login completes at the authorization server but is not saved.
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"url": servers.url}}}))
    async with open_session(workdir=tmp_path, home=home, credentials="file", options=session_options()) as session:
        with trio.fail_after(60):
            await log_in(session, "docs")
            stored = list(Credentials(home, "file").records_directory.glob("*.secret.json"))
            async with session.login("docs", listen=False) as login:
                callback = await approve(login.authorization_url)
                logout = [sys.executable, "-m", "wave_actors", "logout", "docs", "--home", str(home)]
                done = await trio.run_process(
                    [*logout, "--workdir", str(tmp_path), "--credentials", "file"], capture_stdout=True, check=True
                )
                assert done.stdout.decode() == "logged out of docs\n"
                await login.complete(callback)
                with pytest.raises(LoginSuperseded, match="logout came after this login started"):
                    await login.wait()
            assert (await servers.state())["counts"]["exchanges"] == 2  # its code was exchanged, late
            assert len(stored) == 1 and not stored[0].exists()
            assert list(Credentials(home, "file").records_directory.glob("*.secret.json")) == []
            assert (await session.login_status("docs")).state is not LoginState.LOGGED_IN
            with pytest.raises(LoginRequired):
                await session.reconnect("docs")
