"""How long the event loop was held: the stall a host's other sessions feel (R-CACHE-6, R-CFG-11).

A worker thread does not keep the event loop free by itself: Python code
holds the GIL, and ``json`` holds it for the whole of one document. What a
host feels is how late its tasks wake. :func:`watch_stalls` measures exactly
that: a task of its own sleeps 1 ms in a loop, and the worst it overslept is
the longest the loop was held (by the GIL, a garbage collection, the machine's
scheduler or a blocking call alike; measure a quiet block for comparison).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import trio

__all__ = ["Stalls", "watch_stalls"]


class Stalls:
    """What :func:`watch_stalls` saw: read :attr:`longest` once the block has ended."""

    __slots__ = ("longest",)

    def __init__(self) -> None:
        self.longest = 0.0
        """The longest a 1 ms sleep overslept, in seconds."""


@asynccontextmanager
async def watch_stalls(interval: float = 0.001) -> AsyncGenerator[Stalls, None]:
    """Measure the longest the trio event loop was held while the block runs.

    ``async with watch_stalls() as stalls: await host.create_session(...)``,
    then ``stalls.longest`` (seconds). The watching task sleeps ``interval``
    at a time, so stalls shorter than the timer's resolution do not show.

    :param interval: how long the watching task sleeps each time.
    """
    stalls = Stalls()
    done = trio.Event()

    async def watch() -> None:
        while not done.is_set():
            before = trio.current_time()
            await trio.sleep(interval)
            stalls.longest = max(stalls.longest, trio.current_time() - before - interval)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await trio.sleep(0)  # it runs before the block
        try:
            yield stalls
        finally:
            done.set()
