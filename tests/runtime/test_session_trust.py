"""Live sessions follow the user's trust decisions (R-CFG-10, R-SCOPE-3).

A decision is a file in the host's home: a host opened with
``watch_config=True`` notices it (another process ran ``wave-actors
approve``), like an edit of a configuration file; otherwise
``host.reconcile(workdir)`` applies it.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio

from wave_actors import ApprovalState, Host, ServerState, SessionOptions, SessionSnapshot, TrustStore
from wave_actors.testing import fault_server_entry

LIMIT = 10.0


def write_project(workdir: Path, servers: dict[str, object]) -> None:
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


def names(snapshot: SessionSnapshot) -> list[str]:
    return [status.name for status in snapshot.servers]


async def test_r_cfg_10_an_approval_made_elsewhere_reaches_a_watching_host(
    tmp_path: Path, options: SessionOptions
) -> None:
    """R-CFG-10, R-SCOPE-3: approve, then revoke, from outside the host: its sessions follow, in both modes."""
    home = tmp_path / "home"
    write_project(tmp_path, {"docs": fault_server_entry()})
    store = TrustStore(tmp_path, home=home)
    async with Host.open(home=home, options=options, watch_config=True) as host:
        sessions = [
            await host.create_session(tmp_path, trust="approved"),
            await host.create_session(tmp_path, trust="approved", ownership="project"),
        ]
        assert [session.servers() for session in sessions] == [[], []]
        await trio.to_thread.run_sync(store.approve, ["docs"])
        with trio.fail_after(LIMIT):
            for session in sessions:
                await session.wait_for(lambda snapshot: names(snapshot) == ["docs"])
                await session.prepare_turn()
                assert session.server("docs").state is ServerState.CONNECTED
        await trio.to_thread.run_sync(store.revoke, ["docs"])
        with trio.fail_after(LIMIT):
            for session in sessions:
                await session.wait_for(lambda snapshot: names(snapshot) == [])


async def test_r_cfg_10_a_trusted_folders_wish_is_recorded_by_the_session_that_loads_it(
    tmp_path: Path, options: SessionOptions
) -> None:
    """R-CFG-10: the fingerprint seen when a trusted folder first enables a name is the one approved."""
    home = tmp_path / "home"
    write_project(tmp_path, {"docs": fault_server_entry()})
    store = TrustStore(tmp_path, home=home)
    store.trust()
    (tmp_path / ".wave").mkdir()
    (tmp_path / ".wave" / "settings.local.json").write_text(json.dumps({"mcp_json": {"enabled": ["docs"]}}))
    assert store.read().server("docs").approved_fingerprint is None  # wished for, not recorded yet
    async with Host.open(home=home, options=options) as host:
        session = await host.create_session(tmp_path, trust="approved")
        docs = store.read().server("docs")
        assert (docs.state, docs.approved_fingerprint) == (ApprovalState.APPROVED, session.server("docs").fingerprint)
        write_project(tmp_path, {"docs": fault_server_entry(tools=2)})
        result = await host.reconcile(tmp_path)
        assert result.removed == ("docs",)
        assert session.servers() == []
        assert store.read().server("docs").state is ApprovalState.CHANGED
