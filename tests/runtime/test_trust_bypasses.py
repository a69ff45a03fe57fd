"""Attacks on project trust through a Host, each proving the crafted command never ran (R-CFG-10, R-CFG-13, R-SCOPE-1).

Each crafted project's server is the fault server with ``pid_file``: had it
started, the marker file would exist. Every test asserts that it does not,
and that what the session says tells why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from wave_actors import (
    ConfigError,
    Host,
    ServerState,
    SessionOptions,
    Source,
    TrustStore,
    UnknownTool,
    open_session,
)
from wave_actors.testing import fault_server_entry

LIMIT = 10.0


def write_project(workdir: Path, servers: dict[str, object]) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


# A session's workdir is resolved once --------------------------------------------------


@pytest.mark.parametrize("ownership", ["session", "project"])
async def test_r_cfg_10_a_repointed_symlinked_workdir_never_loads_the_other_project(
    tmp_path: Path, options: SessionOptions, ownership: str
) -> None:
    """Bypass 5, R-CFG-13, R-SCOPE-3: the session keeps the project it was created in; reloads never follow the link."""
    marker = tmp_path / "project-b-ran"
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    write_project(project_a, {"docs": fault_server_entry(instructions="project-a")})
    write_project(project_b, {"docs": fault_server_entry(instructions="project-b", pid_file=marker)})
    link = tmp_path / "current"
    link.symlink_to(project_a)
    async with Host.open(home=tmp_path / "home", options=options) as host:
        session = await host.create_session(link, ownership=ownership)  # type: ignore[arg-type]
        assert session.workdir == project_a.resolve()
        await session.prepare_turn()
        link.unlink()
        link.symlink_to(project_b)  # re-pointed: "current" is project B now

        await session.reconfigure()
        await host.reconcile(project_a)
        elsewhere = await host.reconcile(link)  # names project B now, where this session does not live

        assert elsewhere.added == elsewhere.removed == elsewhere.changed == ()
        assert session.workdir == project_a.resolve()
        await session.prepare_turn()
        result = await session.call_tool("mcp__docs__echo", {"text": "which project?"})
        assert result.content[0].text == "which project?"  # type: ignore[union-attr]
        assert session.server("docs").instructions == "project-a"
        assert session.server("docs").origin == str(project_a.resolve() / ".mcp.json")
        assert host.project_servers(link) == []
    assert not marker.exists()


async def test_r_cfg_10_a_relative_workdir_is_resolved_when_the_session_is_created(
    tmp_path: Path, options: SessionOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-CFG-13: a chdir after creation does not turn the session into another directory's."""
    marker = tmp_path / "other-ran"
    write_project(tmp_path / "one" / "project", {"docs": fault_server_entry()})
    write_project(tmp_path / "two" / "project", {"docs": fault_server_entry(pid_file=marker)})
    monkeypatch.chdir(tmp_path / "one")
    async with open_session(workdir="project", home=tmp_path / "home", options=options) as session:
        monkeypatch.chdir(tmp_path / "two")
        await session.reconfigure()
        await session.prepare_turn()
        assert session.workdir == (tmp_path / "one" / "project").resolve()
        assert session.server("docs").state is ServerState.CONNECTED
    assert not marker.exists()


@pytest.mark.parametrize("ownership", ["session", "project"])
async def test_r_cfg_10_a_missing_workdir_is_a_clear_error(tmp_path: Path, ownership: str) -> None:
    """R-CFG-13: the workdir must exist when the session is created; nothing is registered."""
    async with Host.open(home=tmp_path / "home") as host:
        with pytest.raises(ConfigError, match=r"workdir .*missing: no such directory"):
            await host.create_session(tmp_path / "missing", ownership=ownership)  # type: ignore[arg-type]
        (tmp_path / "file").touch()
        with pytest.raises(ConfigError, match="is not a directory"):
            await host.create_session(tmp_path / "file", ownership=ownership)  # type: ignore[arg-type]
        assert host.sessions() == []
    with pytest.raises(ConfigError, match="no such directory"):
        async with open_session(workdir=tmp_path / "missing", home=tmp_path / "home"):
            pass  # pragma: no cover


