"""Counting the tasks of a trio run: idle sessions must not cost a task per server (R-HOST-3)."""

from __future__ import annotations

import trio

__all__ = ["count_tasks"]


def count_tasks() -> int:
    """How many tasks the current trio run has: the root task and every task below it, at any depth.

    Take it before and after, say, creating a thousand idle sessions: the
    difference is what they cost in tasks.

    :raises RuntimeError: outside ``trio.run``.
    """
    root = trio.lowlevel.current_root_task()
    if root is None:
        raise RuntimeError("count_tasks() found no root task: the trio run is still starting")
    count, stack = 0, [root]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count
