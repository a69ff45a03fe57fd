"""A Starlette back end that gives every conversation its own MCP servers, through wave-actors' asyncio face.

One session per conversation id, created on the conversation's first
message; ``DELETE /conversations/{id}`` ends the conversation and destroys
its session, returning once its server processes are gone. Leaving the
lifespan (the server shutting down) destroys whatever sessions are left.

Run it with ``uvicorn starlette_conversations:app`` (``pip install 'wave-actors[web]' uvicorn``)::

    curl -X POST localhost:8000/conversations/c1/messages -d '{"text": "hello"}'
    curl -X DELETE localhost:8000/conversations/c1

The servers are the bundled stdlib test server; a real back end passes its
own entries (or none: then ``~/.wave/mcp.json`` and the project's ``.mcp.json``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wave_actors.asyncio import Host, Session
from wave_actors.testing import fault_server_entry

WORKDIR = Path(os.environ.get("CONVERSATIONS_WORKDIR", ".")).resolve()
SERVERS = {"echo": fault_server_entry()}


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    async with Host.open() as host:  # leaving it destroys every session left
        app.state.host = host
        app.state.sessions = {}  # conversation id -> the task creating its session
        yield


async def start_conversation(host: Host, conversation_id: str) -> Session:
    session = await host.create_session(WORKDIR, SERVERS, session_id=conversation_id)
    await session.prepare_turn()  # the first turn dials the conversation's servers
    return session


async def conversation_session(request: Request, conversation_id: str) -> Session:
    """The conversation's session, created and dialed once even when its first messages arrive together."""
    sessions: dict[str, asyncio.Task[Session]] = request.app.state.sessions
    if conversation_id not in sessions:
        sessions[conversation_id] = asyncio.ensure_future(start_conversation(request.app.state.host, conversation_id))
    return await asyncio.shield(sessions[conversation_id])  # a request that goes away leaves it to the others


async def post_message(request: Request) -> Response:
    conversation_id = request.path_params["conversation_id"]
    text = (await request.json())["text"]
    session = await conversation_session(request, conversation_id)
    await session.prepare_turn()  # later turns: dials whatever has become due (nothing, here)
    result = await session.call_tool("mcp__echo__echo", {"text": text})
    return JSONResponse({"conversation": conversation_id, "reply": result.content[0].text})  # type: ignore[union-attr]


async def end_conversation(request: Request) -> Response:
    conversation_id = request.path_params["conversation_id"]
    request.app.state.sessions.pop(conversation_id, None)
    host: Host = request.app.state.host
    await host.destroy_session(conversation_id)  # its processes are gone on return
    return Response(status_code=204)


app = Starlette(
    routes=[
        Route("/conversations/{conversation_id}/messages", post_message, methods=["POST"]),
        Route("/conversations/{conversation_id}", end_conversation, methods=["DELETE"]),
    ],
    lifespan=lifespan,
)
