"""The loopback HTTP listener a login's browser is sent back to (R-AUTH-2).

:func:`serve_callback` listens on the redirect URI's loopback address and
port (a free one when the URI names none), answers the browser with a short
page, and hands each callback on its path to the login, which checks its
``state``. It serves one small GET at a time, reads at most
:data:`MAX_REQUEST_BYTES` of it, and closes every connection after
answering; anything else is answered ``404`` or ``400``. It runs in the
login's own nursery: cancelling the login, completing it, or its ten minutes
running out closes it.

Never logs a request's query: a callback carries the authorization code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final
from urllib.parse import parse_qsl, urlsplit

import attrs
import trio

__all__ = ["MAX_REQUEST_BYTES", "Callback", "CallbackVerdict", "serve_callback"]

logger = logging.getLogger(__name__)

MAX_REQUEST_BYTES: Final = 16 * 1024
"""The most of a request the listener reads: a callback is one short line of headers."""

_READ_TIMEOUT: Final = 10.0


@attrs.frozen
class Callback:
    """What a browser brought back: the query parameters of the callback URL.

    :param parameters: each parameter's first value (``code``, ``state``, ``iss``, ``error``, ...).
    """

    parameters: dict[str, str] = attrs.field(repr=False)


@attrs.frozen
class CallbackVerdict:
    """What the login made of a callback, for the page the browser is shown.

    :param accepted: the callback belongs to this login (its ``state`` matched).
    :param message: one sentence for the person at the browser.
    """

    accepted: bool
    message: str


def loopback_bind(redirect_uri: str) -> tuple[str, int, str]:
    """Where to listen for ``redirect_uri``: ``(address, port, path)``; port ``0`` picks a free one.

    ``localhost`` is served on ``127.0.0.1``.
    """
    parts = urlsplit(redirect_uri)
    host = (parts.hostname or "127.0.0.1").lower()
    address = "127.0.0.1" if host == "localhost" else host
    return address, parts.port or 0, parts.path or "/"


async def serve_callback(
    address: str,
    port: int,
    path: str,
    on_callback: Callable[[Callback], CallbackVerdict],
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``address:port`` until cancelled; report the port it listens on through ``task_status``.

    :param address: a loopback address.
    :param port: the port; ``0`` for a free one.
    :param path: the callback's path; other paths are answered ``404``.
    :param on_callback: decides about each callback on ``path`` (synchronously).
    :raises OSError: the address cannot be listened on (the port is taken, say).
    """
    listeners = await trio.open_tcp_listeners(port, host=address)
    try:
        bound = listeners[0].socket.getsockname()[1]
        task_status.started(int(bound))
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(_accept, listener, path, on_callback)
    finally:
        with trio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()


async def _accept(listener: trio.SocketListener, path: str, on_callback: Callable[[Callback], CallbackVerdict]) -> None:
    async with trio.open_nursery() as nursery:
        while True:
            stream = await listener.accept()
            nursery.start_soon(_answer, stream, path, on_callback)


async def _answer(stream: trio.SocketStream, path: str, on_callback: Callable[[Callback], CallbackVerdict]) -> None:
    async with stream:
        try:
            with trio.move_on_after(_READ_TIMEOUT):
                request = await _read_head(stream)
                status, page = _respond(request, path, on_callback)
                body = _page(page).encode()
                head = (
                    f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\n"
                    f"content-length: {len(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n"
                )
                await stream.send_all(head.encode() + body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the browser went away: nothing to tell it


async def _read_head(stream: trio.SocketStream) -> bytes:
    received = bytearray()
    while b"\r\n\r\n" not in received and len(received) < MAX_REQUEST_BYTES:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        received += chunk
    return bytes(received[:MAX_REQUEST_BYTES])


def _respond(request: bytes, path: str, on_callback: Callable[[Callback], CallbackVerdict]) -> tuple[str, str]:
    line = request.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "400 Bad Request", "This is not a request this page understands."
    method, target = parts[0], parts[1]
    where = urlsplit(target)
    if where.path != path:
        return "404 Not Found", "Nothing here."
    if method != "GET":
        return "405 Method Not Allowed", "The login callback is a GET."
    parameters: dict[str, str] = {}
    for key, value in parse_qsl(where.query, keep_blank_values=True):
        parameters.setdefault(key, value)
    verdict = on_callback(Callback(parameters))
    if verdict.accepted:
        return "200 OK", verdict.message
    return "400 Bad Request", verdict.message


def _page(message: str) -> str:
    escaped = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>wave-actors login</title></head>"
        f"<body><p>{escaped}</p></body></html>"
    )
