"""``wave-actors serve --http``: many clients, one process per server, and the listener's defences (R-SERVE-1, R-SERVE-2).

Clients are the MCP SDK's own over streamable HTTP; the attacks are plain
HTTP requests built by hand, and each test proves its harm did not happen: no
session was opened, so no server process was started.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx2
import mcp_types as types
import psutil
import pytest
import trio
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from polling import poll_until
from serve_support import INITIALIZE, family, http_client, http_serve, serve_command, text, write_project

from wave_actors.testing import FAULT_SERVER_PATH, fault_server_entry

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process families are counted on Linux"),
    pytest.mark.timeout(90),
]

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def servers_of(mark: str) -> list[psutil.Process]:
    """The fault servers of a serve's family (not their grandchildren, not the watchdog)."""
    found: list[psutil.Process] = []
    for process in family(mark):
        try:
            command = process.cmdline()
        except psutil.Error:
            continue
        if str(FAULT_SERVER_PATH) in command and "--grandchild-process" not in command:
            found.append(process)
    return found


def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", {"alpha": fault_server_entry(), "beta": fault_server_entry(tools=1)})


async def test_three_clients_of_one_project_share_one_process_per_server(tmp_path: Path) -> None:
    # R-SCOPE-1 through serve: each MCP session is a session of one host, in project mode.
    mark = uuid.uuid4().hex
    async with (
        http_serve(project(tmp_path), tmp_path / "home", "--mode", "full", mark=mark) as (url, serve_pid),
        http_client(url) as (first, _),
        http_client(url) as (second, _),
        http_client(url) as (third, _),
    ):
        pids: set[int] = set()
        for session in (first, second, third):
            pids.add(json.loads(text(await session.call_tool("mcp__alpha__pid", {})))["pid"])
            assert text(await session.call_tool("mcp__beta__tool_1", {"text": "x"})) == "tool_1: x"
        assert len(pids) == 1
        servers = servers_of(mark)
        assert len(servers) == 2  # alpha and beta, once each, for three clients
        assert {server.ppid() for server in servers} == {serve_pid}


async def test_progress_and_list_changed_reach_each_http_client_on_its_own_streams(tmp_path: Path) -> None:
    # R-TOOL-10 and R-RACE-7 over HTTP: progress rides the call's stream, list_changed the session's own.
    mark = uuid.uuid4().hex
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry(progress_tool=True)})
    told = [trio.Event(), trio.Event()]

    def handler(index: int) -> MessageHandlerFnT:
        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                told[index].set()

        return on_message

    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with (
        http_serve(workdir, tmp_path / "home", "--mode", "full", mark=mark) as (url, _),
        http_client(url, message_handler=handler(0)) as (first, _),
        http_client(url, message_handler=handler(1)) as (second, _),
    ):
        result = await first.call_tool("mcp__alpha__progress", {"steps": 3}, progress_callback=on_progress)
        assert not result.is_error and seen == [1, 2, 3]
        await second.call_tool("mcp__alpha__notify_list_changed", {"add_tool": "added"})
        with trio.fail_after(10):
            for event in told:  # one server, shared: both clients' lists changed
                await event.wait()
        assert "mcp__alpha__added" in {tool.name for tool in (await first.list_tools()).tools}


async def test_working_set_mode_over_http_tells_each_client_the_working_set(tmp_path: Path) -> None:
    # R-WS-3, R-WS-4 over HTTP: the instructions ride the initialize answer of each MCP session.
    mark = uuid.uuid4().hex
    async with (
        http_serve(project(tmp_path), tmp_path / "home", mark=mark) as (url, _),
        http_client(url) as (first, opened_first),
        http_client(url) as (second, opened_second),
    ):
        for opened in (opened_first, opened_second):
            assert opened.instructions is not None and "alpha" in opened.instructions and "beta" in opened.instructions
        assert {tool.name for tool in (await first.list_tools()).tools} == {"mcp_call", "mcp_describe"}
        called = await second.call_tool("mcp_call", {"server": "beta", "tool": "tool_1", "arguments": {"text": "y"}})
        assert text(called) == "tool_1: y"


async def test_ended_sessions_give_their_servers_back_and_the_project_reclaims_them(tmp_path: Path) -> None:
    # R-SCOPE-2: DELETE destroys the session; with nobody left, the idle timer reclaims the servers.
    mark = uuid.uuid4().hex
    options = ("--mode", "full", "--project-idle", "0.5")
    async with http_serve(project(tmp_path), tmp_path / "home", *options, mark=mark) as (url, _):
        async with http_client(url) as (session, _):
            await session.call_tool("mcp__alpha__echo", {"text": "x"})
            assert len(servers_of(mark)) == 2
        await poll_until(lambda: servers_of(mark) == [], limit=10, what="the servers reclaimed after the DELETE")


