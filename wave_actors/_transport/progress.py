"""Progress of the calls in flight on one connection, each delivered to its own caller alone (R-TOOL-10).

A call that asks for progress gets a token of its own (:meth:`ProgressRoutes.route`),
sent as the request's ``_meta.progressToken``. Every message a server sends
passes :meth:`ProgressRoutes.deliver` first (:func:`~wave_actors._transport.answers.checked_streams`
puts it on the read stream): a ``notifications/progress`` carrying a token of
a call in flight goes to that call's callback, synchronously and in the
order the server sent them, and no further; anything else goes on untouched.
A call that did not ask sends no token, so nothing changes for it.

The SDK has a progress callback of its own, but it runs each notification in
a task of its own, so a caller could see them out of order; routing here, on
the reading task, keeps the server's order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias, cast

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["ProgressCallback", "ProgressRoutes"]

logger = logging.getLogger(__name__)

ProgressCallback: TypeAlias = Callable[[float, "float | None", "str | None"], None]
"""``callback(progress, total, message)``, called synchronously; it must not block."""


class ProgressRoutes:
    """The progress callbacks of one connection's calls, by token.

    :param server: the server's name, for the log.
    """

    __slots__ = ("_issued", "_notification_type", "_routes", "server")

    def __init__(self, server: str) -> None:
        self.server = server
        self._routes: dict[str, ProgressCallback] = {}
        self._issued = 0  # tokens handed out (an int: an itertools.count is one more object per connection)
        # Resolved here, once: the dial has imported the SDK, and deliver() sees every message.
        from mcp_types import JSONRPCNotification

        self._notification_type = JSONRPCNotification

    @contextmanager
    def route(self, callback: ProgressCallback) -> Generator[str, None, None]:
        """Route the progress of one call to ``callback`` while the block runs, and yield the call's token."""
        self._issued += 1
        token = f"wave-actors-progress-{self._issued}"
        self._routes[token] = callback
        try:
            yield token
        finally:
            del self._routes[token]

    def deliver(self, item: SessionMessage | Exception) -> bool:
        """Hand ``item`` to its call's callback if it is the progress of a call in flight; ``True`` if it was."""
        if not self._routes or isinstance(item, Exception):
            return False
        message = item.message
        if not isinstance(message, self._notification_type) or message.method != "notifications/progress":
            return False
        params = message.params
        if not isinstance(params, dict):
            return False
        fields = cast("dict[str, object]", params)
        token, progress = fields.get("progressToken"), fields.get("progress")
        callback = self._routes.get(token) if isinstance(token, str) else None
        if callback is None or isinstance(progress, bool) or not isinstance(progress, int | float):
            return False
        total, text = fields.get("total"), fields.get("message")
        try:
            callback(
                float(progress),
                float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
                text if isinstance(text, str) else None,
            )
        except Exception as error:  # the caller's bug; it must not cost the connection
            logger.warning("server %r: a progress callback raised %r; the call goes on", self.server, error)
        return True
