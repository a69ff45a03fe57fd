"""A turn's snapshots are written together, once its dials have settled (R-CACHE-1).

A write looks over the whole cache for its budget; while other servers of the
session are still connecting, it waits for them (at most ``SETTLE_LIMIT``),
and a session that closes meanwhile writes what it has at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterable
from pathlib import Path

import pytest
import trio
from session_support import idle_session

from wave_actors import ServerState
from wave_actors._cache import cache_directory, writer as cache_writer
from wave_actors._cache.model import CachedServer
from wave_actors.testing import fault_server_entry


class Writes:
    """Every cache write: the servers it carried. Writes run in worker threads."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.happened = threading.Event()
        self._write = cache_writer.update_cache

    def __call__(
        self, directory: Path, *, workdir: str, configured: Collection[tuple[str, str]], updates: Iterable[CachedServer]
    ) -> None:
        updates = list(updates)
        self._write(directory, workdir=workdir, configured=configured, updates=updates)
        self.batches.append(sorted(update.server for update in updates))
        self.happened.set()

    async def wait(self) -> None:
        with trio.fail_after(20):
            while not await trio.to_thread.run_sync(self.happened.wait, 0.05):
                pass


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    recorder = Writes()
    monkeypatch.setattr(cache_writer, "update_cache", recorder)
    return recorder


def cached_servers(home: Path) -> list[str]:
    return sorted(json.loads(path.read_text())["server"] for path in cache_directory(home).rglob("*.json"))


async def test_a_turn_dialing_several_servers_writes_them_once(
    tmp_path: Path, writes: Writes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_writer, "SETTLE_LIMIT", 60.0)  # only the dials settling may end the wait
    servers = {f"s{index}": fault_server_entry(init_delay=0.1 * index or None) for index in range(5)}
    async with idle_session(tmp_path, servers) as session:
        await session.prepare_turn()
        assert {status.state for status in session.servers()} == {ServerState.CONNECTED}
        await writes.wait()
        assert writes.batches == [sorted(servers)]
    assert cached_servers(tmp_path / "home") == sorted(servers)


async def test_a_dial_that_does_not_settle_holds_the_others_back_at_most_the_settle_limit(
    tmp_path: Path, writes: Writes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_writer, "SETTLE_LIMIT", 0.2)
    servers = {"fast": fault_server_entry(), "slow": fault_server_entry(init_delay=60.0)}
    async with idle_session(tmp_path, servers) as session, trio.open_nursery() as nursery:
        nursery.start_soon(session.connect, "slow")
        await session.connect("fast")
        await writes.wait()
        assert session.server("slow").state is ServerState.CONNECTING
        assert writes.batches == [["fast"]]
        nursery.cancel_scope.cancel()  # stops waiting for "slow"; closing the session ends its dial


async def test_a_session_closing_while_a_dial_is_unsettled_writes_what_it_learned(
    tmp_path: Path, writes: Writes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_writer, "SETTLE_LIMIT", 60.0)
    servers = {"fast": fault_server_entry(), "slow": fault_server_entry(init_delay=60.0)}
    with trio.fail_after(20):
        async with idle_session(tmp_path, servers) as session, trio.open_nursery() as nursery:
            nursery.start_soon(session.connect, "slow")
            await session.connect("fast")
            assert writes.batches == []  # waiting for "slow"
            nursery.cancel_scope.cancel()
    assert writes.batches == [["fast"]]
    assert cached_servers(tmp_path / "home") == ["fast"]
