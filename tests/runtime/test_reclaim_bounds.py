"""How long reclamation may take: an entry's own graces, and one grace for a whole session (R-KILL-2, R-KILL-9).

Every bound here is coarse (half the serial sum, or well under a grace that
must not run): it proves which graces apply and that a session's servers are
reclaimed together, never how fast a machine is.
"""

from __future__ import annotations

from pathlib import Path

import psutil
import trio

from wave_actors import Graces, Host, ProjectOptions, ServerState, SessionOptions, TransportOptions
from wave_actors.testing import fault_server_entry, is_alive, process_census

STUBBORN = {"ignore_sigterm": True, "exit_on_eof": False}


def stubborn(marker: str, **shutdown: int) -> dict[str, object]:
    entry = fault_server_entry(instructions=marker, grandchild=True, **STUBBORN)  # type: ignore[arg-type]
    if shutdown:
        entry["shutdown"] = shutdown
    return entry


def slow_options(options: SessionOptions, graces: Graces) -> SessionOptions:
    return SessionOptions(
        dial_timeout=options.dial_timeout,
        transport=TransportOptions(graces=graces),
        reconnect_backoff=options.reconnect_backoff,
        reconnect_intensity=options.reconnect_intensity,
        seed=options.seed,
    )


async def destroy_time(tmp_path: Path, options: SessionOptions, entry: dict[str, object]) -> float:
    """Seconds ``destroy_session`` takes for a session of ``entry`` (a server and its grandchild), all reclaimed."""
    async with Host.open(home=tmp_path / "home", options=options, watchdog=False) as host:
        session = await host.create_session(tmp_path, {"s": entry})
        await session.prepare_turn()
        assert session.server("s").state is ServerState.CONNECTED
        family = process_census()
        assert len(family) == 2  # the server and its grandchild
        started = trio.current_time()
        await host.destroy_session(session.id)
        elapsed = trio.current_time() - started
        assert [process for process in family if is_alive(process)] == []
        return elapsed


async def test_the_entry_eof_grace_replaces_the_session_s_and_its_term_grace_stays(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-KILL-9: the session's EOF grace would hold this destroy for 5 s; its TERM grace still runs.
    graces = Graces(eof=5.0, term=0.6, kill=1.0)
    elapsed = await destroy_time(tmp_path, slow_options(options, graces), stubborn("entry-eof", eof_ms=0))
    assert graces.term <= elapsed < 3.0, f"destroy took {elapsed:.2f} s"


async def test_a_stubborn_server_with_a_short_term_grace_is_reclaimed_without_the_session_s(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-KILL-9: the session's TERM grace would hold this destroy for 5 s; its EOF grace still runs.
    graces = Graces(eof=0.3, term=5.0, kill=1.0)
    elapsed = await destroy_time(tmp_path, slow_options(options, graces), stubborn("entry-term", term_ms=0))
    assert graces.eof <= elapsed < 3.0, f"destroy took {elapsed:.2f} s"


async def test_a_session_s_stubborn_servers_cost_one_grace_not_one_each(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-KILL-2: every server of a session is reclaimed at once; serially these four would take 4.8 s.
    graces = Graces(eof=0.2, term=1.0, kill=1.0)
    servers = {f"s{index}": stubborn(f"parallel-{index}") for index in range(4)}
    async with Host.open(home=tmp_path / "home", options=slow_options(options, graces), watchdog=False) as host:
        session = await host.create_session(tmp_path, servers)
        await session.prepare_turn()
        assert {status.state for status in session.servers()} == {ServerState.CONNECTED}
        family = process_census()
        assert len(family) == 8
        started = trio.current_time()
        await host.destroy_session(session.id)
        elapsed = trio.current_time() - started
        assert [process for process in family if is_alive(process)] == []
    assert graces.eof + graces.term <= elapsed < 2 * (graces.eof + graces.term), f"destroy took {elapsed:.2f} s"


async def test_a_project_s_stubborn_servers_cost_one_grace_when_the_host_closes(
    tmp_path: Path, options: SessionOptions
) -> None:
    # R-KILL-2, R-SCOPE-1: a project's shared connections are reclaimed together too.
    graces = Graces(eof=0.2, term=1.0, kill=1.0)
    servers = {f"s{index}": stubborn(f"project-{index}") for index in range(4)}
    family: list[psutil.Process] = []
    async with Host.open(
        home=tmp_path / "home",
        options=slow_options(options, graces),
        project=ProjectOptions(idle_timeout=0),
        watchdog=False,
    ) as host:
        session = await host.create_session(tmp_path, servers, ownership="project")
        await session.prepare_turn()
        assert {status.state for status in session.servers()} == {ServerState.CONNECTED}
        family = process_census()
        assert len(family) == 8
        started = trio.current_time()
    elapsed = trio.current_time() - started
    assert [process for process in family if is_alive(process)] == []
    assert graces.eof + graces.term <= elapsed < 2 * (graces.eof + graces.term), f"closing took {elapsed:.2f} s"
