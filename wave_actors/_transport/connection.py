"""One MCP connection: open a transport, run the handshake, watch for loss.

:func:`open_connection` is the only way in. It is an async context manager
that must be entered and exited by the same task (anyio scopes inside the SDK
require it, python-sdk #577): the actor's transport task. Leaving it, for any
reason, closes the connection and, for stdio, reclaims the process family
before it returns.

Errors are mapped here, at the boundary, so nothing above this module sees an
``MCPError``, an ``httpx`` error or a bare ``OSError``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import attrs
import trio

from wave_actors._config import ServerConfig, TransportType
from wave_actors._errors import ConfigError, DialError, ServerUnavailable, ToolCallError, ToolTimeout, WaveActorsError
from wave_actors._transport.proctree import Graces
from wave_actors._transport.stderr import StderrLog

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.session import ClientSession

__all__ = ["Connection", "TransportOptions", "open_connection"]

logger = logging.getLogger(__name__)

# A server that keeps handing out cursors must not grow a tool list forever.
_MAX_TOOL_PAGES = 100
# Closing an HTTP transport sends a DELETE; a vanished server must not hold a reconnect for long.
_HTTP_CLOSE_TIMEOUT = 3.0


@attrs.frozen
class TransportOptions:
    """How transports are opened and closed.

    :param graces: stdio reclamation stage lengths (R-KILL-1, R-KILL-2).
    :param stderr_lines: lines of a stdio server's stderr kept in memory.
    :param http_timeout: seconds for HTTP connect, write and pool waits.
    :param ping_interval: seconds between liveness pings on http and sse
        connections (a dropped HTTP server sends no EOF); ``None`` disables.
        stdio needs none: a dead process closes its pipes.
    :param ping_timeout: seconds a ping may take before the connection is
        declared lost.
    """

    graces: Graces = Graces()
    stderr_lines: int = 200
    http_timeout: float = 30.0
    ping_interval: float | None = 10.0
    ping_timeout: float = 5.0


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
    """

    server: str
    session: ClientSession
    initialize_result: mcp_types.InitializeResult
    pid: int | None
    stderr: StderrLog | None
    _lost: trio.Event = attrs.field(factory=trio.Event)
    _loss_reason: str | None = None

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` from ``initialize`` (R-INS-1)."""
        return self.initialize_result.instructions

    @property
    def loss_reason(self) -> str | None:
        """Why the connection was lost by itself, or ``None`` while it is up."""
        return self._loss_reason

    def mark_lost(self, reason: str) -> None:
        """Record that the connection is gone; the first reason wins."""
        if self._loss_reason is None:
            self._loss_reason = reason
            self._lost.set()

    async def wait_lost(self) -> str:
        """Wait until the connection is lost by itself (crash, EOF, drop) and return why."""
        await self._lost.wait()
        assert self._loss_reason is not None
        return self._loss_reason

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, following pagination.

        :raises ServerUnavailable: the connection failed or closed meanwhile.
        :raises ToolCallError: the listing is malformed or endless (more than 100 pages).
        """
        import mcp_types as types

        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        try:
            for _ in range(_MAX_TOOL_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await self.session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
                if cursor in seen:
                    raise ToolCallError(f"server {self.server!r}: tools/list repeats the cursor {cursor!r}")
                seen.add(cursor)
            raise ToolCallError(f"server {self.server!r}: tools/list has more than {_MAX_TOOL_PAGES} pages")
        except Exception as exc:
            mapped = self._mapped(exc, "tools/list", None)
            if mapped is exc:
                raise
            raise mapped from exc

    async def call_tool(
        self, tool: str, arguments: Mapping[str, Any] | None, *, timeout: float
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` with a deadline counted from send (R-TOOL-4).

        Tool errors (``isError``) are returned; on timeout the request is
        cancelled on the server (``notifications/cancelled``) and never replayed.

        :param tool: the server's raw tool name.
        :param arguments: the tool's arguments.
        :param timeout: seconds from send; progress notifications do not extend it.
        :raises ToolTimeout: the deadline passed.
        :raises ServerUnavailable: the connection was lost before an answer came.
        :raises ToolCallError: the server answered with a JSON-RPC error, or a
            result the SDK rejected (e.g. breaking the tool's output schema).
        :raises TypeError: the arguments cannot be serialized to JSON.
        """
        # A plain try (no context manager, no per-call import): this is the hot path (R-TOOL-5).
        try:
            return await self.session.call_tool(tool, dict(arguments or {}), read_timeout_seconds=timeout)
        except Exception as exc:
            mapped = self._mapped(exc, f"tools/call {tool!r}", timeout)
            if mapped is exc:
                raise
            raise mapped from exc

    def _mapped(self, exc: Exception, what: str, timeout: float | None) -> Exception:
        """Our exception for a failure of one request: nothing from the SDK, anyio or httpx escapes."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic_core import PydanticSerializationError

        server = self.server
        if isinstance(exc, WaveActorsError):
            return exc
        if isinstance(exc, MCPError):
            if exc.code == REQUEST_TIMEOUT:
                return ToolTimeout(
                    f"server {server!r}: {what} timed out after {timeout:g} s; "
                    "it was cancelled on the server and will not be retried"
                )
            if exc.code == CONNECTION_CLOSED:
                return ServerUnavailable(f"server {server!r}: {what} failed: {self._why_closed()}")
            # The server's answer to this request; the connection is fine.
            return ToolCallError(f"server {server!r}: {what}: the server answered with error {exc.code}: {exc.message}", exc.code)
        if isinstance(exc, PydanticSerializationError):
            return TypeError(f"server {server!r}: {what}: the arguments are not JSON-serializable: {exc}")
        if isinstance(exc, (trio.BrokenResourceError, trio.ClosedResourceError, OSError, TimeoutError)):
            return ServerUnavailable(f"server {server!r}: {what} failed: {self._why_closed()}")
        if type(exc).__module__.startswith(("httpx", "anyio")):
            return ServerUnavailable(f"server {server!r}: {what} failed: {exc}")
        # pydantic's ValidationError (a malformed answer), or the SDK rejecting a
        # result that breaks the tool's own output schema.
        return ToolCallError(f"server {server!r}: {what}: the server's answer was rejected: {exc}")

    def _why_closed(self) -> str:
        return self._loss_reason or "connection closed"


def _single_leaf(error: BaseException) -> BaseException:
    """The one exception inside nested single-member groups, or the group itself."""
    leaf = error
    while isinstance(leaf, BaseExceptionGroup):
        members = cast("tuple[BaseException, ...]", leaf.exceptions)
        if len(members) != 1:
            break
        leaf = members[0]
    return cast(BaseException, leaf)


def _dial_error(config: ServerConfig, error: Exception, stderr: StderrLog | None) -> WaveActorsError:
    if isinstance(error, WaveActorsError):
        return error
    from mcp.shared.exceptions import MCPError

    detail = error.message if isinstance(error, MCPError) else (str(error) or type(error).__name__)
    message = f"server {config.name!r}: connect failed: {detail}"
    if stderr is not None and (tail := stderr.tail()):
        message += f"\n  stderr:\n    " + tail.replace("\n", "\n    ")
    return DialError(message)


@asynccontextmanager
async def open_connection(
    config: ServerConfig,
    *,
    options: TransportOptions = TransportOptions(),
    on_notification: Callable[[mcp_types.ServerNotification], None] | None = None,
) -> AsyncGenerator[Connection, None]:
    """Open, initialize and yield a :class:`Connection` to ``config``'s server.

    The caller bounds the dial with its own deadline (``trio.fail_after``);
    cancelling at any point, handshake included, reclaims everything the dial
    started before the cancellation propagates (R-RACE-2).

    :param config: the server entry. Its type decides the transport; an
        unknown type fails here (R-CFG-3), never at load time.
    :param options: transport settings.
    :param on_notification: called (synchronously, must not block) with each
        server notification, e.g. ``notifications/tools/list_changed``.
    :raises ConfigError: the entry's type is unknown or it lacks a command or url.
    :raises DialError: spawning, connecting or the handshake failed; the
        message carries the tail of the server's stderr.
    :raises ServerUnavailable: the transport failed after the handshake in a
        way that ends the block early (the SDK's HTTP clients raise out of
        their task groups when the server vanishes). A loss the transport
        survives is reported by :meth:`Connection.wait_lost` instead; callers
        treat both as "connection lost".
    """
    transport = config.transport
    if transport is None:
        raise ConfigError(
            f"server {config.name!r} in {config.origin}: unknown type {config.type!r}; "
            "expected 'stdio', 'http', 'streamable-http' or 'sse'"
        )
    if transport is not TransportType.STDIO and not config.url:
        raise ConfigError(f"server {config.name!r} in {config.origin}: {transport.value} entry has no url")

    await _import_sdk(transport)
    from mcp.client.session import ClientSession

    lost_reason: list[str] = []
    connection: Connection | None = None
    closing = False

    def on_lost(reason: str) -> None:
        if closing:
            return
        if connection is not None:
            connection.mark_lost(reason)
        else:
            lost_reason.append(reason)

    async def handle_message(message: mcp_types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            # The transport already logged it (a stdio garbage line, an HTTP error) with more context.
            logger.debug("server %r: transport error: %s", config.name, message)
            return
        if on_notification is not None:
            on_notification(message)

    stderr: StderrLog | None = None
    established = False
    body_error: BaseException | None = None
    try:
        async with _open_streams(config, options, on_lost) as (read_stream, write_stream, process):
            stderr = process.stderr if process is not None else None
            async with ClientSession(read_stream, write_stream, message_handler=handle_message) as session:
                try:
                    result = await session.initialize()
                except Exception as exc:
                    # A dead server's exit status says more than "connection closed".
                    cause = ConnectionError(lost_reason[0]) if lost_reason else exc
                    raise _dial_error(config, cause, stderr) from exc
                if lost_reason:
                    raise _dial_error(config, ConnectionError(lost_reason[0]), stderr)
                if process is not None:
                    process.established = True
                connection = Connection(
                    server=config.name,
                    session=session,
                    initialize_result=result,
                    pid=process.pid if process is not None else None,
                    stderr=stderr,
                )
                established = True
                async with trio.open_nursery() as watchers:
                    if transport is not TransportType.STDIO and options.ping_interval is not None:
                        watchers.start_soon(_heartbeat, connection, options)
                    try:
                        yield connection
                    except BaseException as exc:
                        body_error = exc
                        raise
                    finally:
                        closing = True
                        watchers.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group)
        if leaf is group or not isinstance(leaf, Exception):
            raise
        raise _mapped_failure(config, leaf, stderr, established, body_error) from leaf
    except Exception as exc:
        raise _mapped_failure(config, exc, stderr, established, body_error) from exc


def _mapped_failure(
    config: ServerConfig,
    error: Exception,
    stderr: StderrLog | None,
    established: bool,
    body_error: BaseException | None,
) -> Exception:
    """What :func:`open_connection` raises for ``error``.

    The caller's own exceptions pass through unchanged; a transport that fails
    after the handshake (the SDK's HTTP client raises out of its task group
    when the server vanishes) becomes :class:`ServerUnavailable`; anything
    before the handshake completed is a :class:`DialError`.
    """
    if error is body_error or isinstance(error, WaveActorsError):
        return error
    if established:
        detail = str(error) or type(error).__name__
        return ServerUnavailable(f"server {config.name!r}: connection lost: {detail}")
    return _dial_error(config, error, stderr)


_SDK_MODULES = {
    TransportType.STDIO: ("mcp.client.session", "mcp.shared.message"),
    TransportType.HTTP: ("mcp.client.session", "mcp.client.streamable_http", "httpx2"),
    TransportType.SSE: ("mcp.client.session", "mcp.client.sse"),
}


async def _import_sdk(transport: TransportType) -> None:
    """Import the SDK in a worker thread the first time it is needed.

    It takes around a second; imported inline, it would freeze every other
    session of the host for that long on the first dial.
    """
    for module in _SDK_MODULES[transport]:
        if module not in sys.modules:
            await trio.to_thread.run_sync(importlib.import_module, module)


async def _heartbeat(connection: Connection, options: TransportOptions) -> None:
    """Declare an http/sse connection lost when pings stop being answered."""
    assert options.ping_interval is not None
    while True:
        await trio.sleep(options.ping_interval)
        try:
            with trio.fail_after(options.ping_timeout):
                await connection.session.send_ping()
        except trio.TooSlowError:
            connection.mark_lost(f"no answer to ping within {options.ping_timeout:g} s")
            return
        except Exception as exc:
            connection.mark_lost(f"ping failed: {exc}")
            return


@asynccontextmanager
async def _open_streams(
    config: ServerConfig, options: TransportOptions, on_lost: Callable[[str], None]
) -> AsyncGenerator[tuple[Any, Any, Any], None]:
    """Yield ``(read_stream, write_stream, stdio_process_or_None)`` for the entry's transport."""
    transport = config.transport
    if transport is TransportType.STDIO:
        from wave_actors._transport.stdio import open_stdio_transport

        async with open_stdio_transport(
            config, graces=options.graces, on_lost=on_lost, stderr_lines=options.stderr_lines
        ) as (read_stream, write_stream, process):
            yield read_stream, write_stream, process
        return
    assert config.url is not None
    # The SDK's HTTP clients say goodbye on exit (a DELETE, a stream close)
    # with long timeouts; to a vanished server that would hold the reconnect,
    # or the destroy, for minutes. The goodbye gets _HTTP_CLOSE_TIMEOUT.
    closing = trio.CancelScope()
    body_error: BaseException | None = None
    with closing:
        async with _remote_streams(config, options) as (read_stream, write_stream):
            async with _watch_end(read_stream, on_lost) as watched:
                try:
                    yield watched, write_stream, None
                except BaseException as error:
                    body_error = error
                    raise
                finally:
                    closing.deadline = trio.current_time() + _HTTP_CLOSE_TIMEOUT
    if closing.cancelled_caught:
        logger.info("server %r: closing the HTTP transport took over %g s; dropped", config.name, _HTTP_CLOSE_TIMEOUT)
        if body_error is not None:
            raise body_error  # the goodbye's timeout must not swallow why the block ended


@asynccontextmanager
async def _remote_streams(config: ServerConfig, options: TransportOptions) -> AsyncGenerator[tuple[Any, Any], None]:
    """The SDK's streamable HTTP or SSE client for ``config``."""
    assert config.url is not None
    import httpx2

    if config.transport is TransportType.HTTP:
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(options.http_timeout, read=300.0)
        async with httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout) as client:
            async with streamable_http_client(config.url, http_client=client) as (read_stream, write_stream):
                yield read_stream, write_stream
        return
    from mcp.client.sse import sse_client

    async with sse_client(config.url, headers=dict(config.headers), timeout=options.http_timeout) as (
        read_stream,
        write_stream,
    ):
        yield read_stream, write_stream


@asynccontextmanager
async def _watch_end(read_stream: Any, on_lost: Callable[[str], None]) -> AsyncGenerator[Any, None]:
    """Relay ``read_stream`` and report when the server side ends it."""
    import anyio

    relay_send, relay_receive = anyio.create_memory_object_stream[Any](16)

    async def relay() -> None:
        async with relay_send:
            try:
                async for item in read_stream:
                    try:
                        await relay_send.send(item)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            on_lost("the server closed the connection")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay)
        try:
            yield relay_receive
        finally:
            relay_receive.close()
            nursery.cancel_scope.cancel()
