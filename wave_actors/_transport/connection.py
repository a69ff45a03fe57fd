"""A live, initialized MCP connection to one server, and its requests.

:class:`Connection` is built only by
:func:`~wave_actors._transport.dial.open_connection`, and used by the
actor's transport task (``wave_actors._actor.transport_task``), which lists
tools and waits for a loss the transport noticed by itself
(:meth:`Connection.wait_lost`), and by the actor
(``wave_actors._actor.actor``), whose tool calls it carries from any task. Failures of a request are worded by
:func:`~wave_actors._transport.failures.request_error`, so a caller only ever
sees our own errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from wave_actors._errors import ToolCallError
from wave_actors._transport.answers import ToolListingCheck
from wave_actors._transport.failures import request_error
from wave_actors._transport.progress import ProgressCallback, ProgressRoutes
from wave_actors._transport.stderr import StderrLog

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.session import ClientSession

__all__ = ["Connection", "ToolListing"]

# A server that keeps handing out cursors must not grow a tool list forever.
_MAX_TOOL_PAGES: Final = 100


@attrs.frozen
class ToolListing:
    """A server's tool listing.

    :param tools: the tools, in the server's order.
    :param skipped: one line per tool left out because the SDK rejects its
        listing: which tool, and why (R-TOOL-9).
    """

    tools: tuple[mcp_types.Tool, ...]
    skipped: tuple[str, ...] = ()


@attrs.define(eq=False)
class Connection:
    """A live, initialized MCP connection to one server.

    Owned by the task that opened it; any task may call :meth:`call_tool` and
    :meth:`list_tools` concurrently (R-TOOL-5).

    :param server: the server's name.
    :param session: the SDK session (use the methods here: they map errors).
    :param initialize_result: the server's answer to ``initialize``.
    :param pid: the stdio server's pid, ``None`` for http and sse.
    :param stderr: the stdio server's stderr log, ``None`` for http and sse.
    :param listing: the check that takes the tools the SDK would reject out of
        tool listings (R-TOOL-9); a connection built without one skips nothing.
    :param progress: the routes that deliver each call's progress to it
        (R-TOOL-10); a connection built without them cannot report progress.
    """

    server: str
    session: ClientSession
    initialize_result: mcp_types.InitializeResult
    pid: int | None
    stderr: StderrLog | None
    listing: ToolListingCheck | None = None
    progress: ProgressRoutes | None = None
    # Set when the connection is lost, or by wake(); a wake taken is replaced by a fresh event.
    _news: trio.Event = attrs.field(factory=trio.Event, init=False)
    # Set while a listing runs, for the next one to wait on: a lock would cost every connection its parking lot.
    _listing_done: trio.Event | None = attrs.field(default=None, init=False)
    _loss_reason: str | None = None

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` from ``initialize`` (R-INS-1)."""
        return self.initialize_result.instructions

    def mark_lost(self, reason: str) -> None:
        """Record that the connection is gone; the first reason wins.

        :param reason: why, in words for an error message (an exit status, a
            dropped stream, an unanswered ping).
        """
        if self._loss_reason is None:
            self._loss_reason = reason
            self._news.set()

    @property
    def lost(self) -> bool:
        """Whether the connection was lost by itself (then there is no server-side session left to end)."""
        return self._loss_reason is not None

    async def wait_lost(self) -> str:
        """Wait until the connection is lost by itself (crash, EOF, drop) and return why."""
        while (reason := await self.wait_lost_or_woken()) is None:
            pass
        return reason

    async def wait_lost_or_woken(self) -> str | None:
        """Wait until the connection is lost (return why) or :meth:`wake` is called (return ``None``).

        A wait that needs to end early costs no cancel scope this way: the
        serving task waits here between tool listings for as long as the
        connection lives.
        """
        news = self._news
        await news.wait()
        if self._loss_reason is not None:
            return self._loss_reason
        if self._news is news:
            self._news = trio.Event()  # this wake is taken
        return None

    def wake(self) -> None:
        """End the current (or next) :meth:`wait_lost_or_woken`, which returns ``None``."""
        self._news.set()

    async def list_tools(self) -> ToolListing:
        """Every tool the server lists, following pagination, and the tools skipped as invalid.

        A tool whose listing the SDK rejects (an input schema that is not an
        object schema, say) is skipped with a warning, and the others are kept
        (R-TOOL-9).

        :raises ServerUnavailable: the connection failed or closed meanwhile.
        :raises ToolCallError: the listing is malformed or endless (more than 100 pages).
        """
        # One listing at a time, so that what the check skipped belongs to this one.
        while self._listing_done is not None:
            await self._listing_done.wait()
        self._listing_done = done = trio.Event()
        try:
            skipped = self.listing.skipped if self.listing is not None else []
            skipped.clear()
            tools = await self._list_pages()
            return ToolListing(tuple(tools), tuple(skipped))
        finally:
            self._listing_done = None
            done.set()

    async def _list_pages(self) -> list[mcp_types.Tool]:
        import mcp_types

        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_TOOL_PAGES):
            page = await self._list_page(mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
            if cursor in seen:
                raise ToolCallError(f"server {self.server!r}: tools/list repeats the cursor {cursor!r}")
            seen.add(cursor)
        raise ToolCallError(f"server {self.server!r}: tools/list has more than {_MAX_TOOL_PAGES} pages")

    async def _list_page(self, params: mcp_types.PaginatedRequestParams | None) -> mcp_types.ListToolsResult:
        try:
            return await self.session.list_tools(params=params)
        except Exception as exc:
            raise request_error(
                exc, server=self.server, request="tools/list", timeout=None, loss_reason=self._loss_reason
            ) from exc

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        timeout: float,
        on_progress: ProgressCallback | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` with a deadline counted from send (R-TOOL-4).

        Tool errors (``isError``) are returned; on timeout the request is
        cancelled on the server (``notifications/cancelled``) and never replayed.

        :param tool: the server's raw tool name.
        :param arguments: the tool's arguments.
        :param timeout: seconds from send; progress notifications do not extend it.
        :param on_progress: called with ``(progress, total, message)`` for each
            ``notifications/progress`` of this call, in the server's order
            (R-TOOL-10); ``None`` sends no progress token.
        :raises ToolTimeout: the deadline passed.
        :raises ServerUnavailable: the connection was lost before an answer came.
        :raises ToolCallError: the server answered with a JSON-RPC error, or a
            result the SDK rejected (e.g. breaking the tool's output schema).
        :raises TypeError: the arguments cannot be serialized to JSON.
        """
        if on_progress is not None:
            return await self._call_with_progress(tool, arguments, timeout, on_progress)
        # A plain try (no context manager, no per-call import): this is the hot path (R-TOOL-5).
        try:
            return await self.session.call_tool(tool, dict(arguments or {}), read_timeout_seconds=timeout)
        except Exception as exc:
            raise request_error(
                exc, server=self.server, request=f"tools/call {tool!r}", timeout=timeout, loss_reason=self._loss_reason
            ) from exc

    async def _call_with_progress(
        self, tool: str, arguments: Mapping[str, Any] | None, timeout: float, on_progress: ProgressCallback
    ) -> mcp_types.CallToolResult:
        if self.progress is None:
            raise TypeError(f"server {self.server!r}: this connection cannot report progress")
        with self.progress.route(on_progress) as token:
            try:
                return await self.session.call_tool(
                    tool, dict(arguments or {}), read_timeout_seconds=timeout, meta={"progress_token": token}
                )
            except Exception as exc:
                raise request_error(
                    exc,
                    server=self.server,
                    request=f"tools/call {tool!r}",
                    timeout=timeout,
                    loss_reason=self._loss_reason,
                ) from exc
