"""The asyncio examples are real: the "From asyncio" page's program and the Starlette back end run here (R-AIO-1)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from asyncio_support import no_server_left
from process_support import server_processes

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "asyncio.md"
STARLETTE_EXAMPLE = ROOT / "docs" / "examples" / "starlette_conversations.py"

Run = Callable[[Coroutine[Any, Any, Any]], Any]


def _asyncio_example() -> str:
    [example] = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return example


def test_the_readme_asyncio_program_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_asyncio_example(), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["hello from asyncio", "cancelled on the server"]


def _starlette_example() -> ModuleType:
    pytest.importorskip("starlette", reason="the Starlette example needs the web extra: pip install 'wave-actors[web]'")
    spec = importlib.util.spec_from_file_location("starlette_conversations", STARLETTE_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Asgi:
    """Just enough of an ASGI server to drive an app in this loop: its lifespan, and one request at a time."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lifespan_in: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lifespan_out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lifespan: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._lifespan = asyncio.ensure_future(
            self._app({"type": "lifespan", "asgi": {"version": "3.0"}}, self._lifespan_in.get, self._lifespan_out.put)
        )
        await self._lifespan_in.put({"type": "lifespan.startup"})
        assert (await self._lifespan_out.get())["type"] == "lifespan.startup.complete"

    async def stop(self) -> None:
        await self._lifespan_in.put({"type": "lifespan.shutdown"})
        assert (await self._lifespan_out.get())["type"] == "lifespan.shutdown.complete"
        assert self._lifespan is not None
        await self._lifespan

    async def request(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        payload = json.dumps(body).encode() if body is not None else b""
        received = [{"type": "http.request", "body": payload, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return received.pop(0) if received else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"content-type", b"application/json")],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
        }
        await self._app(scope, receive, send)
        status = next(message["status"] for message in sent if message["type"] == "http.response.start")
        content = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
        return status, json.loads(content) if content else None


def test_the_starlette_example_gives_each_conversation_a_session_destroyed_when_it_ends(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R-AIO-1, R-KILL-4
    module = _starlette_example()
    monkeypatch.setattr(module, "WORKDIR", tmp_path)

    async def scenario() -> None:
        server = _Asgi(module.app)
        await server.start()
        try:
            replies = await asyncio.gather(
                server.request("POST", "/conversations/c1/messages", {"text": "one"}),
                server.request("POST", "/conversations/c1/messages", {"text": "two"}),
                server.request("POST", "/conversations/c2/messages", {"text": "three"}),
            )
            assert [reply for _, reply in replies] == [
                {"conversation": "c1", "reply": "one"},
                {"conversation": "c1", "reply": "two"},
                {"conversation": "c2", "reply": "three"},
            ]
            assert len(server_processes()) == 2  # one session, one server, per conversation
            assert await server.request("DELETE", "/conversations/c1") == (204, None)
            assert len(server_processes()) == 1  # gone when the conversation ended
        finally:
            await server.stop()
        assert no_server_left()  # the rest went with the lifespan

    run(scenario())
