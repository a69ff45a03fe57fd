"""Dialing one MCP server: import the SDK, open the transport, run the handshake.

:func:`open_connection` is the transport's only way in; the actor's transport
child (:func:`~wave_actors._actor.transport_task.run_transport`) calls it. It is an
async context manager that must be entered and exited by the same task (anyio
scopes inside the SDK require it, python-sdk #577). Leaving it, for any
reason, closes the connection and, for stdio, reclaims the process family
before it returns.

The transports themselves live in :mod:`.stdio` and :mod:`.remote`; the
connection it yields in :mod:`.connection`; what its failures become, in
:mod:`.failures`; importing the SDK, in :mod:`.sdk_import`. What the SDK's
session sees of the transport's streams is filtered by :mod:`.answers`, and
the server's own requests never reach it: :mod:`.server_requests` answers
them, from a nursery of this connection's transport.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from wave_actors._config import ServerConfig, TransportType
from wave_actors._errors import ConfigError
from wave_actors._transport.answers import ToolListingCheck, checked_streams
from wave_actors._transport.connection import Connection
from wave_actors._transport.failures import DialBoundary, dial_error
from wave_actors._transport.options import DEFAULT_MAX_MESSAGE_BYTES, TransportOptions, client_implementation
from wave_actors._transport.progress import ProgressRoutes
from wave_actors._transport.redaction import install_log_redaction, redact_text
from wave_actors._transport.remote import heartbeat, open_remote_transport
from wave_actors._transport.sdk_import import load_sdk
from wave_actors._transport.server_requests import ServerRequests

if TYPE_CHECKING:
    import mcp_types

    from wave_actors._auth.credentials import Credentials
    from wave_actors._transport.stdio import StdioProcess

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "TransportOptions", "client_implementation", "open_connection"]


logger = logging.getLogger(__name__)


@asynccontextmanager
async def open_connection(
    config: ServerConfig,
    *,
    options: TransportOptions = TransportOptions(),
    on_notification: Callable[[mcp_types.ServerNotification], None] | None = None,
    credentials: Credentials | None = None,
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
    :param credentials: where a remote server's OAuth login is kept (R-AUTH-1);
        ``None``: requests carry no OAuth token, and a server that asks for
        one refuses them as it refuses wrong headers.
    :raises ConfigError: the entry's type is unknown or it lacks a command or url.
    :raises DialError: spawning, connecting or the handshake failed; the
        message carries the tail of the server's stderr.
    :raises LoginRequired: the server asks for an OAuth login (R-AUTH-2).
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

    install_log_redaction()  # before the SDK's first record (R-CFG-12)
    await load_sdk(transport)  # at once if the host's preload is done, else the rest of it
    from mcp.client.session import ClientSession
    from mcp_types import Implementation, ToolListChangedNotification

    state = _DialState(config.name, on_notification, ToolListChangedNotification)
    on_lost = state.on_lost
    listing = ToolListingCheck(config.name)
    progress = ProgressRoutes(config.name)
    requests = ServerRequests(config.name, on_lost)
    name, version = client_implementation(options)
    client_info = Implementation(name=name, version=version)
    with DialBoundary(config.name) as boundary:
        async with _open_streams(config, options, state, on_lost, credentials) as (
            read_stream,
            write_stream,
            process,
            answering,
        ):
            boundary.stderr = process.stderr if process is not None else None
            # The server's requests are answered on this transport, by a task of its own (R-TOOL-13).
            requests.attach(answering, write_stream)
            read_stream, write_stream = checked_streams(read_stream, write_stream, listing, progress, requests)
            try:
                async with ClientSession(
                    read_stream, write_stream, message_handler=state.handle_message, client_info=client_info
                ) as session:
                    try:
                        result = await session.initialize()
                    except Exception as exc:
                        # A dead server's exit status says more than "connection closed".
                        lost = state.lost_reason
                        cause = ConnectionError(lost) if lost is not None else exc
                        raise dial_error(cause, server=config.name, stderr=boundary.stderr) from exc
                    if state.lost_reason is not None:
                        raise dial_error(ConnectionError(state.lost_reason), server=config.name, stderr=boundary.stderr)
                    if process is not None:
                        process.established = True
                    listing.protocol_version = session.protocol_version
                    state.connection = connection = Connection(
                        server=config.name,
                        session=session,
                        initialize_result=result,
                        pid=process.pid if process is not None else None,
                        stderr=boundary.stderr,
                        listing=listing,
                        progress=progress,
                    )
                    boundary.established = True
                    # A stdio server's loss shows on its pipes; a remote one is pinged, by a nursery of its own
                    # (a stdio connection opens none: an empty nursery costs each connection a kilobyte).
                    pinged = transport is not TransportType.STDIO and options.ping_interval is not None
                    async with trio.open_nursery() if pinged else contextlib.nullcontext() as watchers:
                        if watchers is not None and options.ping_interval is not None:
                            watchers.start_soon(heartbeat, connection, options.ping_interval, options.ping_timeout)
                        try:
                            yield connection
                        except BaseException as exc:
                            boundary.caller_error = exc
                            raise
                        finally:
                            state.closing = True
                            if watchers is not None:
                                watchers.cancel_scope.cancel()
            finally:
                requests.close()


class _DialState:
    """What the transport's callbacks and the dial share: a loss, the connection once it is made, the close.

    One object whose bound methods are the callbacks, rather than closures
    over the dial's locals: a connection keeps them as long as it lives.
    """

    __slots__ = ("_notification", "_on_notification", "closing", "connection", "lost_reason", "server")

    def __init__(
        self,
        server: str,
        on_notification: Callable[[mcp_types.ServerNotification], None] | None,
        notification: Callable[[], mcp_types.ServerNotification],
    ) -> None:
        self.server = server
        self._on_notification = on_notification
        self._notification = notification  # the SDK's ToolListChangedNotification, imported by the dial
        self.lost_reason: str | None = None
        """A loss reported before the connection was made (the first one)."""
        self.connection: Connection | None = None
        self.closing = False

    def on_lost(self, reason: str) -> None:
        if self.closing:
            return
        if self.connection is not None:
            self.connection.mark_lost(reason)
        elif self.lost_reason is None:
            self.lost_reason = reason

    def on_renewed(self) -> None:
        # A new server-side session may list other tools: as if the server said so.
        if self._on_notification is not None and not self.closing:
            self._on_notification(self._notification())

    def goodbye_due(self) -> bool:
        # A lost connection has no session left to end (R-KILL-8).
        return self.lost_reason is None and (self.connection is None or not self.connection.lost)

    async def handle_message(self, message: mcp_types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            # The transport already logged it (a stdio garbage line, an HTTP error) with more context.
            logger.debug("server %r: transport error: %s", self.server, redact_text(str(message)))
            return
        if self._on_notification is not None:
            self._on_notification(message)


def _open_streams(
    config: ServerConfig,
    options: TransportOptions,
    state: _DialState,
    on_lost: Callable[[str], None],
    credentials: Credentials | None,
) -> AbstractAsyncContextManager[tuple[Any, Any, StdioProcess | None, trio.Nursery]]:
    """``(read_stream, write_stream, stdio_process_or_None, nursery)`` for the entry's transport.

    The nursery is the transport's: a task there ends before the transport closes.
    A stdio transport is returned as it is (each layer of context managers
    costs a connection a few hundred bytes for as long as it lives).
    """
    if config.transport is TransportType.STDIO:
        # Imported here, with anyio: importing wave_actors needs neither.
        from wave_actors._transport.stdio import open_stdio_transport

        return open_stdio_transport(
            config,
            graces=options.graces,
            on_lost=on_lost,
            stderr_lines=options.stderr_lines,
            max_line_bytes=options.max_message_bytes,
        )
    return _open_remote_streams(config, options, on_lost, state.on_renewed, state.goodbye_due, credentials)


@asynccontextmanager
async def _open_remote_streams(
    config: ServerConfig,
    options: TransportOptions,
    on_lost: Callable[[str], None],
    on_renewed: Callable[[], None],
    goodbye_due: Callable[[], bool],
    credentials: Credentials | None,
) -> AsyncGenerator[tuple[Any, Any, None, trio.Nursery], None]:
    async with (
        open_remote_transport(
            config,
            options=options,
            on_lost=on_lost,
            on_renewed=on_renewed,
            goodbye_due=goodbye_due,
            credentials=credentials,
        ) as (read_stream, write_stream),
        trio.open_nursery() as nursery,
    ):
        try:
            yield read_stream, write_stream, None, nursery
        finally:
            nursery.cancel_scope.cancel()
