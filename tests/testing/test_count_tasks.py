"""``count_tasks`` counts every task of the trio run, at any depth (R-HOST-3 is measured with it)."""

from __future__ import annotations

import pytest
import trio

from wave_actors.testing import count_tasks


async def test_counts_tasks_in_nested_nurseries() -> None:
    before = count_tasks()

    async def parent() -> None:
        async with trio.open_nursery() as inner:
            inner.start_soon(trio.sleep_forever)
            inner.start_soon(trio.sleep_forever)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(parent)
        nursery.start_soon(trio.sleep_forever)
        await trio.testing.wait_all_tasks_blocked()
        assert count_tasks() - before == 4  # parent, its two children, one sleeper
        nursery.cancel_scope.cancel()
    assert count_tasks() == before


def test_outside_trio_it_raises() -> None:
    with pytest.raises(RuntimeError):
        count_tasks()
