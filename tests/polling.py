"""The one polling helper, for facts that no event announces: processes, files, sockets.

A session's own state is never polled: wait on it with
``session.wait_for(predicate)`` under ``trio.fail_after``, which wakes on
every change. What happens outside the host (a process exiting, a file
appearing, a port opening) has no such event, so :func:`poll_until` checks it
every ``interval`` and fails loudly past its limit.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import trio


async def poll_until(
    condition: Callable[[], bool | Awaitable[bool]], *, limit: float, what: str, interval: float = 0.01
) -> float:
    """Check ``condition`` until it holds; return the seconds it took.

    :param condition: a function, or an async function, that says whether the fact holds now.
    :param limit: seconds to wait at most.
    :param what: the fact, for the failure message.
    :param interval: seconds between two checks.
    :raises AssertionError: it did not hold within ``limit`` seconds.
    """
    started = trio.current_time()
    with trio.move_on_after(limit):
        while True:
            held = condition()
            if inspect.isawaitable(held):
                held = await held
            if held:
                return trio.current_time() - started
            await trio.sleep(interval)
    raise AssertionError(f"not within {limit:g} s: {what}")
