"""The MCP server a client of ``wave-actors serve`` talks to: one :class:`~wave_actors.Session` per connection (R-SERVE-1).

:class:`Front` builds one :class:`mcp.server.lowlevel.Server` over a
:class:`~wave_actors.Host` and one project directory. Each client connection
gets a :class:`Client`: a project-mode session of that host (so any number of
clients run one process per server, R-SCOPE-1), opened when the client's
``initialize`` arrives and destroyed when the connection ends, however it ends
(stdin EOF, HTTP ``DELETE``, session expiry, the server shutting down).

What a client sees is the library's, never a second copy of it:

* ``full`` mode lists :meth:`Session.tool_declarations
  <wave_actors.Session.tool_declarations>`: every live tool under its stable
  name ``mcp__server__tool``, its sanitized schema, and ``readOnlyHint`` as the
  server sent it (R-TOOL-1, R-TOOL-2, R-TOOL-7);
* ``working-set`` mode lists the two gateway tools, and ``initialize`` answers
  with the working set as the server's ``instructions`` (R-WS-3, R-WS-4);
* in both modes the ``instructions`` go on with the library's announcement of
  each server's own instructions (R-INS-2).

Calls go to :meth:`Session.call_tool <wave_actors.Session.call_tool>`. What the
library raises about a call (an unknown tool, a server that is down, a
timeout, arguments it cannot send) becomes a tool result with ``isError`` set
that says why (R-WS-6): the client's connection never pays for a server's
failure. Progress the server reports reaches the client that asked for it
(R-TOOL-10), and a client's ``notifications/cancelled`` cancels the call,
which the library passes on to the server (R-TOOL-4).

Which connection a request belongs to is a transport's business: the stdio
transport has one, the HTTP transport many. Each hands its requests a
:class:`ClientSlot` through :data:`CURRENT_SLOT` (the SDK runs a request's
handler in the context the transport received it in); the slot is where that
connection's :class:`Client` lives.

The connection's lifetime is a handler's: the client's
``notifications/initialized`` starts :meth:`Client.attend`, which runs for as
long as the SDK keeps the connection's handlers alive, sends
``notifications/tools/list_changed`` whenever what the client would list
changes, and destroys the session when it is cancelled. A client that never
sends ``notifications/initialized`` has its session destroyed after
:data:`INITIALIZED_WITHIN` seconds.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import attrs
import mcp_types
import trio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from wave_actors import Host, LoadMode, Session, ToolDeclaration, TrustMode, WaveActorsError

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

__all__ = ["CURRENT_SLOT", "INITIALIZED_WITHIN", "SERVER_NAME", "Client", "ClientSlot", "Front"]

logger = logging.getLogger(__name__)

SERVER_NAME: Final = "wave-actors"
"""The ``serverInfo.name`` a client is told."""

INITIALIZED_WITHIN: Final = 60.0
"""Seconds a client has, after ``initialize``, to send ``notifications/initialized`` before its session is destroyed."""


@attrs.define(eq=False)
class ClientSlot:
    """Where one connection's :class:`Client` lives, from its ``initialize`` on.

    :param client: the connection's client, once ``initialize`` opened it.
    :param key: the transport's name for the connection (the HTTP session id), once known.
    """

    client: Client | None = None
    key: str | None = None


CURRENT_SLOT: contextvars.ContextVar[ClientSlot | None] = contextvars.ContextVar("wave_actors_serve_slot", default=None)
"""The slot of the connection the current request arrived on, set by the transport that received it."""


def _tool(declaration: ToolDeclaration, read_only_hint: bool | None) -> mcp_types.Tool:
    annotations = None if read_only_hint is None else mcp_types.ToolAnnotations(read_only_hint=read_only_hint)
    return mcp_types.Tool(
        name=declaration.name,
        description=declaration.description or None,
        input_schema=dict(declaration.input_schema),
        annotations=annotations,
    )


def _headline(error: Exception) -> str:
    """What failed, without the detail lines after it: a server's stderr tail is the host's to read, not a client's."""
    return str(error).split("\n", 1)[0]


