"""Helpers for tests of the http and sse transports: the reference server's view of its sessions, and a stub that refuses."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import httpx2


def base_url(url: str) -> str:
    """``http://127.0.0.1:PORT`` of a reference server's ``.../mcp`` or ``.../sse`` URL."""
    return url.rsplit("/", 1)[0]


async def server_sessions(url: str) -> dict[str, list[str]]:
    """The streamable HTTP reference server's sessions: ``{"opened": [...], "ended_by_client": [...]}``."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(base_url(url) + "/wave-actors/sessions")
        response.raise_for_status()
        sessions: dict[str, list[str]] = response.json()
        return sessions


async def forget_sessions(url: str) -> int:
    """Make the streamable HTTP reference server forget every session, as a restarted server would."""
    async with httpx2.AsyncClient() as client:
        response = await client.post(base_url(url) + "/wave-actors/forget")
        response.raise_for_status()
        forgotten: int = response.json()["forgotten"]
        return forgotten


@contextmanager
def refusing_server(status: int, body: bytes = b"", content_type: str = "text/plain") -> Generator[str, None, None]:
    """A stub HTTP server on 127.0.0.1 answering every request with ``status``; yields its base URL."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _refuse

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the test reads the client's error, not the stub's log

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