async def test_r_cfg_10_every_session_keeps_its_own_resolved_workdir(tmp_path: Path) -> None:
    """R-CFG-13: two spellings of one directory are one project; the session reports the resolved path."""
    write_project(tmp_path / "p", {})
    async with Host.open(home=tmp_path / "home") as host:
        sessions = [
            await host.create_session(tmp_path / "p" / ".", ownership="project"),
            await host.create_session(tmp_path / "p", ownership="project"),
        ]
        with trio.fail_after(LIMIT):
            assert {session.workdir for session in sessions} == {(tmp_path / "p").resolve()}


# Project sharing keys on what was loaded ------------------------------------------------


def write_user_file(home: Path, servers: dict[str, object]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


async def test_r_cfg_10_a_trust_all_session_never_replaces_the_server_an_approved_session_uses(
    tmp_path: Path, options: SessionOptions
) -> None:
    """Bypass 4: in project mode, an approved session keeps calling the entry it loaded, not the project's."""
    marker = tmp_path / "project-docs-ran"
    workdir, home = tmp_path / "repo", tmp_path / "home"
    write_project(workdir, {"docs": fault_server_entry(pid_file=marker)})
    write_user_file(home, {"docs": fault_server_entry(instructions="mine")})
    async with Host.open(home=home, options=options) as host:
        careful = await host.create_session(workdir, trust="approved", ownership="project")
        await careful.prepare_turn()
        trusting = await host.create_session(workdir, trust="all", ownership="project")

        result = await careful.call_tool("mcp__docs__echo", {"text": "still mine"})

        assert result.content[0].text == "still mine"  # type: ignore[union-attr]
        mine, theirs = careful.server("docs"), trusting.server("docs")
        assert (mine.source, mine.instructions, mine.state) == (Source.USER, "mine", ServerState.CONNECTED)
        assert (theirs.source, theirs.state) == (Source.PROJECT, ServerState.DISCONNECTED)
        assert mine.fingerprint != theirs.fingerprint
        assert [status.fingerprint for status in host.project_servers(workdir)] == [
            mine.fingerprint,
            theirs.fingerprint,
        ]
        [why] = [d for d in careful.diagnostics if d.server == "docs" and d.source is Source.PROJECT]
        assert "not loaded: it is not approved" in why.message
    assert not marker.exists()


async def test_r_cfg_10_an_entry_changed_after_approval_is_dropped_even_when_another_session_loads_it(
    tmp_path: Path, options: SessionOptions
) -> None:
    """Bypass 3 and 4: the trusting session's load of the new entry never reloads the approved one's connection."""
    marker = tmp_path / "changed-docs-ran"
    workdir, home = tmp_path / "repo", tmp_path / "home"
    write_project(workdir, {"docs": fault_server_entry(instructions="as approved")})
    TrustStore(workdir, home=home).approve(["docs"])
    async with Host.open(home=home, options=options) as host:
        careful = await host.create_session(workdir, trust="approved", ownership="project")
        await careful.prepare_turn()
        assert careful.server("docs").state is ServerState.CONNECTED
        write_project(workdir, {"docs": fault_server_entry(instructions="as approved", pid_file=marker)})  # a pull

        trusting = await host.create_session(workdir, trust="all", ownership="project")

        with pytest.raises(UnknownTool, match="nothing was sent"):
            await careful.call_tool("mcp__docs__echo", {"text": "anyone?"})
        assert [status.name for status in careful.servers()] == []
        [why] = [d for d in careful.diagnostics if d.server == "docs"]
        assert why.message.startswith("changed since approval: not loaded (args changed)")
        assert trusting.server("docs").state is ServerState.DISCONNECTED  # dialed by no one yet
    assert not marker.exists()
