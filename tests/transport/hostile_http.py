"""A streamable HTTP MCP server that misbehaves on purpose: the standard library only, a thread per request.

It speaks just enough of the protocol for the SDK's client (``initialize``,
``tools/list``, ``tools/call``, ``ping``; notifications and answers are
accepted with ``202``; the ``GET`` stream is refused with ``405``) and
answers each request's POST with a JSON body or an event stream (``answers``).
Its tools:

- ``echo {text}``: answers the text.
- ``hang {}``: opens the call's event stream and never answers; it ignores
  ``notifications/cancelled`` and keeps the stream open until the client
  closes it (it writes a comment every 50 ms to notice). ``open_streams``
  counts those still open.
- ``misaddressed {}``: answers with the id of the ``tools/call`` received just
  before it, as a server mixing up its requests would.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, Literal, cast

_TOOLS: list[dict[str, object]] = [
    {"name": name, "description": f"{name}.", "inputSchema": {"type": "object", "properties": {}}}
    for name in ("echo", "hang", "misaddressed")
]


class HostileServer:
    """What a test sees of the server: its URL and what it went through.

    :param answers: how every request's POST is answered: ``"json"`` or ``"sse"``.
    """

    def __init__(self, answers: Literal["json", "sse"]) -> None:
        self.answers = answers
        self.url = ""
        self.open_streams = 0
        """``hang`` streams the client has not closed yet."""
        self.calls: list[Any] = []
        """The ids of every ``tools/call`` received, in order."""
        self.notifications: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()


def _handler(server: HostileServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests read the client's side

        def do_GET(self) -> None:
            self._empty(405)

        def do_DELETE(self) -> None:
            self._empty(200)

        def do_POST(self) -> None:
            decoded: object = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"null")
            if not isinstance(decoded, dict):
                self._empty(400)
                return
            body = cast("dict[str, Any]", decoded)
            method, request_id = body.get("method"), body.get("id")
            if method is None or request_id is None:
                if method is not None:
                    server.notifications.append(method)
                self._empty(202)
                return
            params = cast("dict[str, Any]", body.get("params") or {})
            if method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"},
                }
                self._answer(request_id, result, {"mcp-session-id": "hostile-session"})
            elif method == "tools/list":
                self._answer(request_id, {"tools": _TOOLS})
            elif method == "tools/call":
                self._call(request_id, params)
            elif method == "ping":
                self._answer(request_id, {})
            else:
                self._answer(request_id, None, error={"code": -32601, "message": f"no {method}"})

        def _call(self, request_id: Any, params: dict[str, Any]) -> None:
            with server.lock:
                before = server.calls[-1] if server.calls else None
                server.calls.append(request_id)
            name = params.get("name")
            if name == "hang":
                self._hang()
                return
            arguments = cast("dict[str, Any]", params.get("arguments") or {})
            text = str(arguments.get("text", ""))
            answered = before if name == "misaddressed" else request_id
            self._answer(answered, {"content": [{"type": "text", "text": f"{name}: {text}"}]})

        def _hang(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            with server.lock:
                server.open_streams += 1
            try:
                while not server.stopping.is_set():
                    self.wfile.write(b": still working\n\n")
                    self.wfile.flush()
                    server.stopping.wait(0.05)  # a comment every 50 ms, until the server stops
            except OSError:
                pass  # the client closed the stream
            finally:
                with server.lock:
                    server.open_streams -= 1

        def _answer(
            self,
            request_id: Any,
            result: dict[str, Any] | None,
            headers: dict[str, str] | None = None,
            error: dict[str, Any] | None = None,
        ) -> None:
            message = {"jsonrpc": "2.0", "id": request_id, **({"error": error} if error else {"result": result})}
            data = json.dumps(message).encode()
            if server.answers == "sse":
                data, content_type = b"event: message\ndata: " + data + b"\n\n", "text/event-stream"
            else:
                content_type = "application/json"
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _empty(self, status: int) -> None:
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

    return Handler


class _Listener(http.server.ThreadingHTTPServer):
    request_queue_size = 512  # the default 5 resets connections a burst of calls opens at once
    daemon_threads = True


@contextmanager
def hostile_http_server(answers: Literal["json", "sse"] = "sse") -> Generator[HostileServer, None, None]:
    """Serve a :class:`HostileServer` on 127.0.0.1; yields it, its ``url`` set to the ``/mcp`` endpoint."""
    server = HostileServer(answers)
    listener = _Listener(("127.0.0.1", 0), _handler(server))
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{listener.server_address[1]}/mcp"
    try:
        yield server
    finally:
        server.stopping.set()
        listener.shutdown()
        listener.server_close()
        thread.join()