async def test_a_client_gone_mid_call_leaves_no_process_once_its_session_expires(tmp_path: Path) -> None:
    # The client vanishes without DELETE: the MCP session expires, its session is destroyed, the idle timer ends it.
    mark = uuid.uuid4().hex
    log = tmp_path / "calls.jsonl"
    workdir = write_project(tmp_path / "project", {"alpha": fault_server_entry(call_log=log)})
    options = ("--mode", "full", "--session-idle", "1", "--project-idle", "0.5")
    async with http_serve(workdir, tmp_path / "home", *options, mark=mark) as (url, _):
        async with httpx2.AsyncClient() as client:
            opened = await client.post(url, json=INITIALIZE, headers=ACCEPT)
            assert opened.status_code == 200
            session_headers = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=initialized, headers=session_headers)).status_code == 202
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "mcp__alpha__sleep", "arguments": {"seconds": 60}},
            }
            with trio.move_on_after(30) as waiting:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(functools.partial(client.post, url, json=call, headers=session_headers))
                    await poll_until(
                        lambda: log.exists() and "sleep" in log.read_text(), limit=20, what="the call sent"
                    )
                    nursery.cancel_scope.cancel()  # the client goes away mid-call
            assert not waiting.cancelled_caught
        assert len(servers_of(mark)) == 1
        await poll_until(lambda: servers_of(mark) == [], limit=15, what="the server reclaimed after expiry")


async def test_a_foreign_origin_or_host_is_refused_with_403_and_opens_nothing(tmp_path: Path) -> None:
    # R-SERVE-2, DNS rebinding: a page of another site, or reached by a name rebound to 127.0.0.1.
    mark = uuid.uuid4().hex
    async with http_serve(project(tmp_path), tmp_path / "home", mark=mark) as (url, _), httpx2.AsyncClient() as client:
        foreign = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "origin": "https://evil.example"})
        assert foreign.status_code == 403
        sneaky = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "origin": "http://127.0.0.1.evil.example"})
        assert sneaky.status_code == 403
        port = url.split(":")[2].split("/")[0]
        rebound = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "host": f"evil.example:{port}"})
        assert rebound.status_code == 403
        assert servers_of(mark) == []
        local = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "origin": f"http://localhost:{port}"})
        assert local.status_code == 200 and "mcp-session-id" in local.headers


async def test_an_allowed_origin_is_let_in_exactly_as_named_and_no_lookalike(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    options = ("--allow-origin", "https://app.example")
    async with (
        http_serve(project(tmp_path), tmp_path / "home", *options, mark=mark) as (url, _),
        httpx2.AsyncClient() as client,
    ):
        for lookalike in ("https://app.example.evil", "http://app.example", "https://app.example:444"):
            refused = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "origin": lookalike})
            assert refused.status_code == 403, lookalike
        assert servers_of(mark) == []
        allowed = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "origin": "https://app.example"})
        assert allowed.status_code == 200


async def test_a_missing_or_wrong_token_is_refused_with_401_and_opens_nothing(tmp_path: Path) -> None:
    # R-SERVE-2: with --token-file, only the bearer of that token gets in.
    mark = uuid.uuid4().hex
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    options = ("--mode", "full", "--token-file", str(token_file))
    async with http_serve(project(tmp_path), tmp_path / "home", *options, mark=mark) as (url, _):
        async with httpx2.AsyncClient() as client:
            missing = await client.post(url, json=INITIALIZE, headers=ACCEPT)
            assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
            wrong = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "authorization": "Bearer s3cret-tokem"})
            assert wrong.status_code == 401
            scheme = await client.post(url, json=INITIALIZE, headers={**ACCEPT, "authorization": "Basic s3cret-token"})
            assert scheme.status_code == 401
        assert servers_of(mark) == []
        async with http_client(url, headers={"authorization": "Bearer s3cret-token"}) as (session, _):
            assert text(await session.call_tool("mcp__alpha__echo", {"text": "in"})) == "in"


def test_a_public_address_without_a_token_is_refused_before_listening(tmp_path: Path) -> None:
    completed = subprocess.run(
        serve_command(project(tmp_path), tmp_path / "home", "--http", "0.0.0.0:0"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert completed.returncode == 2
    assert "0.0.0.0" in completed.stderr and "--token-file" in completed.stderr
    assert "serving" not in completed.stderr
