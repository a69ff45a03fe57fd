"""A protected MCP server and its OAuth authorization server, on two origins of 127.0.0.1, for the login tests.

Usage::

    python oauth_server.py [--transport streamable-http|sse]

Prints one line on stdout once both listen: ``listening <resource port> <authorization port>``.

The resource (``http://127.0.0.1:R``) is the SDK's reference server
(``wave_actors.testing.reference_server``) behind a bearer check: a request
without a valid token is answered ``401`` with ``WWW-Authenticate: Bearer
resource_metadata=...`` (and the scope the settings ask for); a
``tools/call`` whose token lacks ``step_up_scope`` is answered ``403
insufficient_scope``. Its protected resource metadata names the
authorization server.

The authorization server (``http://127.0.0.1:A``, another origin) does
discovery metadata, dynamic client registration, an authorization endpoint
that approves at once (it redirects to the redirect URI with a code and the
state), and a token endpoint for ``authorization_code`` (PKCE checked),
``refresh_token`` and ``client_credentials``. It records every request's
headers, so a test can see that no configured resource header ever reached it.

Control (on the authorization server's origin):

- ``GET /control/state``: counters and what was seen;
- ``POST /control/settings``: any of

  - ``expires_in`` (int): what a token answer says (the resource accepts
    every token for an hour, until revoked);
  - ``fail_exchange``, ``deny`` (bool): refuse the code exchange; answer the
    authorization with ``error=access_denied``;
  - ``hold_refresh`` (bool): hold every refresh until ``/control/release``;
  - ``rotate_refresh`` (bool): a refresh gives a new refresh token;
  - ``scope`` (str): the scope a ``401`` asks for;
  - ``step_up_scope`` (str): the scope a ``tools/call`` needs, refused
    ``403 insufficient_scope`` without it; ``refuse_always`` (bool): refused
    even with it;
  - ``next_tokens`` (list of str): the access and refresh tokens to issue
    next, in order;
  - ``redirect_away`` (``false``, ``"port"``, ``"host"`` or ``"scheme"``):
    the resource answers every request with a 307 to another origin: the
    authorization server's (another port), ``localhost`` on the resource's
    own port (another host name of the same server), or ``https`` on it
    (another scheme). ``/capture/mcp`` on either server records what a
    request there carried;

- ``GET /control/held``: answers once a refresh is held (with ``hold_refresh``);
- ``POST /control/release``: lets the held refreshes answer;
- ``POST /control/revoke``: every access token issued so far is refused from now on;
  ``POST /control/revoke-all``: every refresh token too.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import secrets
import socket
import sys
import time
from typing import Any
from urllib.parse import urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from wave_actors.testing.reference_server import build_server


class World:
    """Everything both servers share: clients, codes, tokens, settings and what was seen."""

    def __init__(self) -> None:
        self.resource_base = ""
        self.issuer = ""
        self.settings: dict[str, Any] = {
            "expires_in": 3600,
            "fail_exchange": False,
            "hold_refresh": False,
            "scope": None,
            "step_up_scope": None,
            "next_tokens": [],
            "rotate_refresh": True,
            "deny": False,
            "redirect_away": False,
            "refuse_always": False,
        }
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.counts = {"registrations": 0, "authorizations": 0, "exchanges": 0, "refreshes": 0, "machine": 0}
        self.headers_seen: list[dict[str, str]] = []
        self.moved_requests: list[dict[str, str]] = []
        self.held = asyncio.Event()
        self.release = asyncio.Event()
        self.resources: list[str | None] = []

    def token(self, prefix: str) -> str:
        queued: list[str] = self.settings["next_tokens"]
        return queued.pop(0) if queued else prefix + secrets.token_urlsafe(16)

    def issue(self, client_id: str, scope: str | None, *, refresh: bool = True) -> dict[str, Any]:
        access = self.token("at-")
        expires_in = int(self.settings["expires_in"])
        # The resource keeps a token valid for an hour whatever the client is told, so that a client told
        # "expired" (expires_in 0) is seen refreshing it, not refused.
        self.access[access] = {"client": client_id, "scope": scope, "expires": time.time() + 3600}
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": expires_in}
        if scope:
            answer["scope"] = scope
        if refresh:
            refresh_token = self.token("rt-")
            self.refresh[refresh_token] = {"client": client_id, "scope": scope}
            answer["refresh_token"] = refresh_token
        return answer


WORLD = World()


# The authorization server.


async def note(request: Request) -> None:
    WORLD.headers_seen.append({key.lower(): value for key, value in request.headers.items()})


async def metadata(request: Request) -> Response:
    await note(request)
    issuer = WORLD.issuer
    return JSONResponse(
        {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": ["mcp:read", "mcp:write"],
        }
    )


async def register(request: Request) -> Response:
    await note(request)
    body = await request.json()
    WORLD.counts["registrations"] += 1
    client_id = f"client-{WORLD.counts['registrations']}"
    method = body.get("token_endpoint_auth_method") or "client_secret_basic"
    client: dict[str, Any] = {
        "client_id": client_id,
        "redirect_uris": body.get("redirect_uris", []),
        "token_endpoint_auth_method": method,
        "grant_types": body.get("grant_types", ["authorization_code", "refresh_token"]),
    }
    if method != "none":
        client["client_secret"] = "cs-" + secrets.token_urlsafe(16)
    WORLD.clients[client_id] = client
    return JSONResponse(client, status_code=201)


async def authorize(request: Request) -> Response:
    await note(request)
    query = dict(request.query_params)
    client = WORLD.clients.get(query.get("client_id", ""))
    redirect_uri = query.get("redirect_uri", "")
    if client is None or (client["redirect_uris"] and redirect_uri not in client["redirect_uris"]):
        return JSONResponse({"error": "invalid_request", "error_description": "unknown client or redirect"}, 400)
    WORLD.counts["authorizations"] += 1
    WORLD.resources.append(query.get("resource"))
    state = query.get("state", "")
    if WORLD.settings["deny"]:
        return RedirectResponse(f"{redirect_uri}?{urlencode({'error': 'access_denied', 'state': state})}", 302)
    code = "code-" + secrets.token_urlsafe(12)
    WORLD.codes[code] = {
        "client": client["client_id"],
        "redirect_uri": redirect_uri,
        "challenge": query.get("code_challenge"),
        "scope": query.get("scope"),
    }
    return RedirectResponse(f"{redirect_uri}?{urlencode({'code': code, 'state': state})}", 302)


def client_of(request: Request, form: dict[str, str]) -> dict[str, Any] | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        client = WORLD.clients.get(client_id)
        return client if client is not None and client.get("client_secret") == secret else None
    client = WORLD.clients.get(form.get("client_id", ""))
    if client is None:
        return None
    if client["token_endpoint_auth_method"] == "none":
        return client
    return client if form.get("client_secret") == client.get("client_secret") else None


async def token(request: Request) -> Response:
    await note(request)
    form = {key: str(value) for key, value in (await request.form()).items()}
    client = client_of(request, form)
    if client is None:
        return JSONResponse({"error": "invalid_client"}, 401)
    grant = form.get("grant_type")
    if grant == "authorization_code":
        WORLD.counts["exchanges"] += 1
        if WORLD.settings["fail_exchange"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "refused by the test"}, 400)
        code = WORLD.codes.pop(form.get("code", ""), None)
        if code is None or code["client"] != client["client_id"] or code["redirect_uri"] != form.get("redirect_uri"):
            return JSONResponse({"error": "invalid_grant"}, 400)
        verifier = form.get("code_verifier", "")
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if digest != code["challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, 400)
        return JSONResponse(WORLD.issue(client["client_id"], code["scope"]))
    if grant == "refresh_token":
        WORLD.counts["refreshes"] += 1
        if WORLD.settings["hold_refresh"]:
            WORLD.held.set()
            await WORLD.release.wait()
        known = WORLD.refresh.get(form.get("refresh_token", ""))
        if known is None or known["client"] != client["client_id"]:
            return JSONResponse({"error": "invalid_grant"}, 400)
        if WORLD.settings["rotate_refresh"]:
            WORLD.refresh.pop(form.get("refresh_token", ""), None)
            return JSONResponse(WORLD.issue(client["client_id"], known["scope"]))
        answer = WORLD.issue(client["client_id"], known["scope"], refresh=False)
        return JSONResponse(answer)
    if grant == "client_credentials":
        WORLD.counts["machine"] += 1
        return JSONResponse(WORLD.issue(client["client_id"], form.get("scope"), refresh=False))
    return JSONResponse({"error": "unsupported_grant_type"}, 400)


async def moved(request: Request) -> Response:
    WORLD.moved_requests.append({key.lower(): value for key, value in request.headers.items()})
    return JSONResponse({"error": "you should not be here"}, 404)


async def control_state(request: Request) -> Response:
    return JSONResponse(
        {
            "counts": WORLD.counts,
            "headers_seen": WORLD.headers_seen,
            "moved_requests": WORLD.moved_requests,
            "resources": WORLD.resources,
            "clients": list(WORLD.clients.values()),
        }
    )


async def control_settings(request: Request) -> Response:
    WORLD.settings.update(await request.json())
    if not WORLD.settings["hold_refresh"]:
        WORLD.release.set()
    else:
        WORLD.held, WORLD.release = asyncio.Event(), asyncio.Event()
    return JSONResponse(WORLD.settings)


async def control_held(request: Request) -> Response:
    await WORLD.held.wait()
    return JSONResponse({"held": True})


async def control_release(request: Request) -> Response:
    WORLD.release.set()
    return JSONResponse({"released": True})


async def control_revoke(request: Request) -> Response:
    WORLD.access.clear()
    if request.url.path.endswith("/revoke-all"):
        WORLD.refresh.clear()
    return JSONResponse({"revoked": True})


def authorization_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/capture/mcp", moved, methods=["GET", "POST", "DELETE"]),
            Route("/control/state", control_state),
            Route("/control/settings", control_settings, methods=["POST"]),
            Route("/control/held", control_held),
            Route("/control/release", control_release, methods=["POST"]),
            Route("/control/revoke", control_revoke, methods=["POST"]),
            Route("/control/revoke-all", control_revoke, methods=["POST"]),
        ]
    )


# The resource.


class Protected:
    """The reference MCP server behind a bearer check, with its protected resource metadata."""

    def __init__(self, app: Any, path: str) -> None:
        self._app = app
        self._path = path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith("/.well-known/oauth-protected-resource"):
            body = {
                "resource": f"{WORLD.resource_base}{self._path}",
                "authorization_servers": [WORLD.issuer],
                "scopes_supported": ["mcp:read", "mcp:write"],
            }
            await _send_json(send, 200, body)
            return
        if path == "/capture/mcp":
            WORLD.moved_requests.append(
                {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
            )
            await _send_json(send, 404, {"error": "you should not be here"})
            return
        if WORLD.settings["redirect_away"]:
            location = _elsewhere(WORLD.settings["redirect_away"])
            await send({"type": "http.response.start", "status": 307, "headers": [(b"location", location.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        token = headers.get("authorization", "")
        granted = WORLD.access.get(token[7:]) if token.lower().startswith("bearer ") else None
        if granted is not None and granted["expires"] < time.time():
            granted = None
        if granted is None:
            await self._refuse(send, 401)
            return
        step_up: str | None = WORLD.settings["step_up_scope"]
        if step_up and scope["method"] == "POST":
            receive = await _peeked(receive)
            method = _method(receive)
            lacking = step_up not in (granted["scope"] or "").split() or WORLD.settings["refuse_always"]
            if method == "tools/call" and lacking:
                await self._refuse(send, 403, scope=step_up, error="insufficient_scope")
                return
        await self._app(scope, receive, send)

    async def _refuse(self, send: Any, status: int, *, scope: str | None = None, error: str | None = None) -> None:
        metadata = f"{WORLD.resource_base}/.well-known/oauth-protected-resource{self._path}"
        challenge = f'Bearer resource_metadata="{metadata}"'
        asked = scope or WORLD.settings["scope"]
        if asked:
            challenge += f', scope="{asked}"'
        if error:
            challenge += f', error="{error}"'
        await _send_json(send, status, {"error": error or "invalid_token"}, [(b"www-authenticate", challenge.encode())])


def _elsewhere(origin: str) -> str:
    """The capture URL on another origin than the resource's: another port, host name or scheme."""
    port = WORLD.resource_base.rsplit(":", 1)[1]
    return {
        "port": f"{WORLD.issuer}/capture/mcp",
        "host": f"http://localhost:{port}/capture/mcp",
        "scheme": f"https://127.0.0.1:{port}/capture/mcp",
    }[origin]


