"""ServerActor: one server of a session, or one shared connection of a project; its mailbox and its transport.

The actor owns the only mutable state about its server. Commands
(connect, disconnect, retire, reload) and events (from the transport task and
its supervisor) go through one mailbox and one pure reducer
(:func:`~wave_actors._actor.machine.reduce`); this module only carries out the
reducer's effects, and asks the machine's predicates when to release a
command's caller and when to end. The transport attempts themselves are in
:mod:`~wave_actors._actor.transport_task`. Tool calls do not queue behind the mailbox: a call takes
the live connection and runs concurrently on it (R-TOOL-5).

Tasks. Nothing runs for an actor until it is first told to dial (R-HOST-3).
Then it runs one task in its owner's nursery (a session's, or a project
scope's): the mailbox loop, holding a
:class:`supervisors.Supervisor` whose single *transient* child is the
transport. Cancelling the owner cancels the loop; leaving the supervisor
stops the transport, and leaving :func:`~wave_actors._transport.open_connection`
reclaims its processes, shielded and bounded (R-KILL-2, R-RACE-2).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING, Any

import attrs
import trio

from supervisors import ChildContext, ChildEvent, ChildSpec, EventKind, Restart, Supervisor, SupervisorError
from wave_actors._actor.machine import (
    ActorState,
    describe_transition,
    failure_retried,
    finished,
    initial_state,
    lazy_dial_due,
    reduce,
    settled,
)
from wave_actors._actor.mailbox import Mailbox
from wave_actors._actor.messages import (
    Connect,
    Disconnect,
    Effect,
    GaveUp,
    LoggedIn,
    Message,
    Reconnect,
    Reload,
    Restarting,
    Retire,
    Started,
    StartRefused,
    StartTransport,
    StopTransport,
    ToolsListed,
    TransportEvent,
    Up,
)
from wave_actors._actor.transport_task import list_server_tools, run_transport
from wave_actors._auth.credentials import vault_of
from wave_actors._config import ServerConfig, TransportType
from wave_actors._errors import EntryChanged, ServerUnavailable, ToolTimeout, UnknownTool
from wave_actors._options import SessionOptions
from wave_actors._status import ServerState, Unavailable, unavailable
from wave_actors._transport import Connection
from wave_actors._transport.options import TransportOptions, with_shutdown
from wave_actors._transport.progress import ProgressCallback

if TYPE_CHECKING:
    import mcp_types

__all__ = ["ServerActor"]

logger = logging.getLogger(__name__)

_TRANSPORT = "transport"
# The jitter of every actor without a seed: unpredictable either way, and a Random is 2.5 KiB.
_UNSEEDED = Random()


class ServerActor:
    """One server of a session's or a project's actor group; not part of the public API.

    Built only by :class:`~wave_actors._roster.group.ActorGroup`, whose owner's nursery runs its task.

    Slotted and lazy: a session registers every configured server at once and
    most are never dialed, so an idle actor is a few small attributes (R-HOST-3).

    :param config: the server's entry.
    :param workdir: the workdir, where stdio servers without ``cwd`` run.
    :param options: dial and reconnect settings.
    :param nursery: the owner's nursery (a session's, or a project scope's), where the actor's task runs once
        it is needed.
    :param key: what the owner's group knows the actor by: the server's name in a session's group, a shared
        connection in a project's (two connections may serve one name there).
    :param on_change: called (synchronously) with ``key`` after every change of the server's state or entry.
    """

    __slots__ = (
        "__weakref__",  # a login in waiting holds its callback weakly (R-AUTH-2)
        "_calls_in_flight",
        "_config",
        "_connection",
        "_current",
        "_drained",
        "_key",
        "_mailbox",
        "_nursery",
        "_on_change",
        "_options",
        "_refusing",
        "_state",
        "_supervisor",
        "_waiters",
        "_workdir",
    )

    def __init__(
        self,
        config: ServerConfig,
        *,
        workdir: Path,
        options: SessionOptions,
        nursery: trio.Nursery,
        key: Hashable,
        on_change: Callable[[Hashable], None],
    ) -> None:
        self._config = config
        self._key = key
        self._workdir = workdir
        self._options = options
        self._nursery = nursery
        self._on_change = on_change
        self._state = initial_state(enabled=config.enabled)
        # Created on first use: an idle session's servers cost a few hundred bytes each (R-HOST-3).
        self._mailbox: Mailbox | None = None
        self._refusing = False
        self._supervisor: Supervisor | None = None
        # The newest generation's, from its Up: (generation, connection, fingerprint of the entry it was dialed with).
        self._connection: tuple[int, Connection, str] | None = None
        self._waiters: list[trio.Event] = []  # callers of commands, until the machine is settled
        self._current: trio.Event | None = None  # the caller of the command being carried out
        self._calls_in_flight = 0
        self._drained: trio.Event | None = None  # made only by a retire that waits for calls

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

    def lazy_dial_due(self) -> bool:
        """Whether ``prepare_turn`` should dial this server now (R-DIAL-2, R-DIAL-4, R-DIAL-6)."""
        return lazy_dial_due(self._state)

    # Commands. Each posts to the mailbox and waits for what the caller needs to know.

    async def connect(self, *, explicit: bool) -> None:
        """Dial (unless the rules say no) and wait until the dial settles."""
        await self._command(Connect(explicit=explicit))

    async def disconnect(self) -> None:
        """Stop the transport, wait for its reclamation, and stay down (R-DIAL-6)."""
        await self._command(Disconnect())

    async def reconnect(self) -> None:
        """Stop the transport, wait for its reclamation, dial a new generation now, and wait until it settles."""
        await self._command(Reconnect())

    async def refresh_tools(self) -> None:
        """List the tools again on the live connection, in the caller's task, and wait until the list is shown.

        The listing runs beside the mailbox (a slow server never holds a
        disconnect up) and reaches the state machine as the live generation's
        :class:`~wave_actors._actor.messages.ToolsListed`: if the connection
        changed meanwhile, the stale list is dropped (R-RACE-1).

        :raises ServerUnavailable: not connected, or lost meanwhile.
        :raises ToolTimeout: no complete listing within the dial timeout.
        :raises ToolCallError: the listing was malformed.
        """
        state = self._state
        connection = self._live_connection()
        if connection is None or state.live is None:
            raise ServerUnavailable(self._unavailable_reason(state))
        timeout = self._options.dial_timeout
        with trio.move_on_after(timeout):
            tools, warnings = await list_server_tools(connection)
            await self._command(ToolsListed(state.live, tools, warnings))
            return
        raise ToolTimeout(f"server {self.name!r}: tools/list took over {timeout:g} s (the dial timeout)")

    async def retire(self) -> None:
        """Let accepted calls finish, then stop for good (R-STORE-5)."""
        await self._command(Retire())

    async def reload(self, config: ServerConfig) -> None:
        """Take a changed entry; a running server is re-dialed with it, under the same name."""
        done = trio.Event()
        self.reload_soon(config, done)
        await done.wait()

    def reload_soon(self, config: ServerConfig, done: trio.Event | None = None) -> None:
        """Take a changed entry now, and post its reload without waiting for the re-dial (a plan being started).

        :param done: set once the reload is carried out (for a re-dial, once it settled).
        """
        self._config = config
        self._on_change(self._key)  # a snapshot showing the new entry gets a version of its own
        self._post(Reload(enabled=config.enabled), done)

    def post(self, command: Connect | Reconnect) -> None:
        """Post a dial without waiting for its outcome: its waiters are whoever waits on the state.

        For a project's shared connections, which outlive the call that
        started them (R-SCOPE-4): a turn waits on the snapshot, within its budget.
        """
        self._post(command)

    def refuse_commands(self) -> None:
        """Release every caller now, and refuse every command from now on: the session is closing.

        The session then cancels the actor's task; its transport is reclaimed
        as the session's nursery exits, which is what a destroy waits for, not
        the callers of commands.
        """
        self._refusing = True
        if self._current is not None:
            self._current.set()
        if self._mailbox is not None:
            self._mailbox.release_all()
        self._release_waiters()

    def update_settings(self, config: ServerConfig) -> None:
        """Take an entry whose connection is unchanged (same fingerprint): timeouts, overrides.

        An equal entry changes nothing, and nobody is told.
        """
        if config == self._config:
            return
        self._config = config
        self._on_change(self._key)

    async def _command(self, message: Message) -> None:
        done = trio.Event()
        self._post(message, done)
        await done.wait()

    def _post(self, message: Message, done: trio.Event | None = None) -> None:
        if self._refusing:
            if done is not None:
                done.set()
            return
        if self._mailbox is None:
            if not any(isinstance(effect, StartTransport) for effect in reduce(self._state, message)[1]):
                # Nothing runs for this server, so there is nothing to stop: the message is carried
                # out here, and an idle server keeps costing no task (R-HOST-3).
                self._apply(message)
                if done is not None:
                    done.set()
                return
            self._mailbox = Mailbox()
            self._nursery.start_soon(self._run, self._mailbox, name=f"wave_actors.actor:{self.name}")
        self._mailbox.put(message, done)

    async def _run(self, mailbox: Mailbox) -> None:
        try:
            async with Supervisor.open(
                intensity=self._options.reconnect_intensity,
                backoff=self._options.reconnect_backoff,
                random=_UNSEEDED if self._options.seed is None else Random(self._options.seed),
                on_event=self._on_supervisor_event,
            ) as supervisor:
                self._supervisor = supervisor
                while True:
                    message, done = await mailbox.take()
                    await self._step(message, done)
                    if finished(self._state):
                        # Retired for good: end the task, so a long-lived session keeps none per removed server.
                        break
        finally:
            # Closing (or finished): nobody may wait on a command that will never run.
            self._supervisor = None
            self._refusing = True
            self._connection = None
            mailbox.release_all()
            self._release_waiters()

    async def _step(self, message: Message, done: trio.Event | None) -> None:
        self._current = done
        try:
            for effect in self._apply(message):
                await self._execute(effect)
        except BaseException:
            # Cancelled mid-effect (the session is closing): the caller must not wait forever.
            if done is not None:
                done.set()
            raise
        finally:
            self._current = None
        if done is not None:
            self._waiters.append(done)
        if settled(self._state):
            self._release_waiters()

    def _release_waiters(self) -> None:
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()

    def _apply(self, message: Message) -> tuple[Effect, ...]:
        before = self._state
        after, effects = reduce(before, message)
        observer = self._options.transition_observer
        if observer is not None:
            try:
                observer(describe_transition(self.name, before, message, after, effects))
            except Exception:
                # The host's code, not a server's: logged, and never allowed to take the server (or the host) down.
                logger.exception("server %r: the transition observer raised; ignored", self.name)
        if isinstance(message, Up) and after is not before and message.connection is not None:
            self._connection = (message.generation, message.connection, message.fingerprint)
        if after is before:
            if isinstance(message, TransportEvent) and message.generation != before.live:
                logger.debug("server %r: dropped stale %r (live generation %s)", self.name, message, before.live)
            return effects
        self._state = after
        if after.state is ServerState.NEEDS_LOGIN and before.state is not ServerState.NEEDS_LOGIN:
            credentials = self._options.credentials
            if credentials is not None:
                vault_of(credentials).when_logged_in(self.name, self._logged_in)  # the next login dials it again
        if self._connection is not None and self._connection[0] != after.live:
            self._connection = None  # that generation is over: keep no closed session alive
        if settled(after):
            self._release_waiters()
        self._on_change(self._key)
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
                self._apply(Started(self._generation(status.incarnation)))
            case StopTransport(drain_calls=drain):
                if drain and self._calls_in_flight:
                    self._drained = self._drained or trio.Event()
                    with trio.move_on_after(self._config.tool_timeout_ms / 1000 + 1):
                        await self._drained.wait()
                await self._stop_transport(supervisor)

    async def _stop_transport(self, supervisor: Supervisor) -> None:
        if any(child.name == _TRANSPORT for child in supervisor.children()):
            await supervisor.stop_child(_TRANSPORT)

    @staticmethod
    def _generation(incarnation: int) -> int:
        """The generation of a transport incarnation (R-RACE-1).

        Generations are the supervisor's incarnation numbers of the transport
        child: they only grow, across stops and restarts, and the restart of
        incarnation ``n`` is incarnation ``n + 1`` (both promises of
        :mod:`supervisors`). This and :meth:`_on_supervisor_event` are the only
        places that know it.
        """
        return incarnation

    def _logged_in(self) -> None:
        """A login of this server was stored in this process: dial again if it still waits for one (R-AUTH-2)."""
        self._post(LoggedIn())

    def _on_supervisor_event(self, event: ChildEvent) -> None:
        reason = str(event.error) if event.error is not None else "transport ended"
        generation = self._generation(event.incarnation)
        if event.kind is EventKind.RESTARTING:
            logger.info("server %r: reconnecting in %.2f s after: %s", self.name, event.delay or 0.0, reason)
            self._post(Restarting(generation, event.delay or 0.0, self._generation(event.incarnation + 1)))
        elif event.kind is EventKind.GAVE_UP:
            logger.warning("server %r: giving up reconnecting: %s", self.name, reason)
            self._post(GaveUp(generation, reason))

    def _transport_spec(self) -> ChildSpec:
        config = self._config
        if config.transport is TransportType.STDIO and config.cwd is None:
            config = attrs.evolve(config, cwd=str(self._workdir))
        transport = with_shutdown(self._options.transport, config.shutdown)  # the entry's own graces (R-KILL-9)
        return ChildSpec(
            _TRANSPORT,
            # A partial of a method, not a closure: the supervisor keeps it as long as the server is connected.
            functools.partial(self._run_transport, config, transport),
            restart=Restart.TRANSIENT,
            # Reclamation is bounded (the graces, then a last SIGKILL and its grace): never abandon it sooner.
            shutdown_timeout=transport.graces.total + transport.graces.kill + 5.0,
        )

    async def _run_transport(self, config: ServerConfig, transport: TransportOptions, context: ChildContext) -> None:
        """The transport child's body, once per incarnation: a generation of the connection (R-RACE-1)."""
        context.started()
        options = self._options
        await run_transport(
            config,
            self._generation(context.incarnation),
            retried=self._failure_retried,
            dial_timeout=options.dial_timeout,
            options=transport,
            report=self._post,
            credentials=options.credentials,
        )

    def _failure_retried(self) -> bool:
        return failure_retried(self._state)

    def _live_connection(self) -> Connection | None:
        live = self._live()
        return None if live is None else live[1]

    def _live(self) -> tuple[int, Connection, str] | None:
        state, connection = self._state, self._connection
        if state.state is not ServerState.CONNECTED or connection is None or connection[0] != state.live:
            return None
        return connection

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        on_progress: ProgressCallback | None = None,
        expected_fingerprint: str | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` on the live connection, concurrently with everything else (R-TOOL-4, R-TOOL-5).

        :param on_progress: receives this call's progress notifications (R-TOOL-10).
        :param expected_fingerprint: send only on a connection dialed with the
            entry of this fingerprint, while it is still the server's entry (R-TOOL-11).
        :raises EntryChanged: the server's entry is not the expected one; nothing was sent.
        :raises ServerUnavailable: not connected, reconnecting, retired, or lost mid-call.
        :raises ToolTimeout: past the server's ``tool_timeout_ms``.
        """
        # No checkpoint from these checks to handing the request to `connection`: the entry checked is the one
        # that connection was dialed with, and a reload can only close it (the call then fails), never redirect it.
        state = self._state
        if expected_fingerprint is not None and expected_fingerprint != self._config.fingerprint:
            raise self._entry_changed(expected_fingerprint)
        live = self._live()
        if live is None:
            raise ServerUnavailable(self._unavailable_reason(state))
        _, connection, dialed = live
        if expected_fingerprint is not None and expected_fingerprint != dialed:
            # The expected entry is the current one, but a reload to it has not connected yet: the live
            # connection still runs the previous entry, and a call must never reach it.
            raise ServerUnavailable(
                f"server {self.name!r} is reloading with its new entry and not connected with it yet; "
                "nothing was sent; try again shortly"
            )
        if tool not in state.listed:
            # Never reached through a session, which resolves names from live listings only: a
            # guarantee, not a check of its work. Nothing the server did not list is ever sent.
            raise UnknownTool(f"server {self.name!r} does not list a tool {tool!r} now; nothing was sent")
        self._calls_in_flight += 1
        try:
            timeout = self._config.tool_timeout_ms / 1000
            return await connection.call_tool(tool, arguments, timeout=timeout, on_progress=on_progress)
        finally:
            self._calls_in_flight -= 1
            if self._calls_in_flight == 0 and self._drained is not None:
                self._drained.set()
                self._drained = None

    def _entry_changed(self, expected: str) -> EntryChanged:
        current = self._config.fingerprint
        return EntryChanged(
            f"server {self.name!r} changed since it was looked at: its entry's fingerprint is {current}, "
            f"not the expected {expected}; nothing was sent. Look at its status again before calling it.",
            server=self.name,
            expected=expected,
            current=current,
        )

    def _unavailable_reason(self, state: ActorState) -> str:
        name = self.name
        if state.retiring:
            return f"server {name!r} was removed from the configuration"
        match unavailable(state.state, manually_disconnected=state.manually_disconnected):
            case Unavailable.RECONNECTING:
                return f"server {name!r} is reconnecting (last error: {state.error}); try again shortly"
            case Unavailable.CONNECTING:
                return f"server {name!r} is still connecting"
            case Unavailable.FAILED:
                return f"server {name!r} failed: {state.error}; connect it explicitly to retry"
            case Unavailable.NEEDS_LOGIN:
                return f"{state.error}" if state.error else f"server {name!r} needs a login"
            case Unavailable.DISABLED:
                return f"server {name!r} is disabled in its configuration ({self._config.origin})"
            case Unavailable.DISCONNECTED:
                return f"server {name!r} was disconnected; connect it explicitly to use it"
            case _:
                return f"server {name!r} is not connected; prepare_turn() or connect() dials it"
