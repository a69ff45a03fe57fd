"""ServerActor: one configured server in one session, its mailbox and its transport.

The actor owns the only mutable state about its server. Commands
(connect, disconnect, retire, reload) and events (from the transport task and
its supervisor) go through one mailbox and one pure reducer
(:func:`~wave_actors._actor.machine.reduce`); this module only carries out the
reducer's effects. Tool calls do not queue behind the mailbox: a call takes
the live connection and runs concurrently on it (R-TOOL-5).

Tasks. Nothing runs for an actor until it is first told to dial (R-HOST-3).
Then it runs one task in its session's nursery: the mailbox loop, holding a
:class:`supervisors.Supervisor` whose single *transient* child is the
transport. Cancelling the session cancels the loop; leaving the supervisor
stops the transport, and leaving :func:`~wave_actors._transport.open_connection`
reclaims its processes, shielded and bounded (R-KILL-2, R-RACE-2).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING, Any

import attrs
import trio

from supervisors import ChildContext, ChildEvent, ChildSpec, EventKind, Restart, Supervisor, SupervisorError
from wave_actors._actor.machine import (
    ActorState,
    Connect,
    DialFailed,
    Disconnect,
    Effect,
    GaveUp,
    Lost,
    Message,
    Reload,
    Restarting,
    Retire,
    ServerTool,
    StartRefused,
    Started,
    StartTransport,
    StopTransport,
    ToolsListed,
    Up,
    initial_state,
    reduce,
)
from wave_actors._config import ServerConfig, TransportType
from wave_actors._errors import ServerUnavailable, WaveActorsError
from wave_actors._options import SessionOptions
from wave_actors._status import ServerState
from wave_actors._transport import Connection, open_connection

if TYPE_CHECKING:
    import mcp_types

__all__ = ["ServerActor"]

logger = logging.getLogger(__name__)

_TRANSPORT = "transport"


class ConnectionLost(Exception):
    """Raised by a transport task whose established connection ended: the supervisor restarts it."""


def _server_tool(tool: mcp_types.Tool) -> ServerTool:
    annotations = tool.annotations
    return ServerTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=tool.input_schema,
        read_only_hint=bool(annotations is not None and annotations.read_only_hint),
    )


async def _list_tools(connection: Connection) -> tuple[ServerTool, ...]:
    """The server's tools, each name once (R-TOOL-1: a duplicate would break the model's whole request)."""
    if connection.initialize_result.capabilities.tools is None:
        return ()  # a server without tools (prompts or resources only) is still a server
    tools: dict[str, ServerTool] = {}
    for tool in await connection.list_tools():
        if tool.name in tools:
            logger.warning("server %r lists tool %r twice; the first is kept", connection.server, tool.name)
            continue
        tools[tool.name] = _server_tool(tool)
    return tuple(tools.values())


class ServerActor:
    """One server of one session. Created by the session; not part of the public API.

    Slotted and lazy: a session registers every configured server at once and
    most are never dialed, so an idle actor is a few small attributes (R-HOST-3).

    :param config: the server's entry.
    :param workdir: the session's directory, where stdio servers without ``cwd`` run.
    :param options: dial and reconnect settings.
    :param nursery: the session's nursery, where the actor's task runs once it is needed.
    :param on_change: called (synchronously) after every change of state.
    """

    __slots__ = (
        "_closed",
        "_calls_in_flight",
        "_config",
        "_connections",
        "_dial_waiters",
        "_drained",
        "_idle",
        "_mailbox_receive",
        "_mailbox_send",
        "_nursery",
        "_on_change",
        "_options",
        "_state",
        "_supervisor",
        "_workdir",
    )

    def __init__(
        self,
        config: ServerConfig,
        *,
        workdir: Path,
        options: SessionOptions,
        nursery: trio.Nursery,
        on_change: Callable[[], None],
    ) -> None:
        self._config = config
        self._workdir = workdir
        self._options = options
        self._nursery = nursery
        self._on_change = on_change
        self._state = initial_state(enabled=config.enabled)
        # Created on first use: an idle session's servers cost a few hundred bytes each (R-HOST-3).
        self._mailbox_send: trio.MemorySendChannel[tuple[Message, trio.Event | None]] | None = None
        self._mailbox_receive: trio.MemoryReceiveChannel[tuple[Message, trio.Event | None]] | None = None
        self._closed = False
        self._supervisor: Supervisor | None = None
        self._connections: dict[int, Connection] = {}
        self._dial_waiters: list[trio.Event] = []
        self._calls_in_flight = 0
        self._drained: trio.Event | None = None  # made only by a retire that waits for calls
        self._idle: trio.Event | None = None

    @property
    def name(self) -> str:
        """The server's name."""
        return self._config.name

    @property
    def config(self) -> ServerConfig:
        """The server's current entry."""
        return self._config

    @property
    def state(self) -> ActorState:
        """The reducer's current state (frozen)."""
        return self._state

    @property
    def pid(self) -> int | None:
        """The live stdio server's pid, if any."""
        connection = self._live_connection()
        return connection.pid if connection is not None else None

    def wants_lazy_dial(self) -> bool:
        """Whether ``prepare_turn`` should dial this server now (R-DIAL-2, R-DIAL-4, R-DIAL-6)."""
        state = self._state
        return (
            state.state is ServerState.DISCONNECTED
            and not state.dialed
            and not state.manually_disconnected
            and not state.retiring
        )

    # Commands. Each posts to the mailbox and waits for what the caller needs to know.

    async def connect(self, *, explicit: bool) -> None:
        """Dial (unless the rules say no) and wait until the dial settles."""
        await self._command(Connect(explicit=explicit))

    async def disconnect(self) -> None:
        """Stop the transport, wait for its reclamation, and stay down (R-DIAL-6)."""
        await self._command(Disconnect())

    async def retire(self) -> None:
        """Let accepted calls finish, then stop for good (R-STORE-5)."""
        await self._command(Retire())

    async def reload(self, config: ServerConfig) -> None:
        """Take a changed entry; a running server is re-dialed with it, under the same name."""
        self._config = config
        await self._command(Reload(enabled=config.enabled))

    def close(self) -> None:
        """Refuse further commands: the session is closing and will cancel the actor's task."""
        self._closed = True

    def update_settings(self, config: ServerConfig) -> None:
        """Take an entry whose connection is unchanged (same fingerprint): timeouts, overrides."""
        self._config = config
        self._on_change()

    async def _command(self, message: Message) -> None:
        done = trio.Event()
        self._post(message, done)
        await done.wait()

    def _post(self, message: Message, done: trio.Event | None = None) -> None:
        if self._closed:
            if done is not None:
                done.set()
            return
        if self._mailbox_send is None:
            self._mailbox_send, self._mailbox_receive = trio.open_memory_channel[tuple[Message, trio.Event | None]](
                math.inf
            )
            self._idle = trio.Event()
            self._nursery.start_soon(self._run, self._mailbox_receive, name=f"wave_actors._actor:{self.name}")
        self._mailbox_send.send_nowait((message, done))

    async def _run(self, mailbox: trio.MemoryReceiveChannel[tuple[Message, trio.Event | None]]) -> None:
        try:
            async with Supervisor.open(
                intensity=self._options.reconnect_intensity,
                backoff=self._options.reconnect_backoff,
                random=Random(self._options.seed),
                on_event=self._on_supervisor_event,
            ) as supervisor:
                self._supervisor = supervisor
                async for message, done in mailbox:
                    await self._step(message, done)
        finally:
            # The session is closing: nobody may wait on a command that will never run.
            self._supervisor = None
            self._closed = True
            if self._mailbox_send is not None:
                self._mailbox_send.close()
            while True:
                try:
                    _, done = mailbox.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                if done is not None:
                    done.set()
            for waiter in self._dial_waiters:
                waiter.set()
            self._dial_waiters.clear()
            if self._idle is not None:
                self._idle.set()

    async def _step(self, message: Message, done: trio.Event | None) -> None:
        try:
            effects = self._apply(message)
            for effect in effects:
                await self._execute(effect)
        except BaseException:
            # Cancelled mid-effect (the session is closing): the caller must not wait forever.
            if done is not None:
                done.set()
            raise
        if done is not None:
            if self._state.state is ServerState.CONNECTING:
                self._dial_waiters.append(done)
            else:
                done.set()
        if self._state.retiring and self._mailbox_send is not None:
            # Retired for good: end the task, so a long-lived session keeps none per removed server.
            self._closed = True
            self._mailbox_send.close()

    def _apply(self, message: Message) -> tuple[Effect, ...]:
        before = self._state
        after, effects = reduce(before, message)
        if after != before:
            self._state = after
            if self._state.state is not ServerState.CONNECTING and self._dial_waiters:
                for waiter in self._dial_waiters:
                    waiter.set()
                self._dial_waiters.clear()
            self._on_change()
        elif getattr(message, "generation", before.live) != before.live:
            logger.debug("server %r: dropped stale %r (live generation %s)", self.name, message, before.live)
        return effects

    async def _execute(self, effect: Effect) -> None:
        supervisor = self._supervisor
        assert supervisor is not None
        match effect:
            case StartTransport():
                await self._stop_transport(supervisor)
                try:
                    status = await supervisor.start_child(self._transport_spec())
                except SupervisorError as error:
                    # The previous transport outlived its shutdown deadline: refuse, never run two.
                    self._apply(StartRefused(f"server {self.name!r}: cannot start a new connection: {error}"))
                    return
                self._apply(Started(status.incarnation))
            case StopTransport(drain_calls=drain):
                if drain and self._calls_in_flight:
                    self._drained = self._drained or trio.Event()
                    with trio.move_on_after(self._config.tool_timeout_ms / 1000 + 1):
                        await self._drained.wait()
                await self._stop_transport(supervisor)

    async def _stop_transport(self, supervisor: Supervisor) -> None:
        if any(child.name == _TRANSPORT for child in supervisor.children()):
            await supervisor.stop_child(_TRANSPORT)

    def _on_supervisor_event(self, event: ChildEvent) -> None:
        reason = str(event.error) if event.error is not None else "transport ended"
        if event.kind is EventKind.RESTARTING:
            logger.info("server %r: reconnecting in %.2f s after: %s", self.name, event.delay or 0.0, reason)
            self._post(Restarting(event.incarnation, event.delay or 0.0))
        elif event.kind is EventKind.GAVE_UP:
            logger.warning("server %r: giving up reconnecting: %s", self.name, reason)
            self._post(GaveUp(event.incarnation, reason))

    def _transport_spec(self) -> ChildSpec:
        config = self._config
        if config.transport is TransportType.STDIO and config.cwd is None:
            config = attrs.evolve(config, cwd=str(self._workdir))
        first_incarnation: int | None = None

        async def run(context: ChildContext) -> None:
            nonlocal first_incarnation
            if first_incarnation is None:
                first_incarnation = context.incarnation
            context.started()
            await self._transport(config, context.incarnation, final=context.incarnation == first_incarnation)

        return ChildSpec(
            _TRANSPORT,
            run,
            restart=Restart.TRANSIENT,
            # Reclamation is bounded (the graces, then a last SIGKILL and its grace): never abandon it sooner.
            shutdown_timeout=self._options.transport.graces.total + self._options.transport.graces.kill + 5.0,
        )

    async def _transport(self, config: ServerConfig, generation: int, *, final: bool) -> None:
        """One transport attempt: dial, report ``Up``, serve until lost.

        A failed first attempt reports a final ``DialFailed`` and returns (no
        restart, R-DIAL-4); a lost connection, or a failed reconnect attempt,
        raises so the supervisor restarts it with backoff (R-RACE-4).
        """
        refresh_send, refresh_receive = trio.open_memory_channel[None](1)

        def on_notification(notification: mcp_types.ServerNotification) -> None:
            if getattr(notification, "method", None) == "notifications/tools/list_changed":
                try:
                    refresh_send.send_nowait(None)  # coalesces a storm into one refresh
                except trio.WouldBlock:
                    pass

        up = False
        dial_scope = trio.CancelScope(deadline=trio.current_time() + self._options.dial_timeout)
        try:
            with dial_scope:
                async with open_connection(
                    config, options=self._options.transport, on_notification=on_notification
                ) as connection:
                    tools = await _list_tools(connection)
                    dial_scope.deadline = math.inf
                    up = True
                    self._connections[generation] = connection
                    try:
                        self._post(Up(generation, tools, connection.instructions, time.time()))
                        reason = f"server {config.name!r}: connection lost: " + await self._serve(
                            connection, generation, refresh_receive
                        )
                    finally:
                        del self._connections[generation]
                    self._post(Lost(generation, reason))
                    raise ConnectionLost(reason)
            reason = f"server {config.name!r}: no answer within the dial timeout of {self._options.dial_timeout:g} s"
        except (WaveActorsError, OSError) as error:
            reason = str(error)
            if up:
                self._post(Lost(generation, reason))
                raise ConnectionLost(reason) from error
        except ConnectionLost:
            raise  # the ordinary end of a connection; the supervisor restarts it
        except Exception as error:
            # Not a server's misbehaviour but ours: say so loudly. It is still
            # contained (a failed dial, or a restart), so it cannot take the host down.
            logger.exception("server %r: unexpected error in transport generation %d", config.name, generation)
            if up:
                raise
            reason = f"server {config.name!r}: connect failed: unexpected {type(error).__name__}: {error}"
        self._post(DialFailed(generation, reason, final=final))
        if not final:
            raise ConnectionLost(reason)

    async def _serve(
        self, connection: Connection, generation: int, refresh: trio.MemoryReceiveChannel[None]
    ) -> str:
        """Keep the tool list fresh until the connection is lost; return why it was."""

        async def refresher() -> None:
            async for _ in refresh:
                tools: tuple[ServerTool, ...] | None = None
                with trio.move_on_after(self._options.dial_timeout):
                    try:
                        tools = await _list_tools(connection)
                    except ServerUnavailable:
                        return  # the loss is reported by wait_lost
                    except WaveActorsError as error:
                        logger.warning("server %r: refreshing tools failed: %s", connection.server, error)
                if tools is not None:
                    self._post(ToolsListed(generation, tools))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(refresher)
            reason = await connection.wait_lost()
            nursery.cancel_scope.cancel()
        return reason

    def _live_connection(self) -> Connection | None:
        state = self._state
        if state.state is not ServerState.CONNECTED or state.live is None:
            return None
        return self._connections.get(state.live)

    async def call_tool(self, tool: str, arguments: Mapping[str, Any] | None) -> mcp_types.CallToolResult:
        """Call ``tool`` on the live connection, concurrently with everything else (R-TOOL-4, R-TOOL-5).

        :raises ServerUnavailable: not connected, reconnecting, retired, or lost mid-call.
        :raises ToolTimeout: past the server's ``tool_timeout_ms``.
        """
        state = self._state
        connection = self._live_connection()
        if connection is None:
            raise ServerUnavailable(self._unavailable_reason(state))
        self._calls_in_flight += 1
        try:
            return await connection.call_tool(tool, arguments, timeout=self._config.tool_timeout_ms / 1000)
        finally:
            self._calls_in_flight -= 1
            if self._calls_in_flight == 0 and self._drained is not None:
                self._drained.set()
                self._drained = None

    def _unavailable_reason(self, state: ActorState) -> str:
        name = self.name
        if state.retiring:
            return f"server {name!r} was removed from the configuration"
        match state.state:
            case ServerState.RECONNECTING:
                return f"server {name!r} is reconnecting (last error: {state.error}); try again shortly"
            case ServerState.CONNECTING:
                return f"server {name!r} is still connecting"
            case ServerState.ERROR:
                return f"server {name!r} failed: {state.error}; connect it explicitly to retry"
            case ServerState.DISABLED:
                return f"server {name!r} is disabled in its configuration ({self._config.origin})"
            case ServerState.DISCONNECTED if state.manually_disconnected:
                return f"server {name!r} was disconnected; connect it explicitly to use it"
            case _:
                return f"server {name!r} is not connected"

    async def wait_idle(self) -> None:
        """Wait until the actor's task (and so its transport) has ended; at once if it never ran."""
        if self._idle is not None:
            await self._idle.wait()