def refusal(text: str) -> mcp_types.CallToolResult:
    """A tool result that tells the client why its call was not carried out."""
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)


class Client:
    """One client connection: its session, and what it was last shown.

    Built by :meth:`Front.open_client`; destroyed by :meth:`close`, which
    :meth:`attend` calls when the connection ends.
    """

    def __init__(self, host: Host, session: Session, mode: LoadMode, on_close: Callable[[], None]) -> None:
        self._host = host
        self.session = session
        self._mode = mode
        self._on_close = on_close
        self._closed = False
        self._attended = trio.Event()

    def tools(self) -> list[mcp_types.Tool]:
        """What ``tools/list`` answers now: the session's declarations in this mode, with their annotations."""
        snapshot = self.session.snapshot()
        tools: list[mcp_types.Tool] = []
        for declaration in self.session.tool_declarations(self._mode):
            if self._mode is LoadMode.WORKING_SET:
                # mcp_describe answers from the session's list: it reads, and sends nothing anywhere.
                hint = True if declaration.name == "mcp_describe" else None
            else:
                hint = snapshot.tool(declaration.name).read_only_hint
            tools.append(_tool(declaration, hint))
        return tools

    def instructions(self) -> str | None:
        """The server's ``instructions`` for this client, ``None`` when there is nothing to say.

        The working set in working-set mode (R-WS-3), then, in both modes, the
        library's announcement of each available server's own instructions,
        naming the server and cut to its limit (R-INS-2): a client's
        conversation is not ours to append to, so they are told once, here.
        """
        parts: list[str] = []
        if self._mode is LoadMode.WORKING_SET:
            parts.append(self.session.working_set().render())
        parts += [message.text for message in self.session.instruction_updates(())]
        return "\n\n".join(part for part in parts if part) or None

    async def call(
        self, name: str, arguments: dict[str, Any] | None, progress: Callable[..., Awaitable[None]] | None
    ) -> mcp_types.CallToolResult:
        """Call ``name`` through the session; a failure the library names is a result that says why.

        :param name: the tool as the client listed it.
        :param arguments: the client's arguments.
        :param progress: ``await progress(progress, total, message)`` reports to the
            client; ``None`` when the client asked for no progress.
        """
        if progress is None:
            return await self._call(name, arguments, None)
        sender, receiver = trio.open_memory_channel[tuple[float, float | None, str | None]](math.inf)

        async def forward() -> None:
            async with receiver:
                async for update in receiver:
                    await progress(*update)

        def on_progress(value: float, total: float | None, message: str | None) -> None:
            sender.send_nowait((value, total, message))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(forward)
            with sender:  # closed once the call ends, so every update is sent before its result
                return await self._call(name, arguments, on_progress)
        raise AssertionError("unreachable")  # pragma: no cover  # the nursery returns the call's result

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        on_progress: Callable[[float, float | None, str | None], None] | None,
    ) -> mcp_types.CallToolResult:
        try:
            return await self.session.call_tool(name, arguments, on_progress=on_progress, mode=self._mode)
        except WaveActorsError as error:
            return refusal(_headline(error))
        except TypeError as error:  # arguments the library cannot send; nothing was sent (R-TOOL-9)
            return refusal(f"tool {name!r}: {_headline(error)}")

    async def attend(self, peer: ServerSession) -> None:
        """Tell the client each time the tools it would list change, until the connection ends; then close.

        :param peer: the connection's server session, to send notifications on.
        """
        if self._attended.is_set():
            return  # a second notifications/initialized: the first one's watch is running
        self._attended.set()
        try:
            shown = self.tools()
            async for _ in self.session.watch():
                now = self.tools()
                if now != shown:
                    shown = now
                    await peer.send_tool_list_changed()
        finally:
            await self.close()

    async def close_unless_attended(self, within: float) -> None:
        """Close the session if no ``notifications/initialized`` started :meth:`attend` within ``within`` seconds."""
        with trio.move_on_after(within):
            await self._attended.wait()
            return
        logger.info("session %s: no notifications/initialized within %g s; destroying it", self.session.id, within)
        await self.close()

    async def close(self) -> None:
        """Destroy the session: its references go back to the project, which reclaims what nobody uses. Idempotent."""
        if not self._closed:
            self._closed = True
            self._on_close()
        with trio.CancelScope(shield=True):
            await self._host.destroy_session(self.session.id)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed


