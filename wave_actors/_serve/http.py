"""``wave-actors serve --http HOST:PORT``: streamable HTTP, one session per MCP session id (R-SERVE-1, R-SERVE-2).

The SDK's :class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager`
keeps the MCP sessions (ids, streams, ``DELETE``, expiry after
``session_idle`` seconds without a request); :class:`Gate`, the ASGI app in
front of it, decides who may reach it at all and which :class:`ClientSlot`
each request belongs to. A session's ``initialize`` opens its client (a
session of the host); when the SDK ends the MCP session, for a ``DELETE`` or
its expiry, the client's session is destroyed with it
(:meth:`~wave_actors._serve.front.Client.attend`). The server is hypercorn's,
on trio.

Defences, each checked before a request reaches the SDK:

* the listener binds to the address given, loopback unless told otherwise,
  and :class:`HttpOptions` refuses an address that is not loopback unless a
  bearer token is required (R-SERVE-2);
* ``Origin``, when a request has one (a browser's), must be a loopback origin
  or one named by ``--allow-origin``, else ``403``; on a loopback listener the
  ``Host`` must name loopback too, else ``403``: a page whose name was rebound
  to 127.0.0.1 gets no further (DNS rebinding);
* with a token, ``Authorization: Bearer TOKEN`` must carry it, compared in
  constant time (:func:`hmac.compare_digest`), else ``401``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, Final, TextIO, cast
from urllib.parse import urlsplit

import attrs
import trio

from wave_actors import Host
from wave_actors._serve.front import CURRENT_SLOT, ClientSlot, Front, FrontOptions

__all__ = ["MCP_PATH", "Gate", "HttpOptions", "is_loopback", "parse_address", "read_token", "serve_http"]

logger = logging.getLogger(__name__)

MCP_PATH: Final = "/mcp"
"""The one path clients reach the server at."""

_TOKEN_FILE_LIMIT: Final = 4096
"""The largest token file read, in bytes."""

_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 without brackets) is this machine's loopback only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a host and a port.

    :raises ValueError: the text is not of that form, or the port is not 0..65535.
    """
    host, colon, port = text.rpartition(":")
    if not colon or not host:
        raise ValueError("expected HOST:PORT, e.g. 127.0.0.1:8765")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("an IPv6 address goes in brackets: [::1]:8765")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"the port must be a number from 0 to 65535, not {port!r}")
    return host, int(port)


def read_token(path: Path) -> str:
    """The bearer token in ``path``: a small regular file's text, stripped.

    :raises OSError: the file cannot be read.
    :raises ValueError: it is not a regular file, is too large, or holds no token.
    """
    if not stat.S_ISREG(path.stat().st_mode):  # before opening: a FIFO would block the open itself
        raise ValueError("not a regular file")
    with path.open("rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # replaced between the two looks
            raise ValueError("not a regular file")
        data = file.read(_TOKEN_FILE_LIMIT + 1)
    if len(data) > _TOKEN_FILE_LIMIT:
        raise ValueError(f"larger than {_TOKEN_FILE_LIMIT} bytes: a token file holds one token")
    try:
        token = data.decode().strip()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if not token:
        raise ValueError("empty: it must hold the token")
    if any(character.isspace() or not character.isprintable() for character in token):
        raise ValueError("the token holds spaces or control characters")
    return token


@attrs.frozen
class HttpOptions:
    """How ``serve --http`` listens, and whom it lets in.

    :param host: the address to bind; loopback by default.
    :param port: the port; ``0`` lets the system pick one (announced once listening).
    :param token: the bearer token every request must carry; ``None`` for none.
    :param allowed_origins: browser origins accepted besides loopback ones, exactly as a browser sends them.
    :param session_idle: seconds an MCP session may go without a request before it ends.
    :raises ValueError: ``host`` is not loopback and no token is required (R-SERVE-2).
    """

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = attrs.field(default=None, repr=False)
    allowed_origins: tuple[str, ...] = ()
    session_idle: float = 1800.0

    def __attrs_post_init__(self) -> None:
        if not is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"refusing to listen on {self.host}, which is not loopback, without a bearer token: "
                "pass --token-file, or listen on 127.0.0.1"
            )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _host_name(authority: str) -> str:
    """The host of a ``Host`` header value or of an origin's netloc, without port or brackets."""
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


