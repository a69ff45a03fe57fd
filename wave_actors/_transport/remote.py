"""The remote transports, streamable HTTP and SSE: opened, watched and bounded on close.

:func:`~wave_actors._transport.dial.open_connection` uses these for ``http``
and ``sse`` entries (stdio has its own module, :mod:`.stdio`). The transports
themselves are in :mod:`.http` (the SDK's streamable HTTP client, kept in a
live server-side session that is ended on close) and :mod:`.sse` (our own
client of the HTTP+SSE protocol). This module adds what both need:

- notice a server that vanished without a word (a dropped HTTP server sends
  no EOF): :func:`heartbeat` pings it;
- carry the server's OAuth login (:func:`connection_auth`, R-AUTH-1);
- bound the close: ending the session and closing the streams get
  ``TransportOptions.close_timeout`` each, so a vanished server cannot hold a
  reconnect, or a destroy, for minutes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from wave_actors._config import ServerConfig, TransportType
from wave_actors._errors import DialError
from wave_actors._transport.connection import Connection
from wave_actors._transport.options import TransportOptions, client_implementation
from wave_actors._transport.redaction import redact_text

if TYPE_CHECKING:
    import httpx2

    from wave_actors._auth.credentials import Credentials

__all__ = ["connection_auth", "heartbeat", "open_remote_transport"]

logger = logging.getLogger(__name__)


@asynccontextmanager
async def open_remote_transport(
    config: ServerConfig,
    *,
    options: TransportOptions,
    on_lost: Callable[[str], None],
    on_renewed: Callable[[], None],
    goodbye_due: Callable[[], bool],
    credentials: Credentials | None = None,
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Yield ``(read_stream, write_stream)`` to ``config``'s http or sse server.

    Leaving the block ends the server-side session (http, unless
    ``goodbye_due()`` says the connection was lost) and closes the transport,
    within twice ``options.close_timeout``; an exception from the block is
    raised again even when the close ran out of time.

    :param config: an http or sse entry with a url.
    :param options: the transport settings.
    :param on_lost: called when the connection is lost by itself.
    :param on_renewed: called when an http server forgot its session and a new one was started.
    :param goodbye_due: whether leaving should end the server-side session (R-KILL-8).
    :param credentials: where the server's OAuth login is (R-AUTH-1); ``None``: no OAuth.
    :raises DialError: the entry's ``oauth.private_key`` cannot sign.
    """
    auth = connection_auth(config, credentials, options)
    closing = trio.CancelScope()
    body_error: BaseException | None = None
    with closing:
        async with _transport(config, options, on_lost, on_renewed, goodbye_due, auth) as streams:
            try:
                yield streams
            except BaseException as error:
                body_error = error
                raise
            finally:
                # The goodbye has its own bound (shielded); then as long again to close the streams.
                closing.deadline = trio.current_time() + 2 * options.close_timeout
    if closing.cancelled_caught:
        logger.info("server %r: closing the HTTP transport took over %g s; dropped", config.name, options.close_timeout)
        if body_error is not None:
            raise body_error  # the close's timeout must not swallow why the block ended


def connection_auth(
    config: ServerConfig, credentials: Credentials | None, options: TransportOptions
) -> httpx2.Auth | None:
    """The OAuth of a connection to ``config``'s server, or ``None`` (R-AUTH-1).

    ``None`` without credentials, and for an entry that sends its own
    ``Authorization`` header: that entry manages its credentials itself.

    :raises DialError: the entry's ``oauth.private_key`` cannot sign.
    """
    if credentials is None or any(name.lower() == "authorization" for name in config.headers):
        return None
    from wave_actors._auth.provider import ConnectionAuth

    name, _ = client_implementation(options)
    try:
        return ConnectionAuth(config, credentials, client_name=name)
    except ValueError as error:
        raise DialError(f"server {config.name!r} in {config.origin}: {error}") from None


def _transport(
    config: ServerConfig,
    options: TransportOptions,
    on_lost: Callable[[str], None],
    on_renewed: Callable[[], None],
    goodbye_due: Callable[[], bool],
    auth: httpx2.Auth | None,
) -> AbstractAsyncContextManager[tuple[Any, Any]]:
    if config.transport is TransportType.HTTP:
        from wave_actors._transport.http import open_http_transport

        return open_http_transport(
            config, options=options, on_lost=on_lost, on_renewed=on_renewed, goodbye_due=goodbye_due, auth=auth
        )
    from wave_actors._transport.sse import open_sse_transport

    return open_sse_transport(config, options=options, on_lost=on_lost, auth=auth)


async def heartbeat(connection: Connection, interval: float, timeout: float) -> None:
    """Declare a remote connection lost when pings stop being answered.

    Runs until the connection is declared lost or the caller cancels it.

    :param connection: the open http or sse connection.
    :param interval: seconds between pings.
    :param timeout: seconds a ping may take.
    """
    while True:
        await trio.sleep(interval)
        try:
            with trio.fail_after(timeout):
                await connection.session.send_ping()
        except trio.TooSlowError:
            connection.mark_lost(f"no answer to ping within {timeout:g} s")
            return
        except Exception as exc:
            connection.mark_lost(f"ping failed: {redact_text(str(exc)) or type(exc).__name__}")
            return
