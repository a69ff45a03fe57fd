"""The remote transports, streamable HTTP and SSE: the SDK's clients, made to notice and bounded.

:func:`~wave_actors._transport.dial.open_connection` uses these for ``http``
and ``sse`` entries (stdio has its own module, :mod:`.stdio`). The SDK's
clients are wrapped for three things they do not do by themselves:

- report when the server side ends the stream (:func:`_watch_end`), as a
  dead stdio process does by closing its pipes;
- notice a server that vanished without a word (a dropped HTTP server sends
  no EOF): :func:`heartbeat` pings it;
- bound the goodbye: on exit the SDK sends a DELETE or closes a stream with
  long timeouts, which to a vanished server would hold the reconnect, or the
  destroy, for minutes. It gets :data:`_CLOSE_TIMEOUT`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import trio

from wave_actors._config import ServerConfig, TransportType
from wave_actors._transport.connection import Connection
from wave_actors._transport.redaction import redact_text

__all__ = ["heartbeat", "open_remote_transport"]

logger = logging.getLogger(__name__)

_CLOSE_TIMEOUT: Final = 3.0
# Reading a streamed answer may legitimately take long; connect, write and pool waits may not.
_READ_TIMEOUT: Final = 300.0


@asynccontextmanager
async def open_remote_transport(
    config: ServerConfig, *, http_timeout: float, on_lost: Callable[[str], None]
) -> AsyncGenerator[tuple[Any, Any], None]:
    """Yield ``(read_stream, write_stream)`` to ``config``'s http or sse server.

    Leaving the block closes the transport within :data:`_CLOSE_TIMEOUT`
    seconds; an exception from the block is raised again even when the
    goodbye ran out of time.

    :param config: an http or sse entry with a url.
    :param http_timeout: seconds for HTTP connect, write and pool waits.
    :param on_lost: called when the server side ends the stream.
    """
    closing = trio.CancelScope()
    body_error: BaseException | None = None
    with closing:
        async with (
            _remote_streams(config, http_timeout) as (read_stream, write_stream),
            _watch_end(read_stream, on_lost) as watched,
        ):
            try:
                yield watched, write_stream
            except BaseException as error:
                body_error = error
                raise
            finally:
                closing.deadline = trio.current_time() + _CLOSE_TIMEOUT
    if closing.cancelled_caught:
        logger.info("server %r: closing the HTTP transport took over %g s; dropped", config.name, _CLOSE_TIMEOUT)
        if body_error is not None:
            raise body_error  # the goodbye's timeout must not swallow why the block ended


@asynccontextmanager
async def _remote_streams(config: ServerConfig, http_timeout: float) -> AsyncGenerator[tuple[Any, Any], None]:
    """The SDK's streamable HTTP or SSE client for ``config``."""
    assert config.url is not None
    import httpx2

    if config.transport is TransportType.HTTP:
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(http_timeout, read=_READ_TIMEOUT)
        async with (
            httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout) as client,
            streamable_http_client(config.url, http_client=client) as (read_stream, write_stream),
        ):
            yield read_stream, write_stream
        return
    from mcp.client.sse import sse_client

    async with sse_client(config.url, headers=dict(config.headers), timeout=http_timeout) as (
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