@attrs.frozen
class FrontOptions:
    """What every client of one ``serve`` shares.

    :param workdir: the project directory whose servers are fronted.
    :param mode: what clients are shown: every tool, or the gateway and the working set.
    :param trust: which project entries load (R-CFG-10).
    """

    workdir: Path
    mode: LoadMode = LoadMode.WORKING_SET
    trust: TrustMode = "all"


class Front:
    """The MCP server over a host's project sessions, one per client connection (R-SERVE-1).

    :param host: the host whose sessions the clients get; it outlives every connection.
    :param options: the project, the load mode and the trust mode.
    :param nursery: where a client that never confirms its ``initialize`` is timed out.
    """

    def __init__(self, host: Host, options: FrontOptions, nursery: trio.Nursery) -> None:
        self._host = host
        self._options = options
        self._nursery = nursery
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.add_notification_handler(
            "notifications/initialized", mcp_types.NotificationParams, self._initialized
        )
        self.server.middleware.append(self._opening)
        self.on_client_closed: Callable[[ClientSlot], None] = lambda slot: None
        """Called with a connection's slot once its client closed (the HTTP transport forgets the session id)."""

    async def open_client(self, slot: ClientSlot) -> Client:
        """A new client's session: created in project mode, its servers dialed (bounded by the ready budget).

        :param slot: the connection's slot, handed to :attr:`on_client_closed` when the client closes.
        """
        options = self._options
        session = await self._host.create_session(options.workdir, trust=options.trust, ownership="project")
        client = Client(self._host, session, options.mode, lambda: self.on_client_closed(slot))
        try:
            await session.prepare_turn()
        except BaseException:
            await client.close()
            raise
        return client

    async def _opening(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Open the connection's client as its ``initialize`` arrives, and answer with its capabilities and instructions.

        The answer says ``tools.listChanged``: :meth:`Client.attend` sends it.
        """
        if ctx.method != "initialize":
            return await call_next(ctx)
        slot = CURRENT_SLOT.get()
        if slot is None:
            raise RuntimeError("a request reached the server without the slot of its connection")
        if slot.client is None:
            slot.client = await self.open_client(slot)
            self._nursery.start_soon(slot.client.close_unless_attended, INITIALIZED_WITHIN)
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        answer = result
        capabilities = dict(cast(dict[str, Any], answer.get("capabilities") or {}))
        capabilities["tools"] = {**cast(dict[str, Any], capabilities.get("tools") or {}), "listChanged": True}
        answer = {**answer, "capabilities": capabilities}
        instructions = slot.client.instructions()
        if instructions is not None:
            answer["instructions"] = instructions
        return answer

    @staticmethod
    def _client() -> Client | None:
        slot = CURRENT_SLOT.get()
        return slot.client if slot is not None else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        client = self._client()
        return mcp_types.ListToolsResult(tools=client.tools() if client is not None else [])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        client = self._client()
        if client is None or client.closed:
            return refusal("this connection has no session: send initialize first")
        asked = ctx.meta is not None and ctx.meta.get("progress_token") is not None
        return await client.call(params.name, params.arguments, ctx.session.report_progress if asked else None)

    async def _initialized(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.NotificationParams) -> None:
        client = self._client()
        if client is not None and not client.closed:
            await client.attend(ctx.session)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wave-actors")
    except PackageNotFoundError:  # pragma: no cover  # a source tree that was never installed
        return "0"