async def _answer(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Gate:
    """The ASGI app in front of the SDK's session manager: the defences, and each request's :class:`ClientSlot`.

    :param app: the session manager's ASGI entry.
    :param options: the listener's options (token, origins, loopback or not).
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], options: HttpOptions) -> None:
        self._app = app
        self._options = options
        self._slots: dict[str, ClientSlot] = {}

    def forget(self, slot: ClientSlot) -> None:
        """Drop a connection's slot once its client closed: its id is the SDK's to refuse from then on."""
        if slot.key is not None and self._slots.get(slot.key) is slot:
            del self._slots[slot.key]

    def sessions(self) -> int:
        """How many MCP sessions have a live client."""
        return len(self._slots)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why a request may not pass (status and reason), or ``None`` when it may."""
        origin = _header(scope, b"origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, "origin not allowed"
        host = _header(scope, b"host")
        if is_loopback(self._options.host) and (host is None or not is_loopback(_host_name(host))):
            return 403, "host not allowed: this server answers to loopback names only"
        if self._options.token is not None and not self._authorized(_header(scope, b"authorization")):
            return 401, "a bearer token is required"
        return None

    def _origin_allowed(self, origin: str) -> bool:
        if origin in self._options.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
            name = parts.hostname
            parts.port  # noqa: B018  # raises ValueError for a port that is not one
        except ValueError:
            return False
        clean = parts.path == "" and not parts.query and not parts.fragment and parts.username is None
        return clean and parts.scheme in ("http", "https") and name is not None and is_loopback(name)

    def _authorized(self, authorization: str | None) -> bool:
        token = self._options.token
        assert token is not None
        scheme, _, credential = (authorization or "").partition(" ")
        # Compared whatever the scheme, so a wrong scheme takes as long as a wrong token.
        matches = hmac.compare_digest(credential.strip().encode(), token.encode())
        return matches and scheme.lower() == "bearer"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope.get("path") != MCP_PATH:
            await _answer(send, 404, f"not found: the MCP endpoint is {MCP_PATH}")
            return
        refused = self.refusal(scope)
        if refused is not None:
            status, reason = refused
            extra = [(b"www-authenticate", b'Bearer realm="wave-actors"')] if status == 401 else []
            logger.warning("refused a request to %s: %s", MCP_PATH, reason)
            await _answer(send, status, reason, extra)
            return
        session_id = _header(scope, b"mcp-session-id")
        if session_id is None:
            await self._opening(scope, receive, send)
            return
        token = CURRENT_SLOT.set(self._slots.get(session_id))
        try:
            await self._app(scope, receive, send)
        finally:
            CURRENT_SLOT.reset(token)

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session id: an ``initialize`` may open a session, whose id the answer carries."""
        slot = ClientSlot()

        async def noting(message: Message) -> None:
            # An event-stream answer starts before the handler has run: the slot is kept by its id either way.
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", ()):
                    if bytes(key).lower() == b"mcp-session-id":
                        slot.key = bytes(value).decode("latin-1")
                        self._slots[slot.key] = slot
            await send(message)

        token = CURRENT_SLOT.set(slot)
        try:
            await self._app(scope, receive, noting)
        finally:
            CURRENT_SLOT.reset(token)
            if slot.client is None:
                self.forget(slot)  # no initialize opened a client: nothing to keep the id for
            elif slot.key is None:
                await slot.client.close()  # the initialize failed: no session id will ever reach it

    @staticmethod
    async def _lifespan(receive: Receive, send: Send) -> None:
        # The session manager runs around the listener (serve_http), not inside it.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


async def serve_http(host: Host, front_options: FrontOptions, options: HttpOptions, err: TextIO) -> None:
    """Serve streamable HTTP until cancelled; each MCP session is a session of ``host``.

    Announces ``wave-actors: serving http://HOST:PORT/mcp`` on ``err`` once it listens.

    :param host: the host every client's session belongs to.
    :param front_options: the project, the load mode and the trust mode.
    :param options: the listener's options.
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    async with trio.open_nursery() as nursery:
        front = Front(host, front_options, nursery)
        manager = StreamableHTTPSessionManager(
            app=front.server, security_settings=None, session_idle_timeout=options.session_idle
        )
        gate = Gate(manager.handle_request, options)
        front.on_client_closed = gate.forget
        config = Config()
        bound = f"[{options.host}]" if ":" in options.host else options.host
        config.bind = [f"{bound}:{options.port}"]
        config.accesslog = None
        config.errorlog = logging.getLogger(f"{__name__}.listener")  # ours: warnings only, one line each, on stderr
        config.graceful_timeout = 1.0
        async with manager.run():
            listen = cast(Any, serve)  # its WSGI half is untyped; the gate is an ASGI app
            binds: list[str] = await nursery.start(listen, gate, config)
            for bind in binds:
                err.write(f"wave-actors: serving {bind}{MCP_PATH}\n")
            err.flush()
            await trio.sleep_forever()