async def _peeked(receive: Any) -> Any:
    """A ``receive`` that replays the whole request body, which has been read to see its JSON-RPC method."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    replay.body = body  # type: ignore[attr-defined]
    return replay


def _method(receive: Any) -> str | None:
    try:
        return json.loads(receive.body).get("method")
    except (ValueError, AttributeError):
        return None


async def _send_json(send: Any, status: int, body: object, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


def resource_app(transport: str) -> tuple[Any, str]:
    server = build_server()
    if transport == "sse":
        return Protected(server.sse_app(), "/sse"), "/sse"
    return Protected(server.streamable_http_app(), "/mcp"), "/mcp"


def _socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


async def serve(transport: str) -> None:
    resource_socket, authorization_socket = _socket(), _socket()
    resource_port = resource_socket.getsockname()[1]
    authorization_port = authorization_socket.getsockname()[1]
    WORLD.resource_base = f"http://127.0.0.1:{resource_port}"
    WORLD.issuer = f"http://127.0.0.1:{authorization_port}"
    app, _ = resource_app(transport)
    resource = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    authorization = uvicorn.Server(
        uvicorn.Config(authorization_app(), log_level="warning", timeout_graceful_shutdown=1)
    )

    async def announce() -> None:
        while not (resource.started and authorization.started):
            await asyncio.sleep(0.01)  # uvicorn says it started only through this flag
        print(f"listening {resource_port} {authorization_port}", flush=True)

    await asyncio.gather(
        resource.serve(sockets=[resource_socket]), authorization.serve(sockets=[authorization_socket]), announce()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["streamable-http", "sse"], default="streamable-http")
    arguments = parser.parse_args()
    try:
        asyncio.run(serve(arguments.transport))
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
