"""An actor's mailbox: its messages in arrival order, each with the event its poster waits on."""

from __future__ import annotations

import trio

from wave_actors._actor.messages import Message

__all__ = ["Mailbox"]


class Mailbox:
    """An actor's messages in arrival order, each with the event its poster waits on.

    A list and a wake-up: the actor's task is its only reader, and a memory
    channel costs several times as much per connected server.
    """

    __slots__ = ("_items", "_wakeup")

    def __init__(self) -> None:
        self._items: list[tuple[Message, trio.Event | None]] = []
        self._wakeup: trio.Event | None = None

    def put(self, message: Message, done: trio.Event | None) -> None:
        self._items.append((message, done))
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    async def take(self) -> tuple[Message, trio.Event | None]:
        """The next message, waiting for one; a checkpoint either way."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._items:
            await trio.lowlevel.cancel_shielded_checkpoint()
        while not self._items:
            self._wakeup = trio.Event()
            await self._wakeup.wait()
        return self._items.pop(0)

    def release_all(self) -> None:
        """Drop every waiting message and release its poster: it will never run."""
        items, self._items = self._items, []
        for _, done in items:
            if done is not None:
                done.set()
