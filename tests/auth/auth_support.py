"""Helpers for the login tests: the protected server and its authorization server, and a browser that logs in at once.

:func:`oauth_servers` runs ``oauth_server.py`` (a resource on one origin,
its authorization server on another) and yields their URLs; the control
functions talk to the authorization server's ``/control`` paths.
:func:`approve` plays the browser: it opens the authorization URL and
returns where the authorization server sends it back (the callback URL with
the code and the state).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2

SERVER_SCRIPT = Path(__file__).resolve().parent / "oauth_server.py"


@attrs.frozen
class OAuthServers:
    """The running servers.

    :param url: the MCP endpoint (``.../mcp`` or ``.../sse``).
    :param issuer: the authorization server's origin, another port of 127.0.0.1.
    """

    url: str
    issuer: str

    async def state(self) -> dict[str, Any]:
        async with httpx2.AsyncClient() as client:
            response = await client.get(f"{self.issuer}/control/state")
            response.raise_for_status()
            state: dict[str, Any] = response.json()
            return state

    async def settings(self, **settings: object) -> None:
        async with httpx2.AsyncClient() as client:
            (await client.post(f"{self.issuer}/control/settings", json=settings)).raise_for_status()

    async def control(self, what: str, *, timeout: float = 30.0) -> None:
        """``GET /control/held`` (waits until a refresh is held) or ``POST /control/release`` / ``revoke``."""
        async with httpx2.AsyncClient(timeout=timeout) as client:
            if what == "held":
                response = await client.get(f"{self.issuer}/control/held")
            else:
                response = await client.post(f"{self.issuer}/control/{what}")
            response.raise_for_status()

    async def register(self, **metadata: object) -> dict[str, Any]:
        """Register a client directly (a client registered in advance): its record, secret included."""
        async with httpx2.AsyncClient() as client:
            response = await client.post(f"{self.issuer}/register", json=metadata)
            response.raise_for_status()
            registered: dict[str, Any] = response.json()
            return registered


@contextmanager
def oauth_servers(transport: str = "streamable-http") -> Iterator[OAuthServers]:
    """Run the servers; yield once both listen. On exit the process is terminated, then killed."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--transport", transport],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the server's own word that both listen; "" if it died first
        if not line.startswith("listening "):
            raise RuntimeError(f"the OAuth test servers did not start (exit code {process.poll()})")
        resource, authorization = line.split()[1:3]
        path = "/sse" if transport == "sse" else "/mcp"
        yield OAuthServers(url=f"http://127.0.0.1:{resource}{path}", issuer=f"http://127.0.0.1:{authorization}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def approve(authorization_url: str) -> str:
    """Be the browser: open the authorization URL; return the callback URL the authorization server redirects to."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(authorization_url)
    assert response.status_code in (302, 303, 307), response.text
    return response.headers["location"]


async def visit(url: str) -> httpx2.Response:
    """Open ``url`` as a browser does (the callback, on the login's loopback listener)."""
    async with httpx2.AsyncClient() as client:
        return await client.get(url)


def session_options() -> Any:
    """The fast session options, without heartbeat pings (a ping would refresh tokens at its own time)."""
    from presets import FAST_SESSION

    return attrs.evolve(FAST_SESSION, transport=attrs.evolve(FAST_SESSION.transport, ping_interval=None))


async def log_in(session: Any, name: str, **login: Any) -> Any:
    """Log ``name`` in through the loopback listener, the authorization server approving at once; its status after."""
    async with session.login(name, **login) as flow:
        response = await visit(await approve(flow.authorization_url))
        assert response.status_code == 200, response.text
        return await flow.wait()
