"""Session: one conversation's MCP servers, owned by one nursery.

A session registers every configured server as an actor and spawns nothing
(R-DIAL-1). ``prepare_turn`` dials, concurrently, the servers that were never
dialed (R-DIAL-2); explicit ``connect`` / ``disconnect`` override the lazy
rules (R-DIAL-5, R-DIAL-6). Every actor's task lives in the session's nursery,
so closing the session — leaving :func:`open_session`, or
:meth:`Host.destroy_session <wave_actors._host.Host.destroy_session>` —
cancels every dial and connection and returns only after every process they
started is reclaimed (R-RACE-2, R-KILL-4).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from wave_actors._actor import ServerActor
from wave_actors._config import Diagnostic, LoadedConfig, ServerConfig, TrustMode, load_config
from wave_actors._errors import DialError, ServerDisabled, ServerUnavailable, UnknownServer, UnknownTool, WaveActorsError
from wave_actors._options import SessionOptions
from wave_actors._status import ServerState, ServerStatus, SessionSnapshot, ToolInfo
from wave_actors._tools import LoadMode, ToolDeclaration, assign_names, full_declarations

if TYPE_CHECKING:
    import mcp_types

__all__ = ["ReconfigureResult", "Session", "open_session"]

logger = logging.getLogger(__name__)

ServerEntries = Mapping[str, Mapping[str, object]]


@attrs.frozen
class ReconfigureResult:
    """What :meth:`Session.reconfigure` changed (R-STORE-5).

    :param added: new servers, registered ``disconnected``.
    :param removed: servers retired: no new calls, accepted calls finished.
    :param changed: servers whose entry changed, reloaded in place under the same name.
    :param diagnostics: problems found while loading the new configuration.
    """

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]


class Session:
    """The MCP servers of one conversation (R-HOST-1).

    Create one with :meth:`Host.create_session <wave_actors._host.Host.create_session>`
    or :func:`open_session`; never directly.
    """

    def __init__(
        self,
        *,
        session_id: str,
        workdir: Path,
        home: Path | None,
        constructor: ServerEntries | None,
        plugins: tuple[tuple[str, ServerEntries], ...],
        trust: TrustMode,
        options: SessionOptions,
        nursery: trio.Nursery,
    ) -> None:
        self._id = session_id
        self._workdir = workdir
        self._home = home
        self._constructor = constructor
        self._plugins = plugins
        self._trust: TrustMode = trust
        self._options = options
        self._nursery = nursery
        self._actors: dict[str, ServerActor] = {}
        self._diagnostics: tuple[Diagnostic, ...] = ()
        self._version = 0
        self._snapshot: SessionSnapshot | None = None
        self._tool_index: tuple[int, dict[str, tuple[str, str]]] | None = None
        self._change: trio.Event | None = None
        self._closed = False
        self._destroying = False  # set by the host when a destroy begins
        self._finished = trio.Event()
        self._destroy: Callable[[], Awaitable[None]] | None = None
        self._reconfiguring: trio.Event | None = None
        self._apply_config(self._load())

    @property
    def id(self) -> str:
        """The session's id, unique within its host."""
        return self._id

    @property
    def workdir(self) -> Path:
        """The project directory whose configuration this session uses."""
        return self._workdir

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Problems found loading the configuration (R-CFG-4); loading never raised."""
        return self._diagnostics

    @property
    def closed(self) -> bool:
        """Whether the session was closed (destroyed)."""
        return self._closed

    @property
    def reconfiguring(self) -> bool:
        """Whether a :meth:`reconfigure` is in progress."""
        return self._reconfiguring is not None

    # Configuration.

    def _load(self) -> LoadedConfig:
        return load_config(
            self._workdir, home=self._home, constructor=self._constructor, plugins=self._plugins, trust=self._trust
        )

    def _apply_config(self, loaded: LoadedConfig) -> None:
        self._diagnostics = loaded.diagnostics
        for diagnostic in loaded.diagnostics:
            logger.log(logging.WARNING if diagnostic.severity.value == "error" else logging.INFO, "%s", diagnostic)
        for name, config in loaded.servers.items():
            if name not in self._actors:
                self._actors[name] = self._new_actor(config)
        self._changed()

    def _new_actor(self, config: ServerConfig) -> ServerActor:
        return ServerActor(
            config, workdir=self._workdir, options=self._options, nursery=self._nursery, on_change=self._changed
        )

    # Status.

    def _changed(self) -> None:
        self._version += 1
        self._snapshot = None
        if self._change is not None:
            self._change.set()
            self._change = None

    def snapshot(self) -> SessionSnapshot:
        """Every server's status now, with a version that grows with every change (R-HOST-2)."""
        if self._snapshot is None or self._snapshot.version != self._version:
            self._snapshot = SessionSnapshot(self._version, self._statuses())
        return self._snapshot

    def servers(self) -> list[ServerStatus]:
        """Every configured server's status, sorted by name (R-HOST-1)."""
        return list(self.snapshot().servers)

    def server(self, name: str) -> ServerStatus:
        """One server's status.

        :raises UnknownServer: no server of that name is configured.
        """
        try:
            return self.snapshot().server(name)
        except KeyError:
            self._actor(name)  # raises the helpful error
            raise

    def _statuses(self) -> tuple[ServerStatus, ...]:
        actors = sorted(self._actors.values(), key=lambda actor: actor.name)
        names = assign_names((actor.name, tool.name) for actor in actors for tool in actor.state.tools)
        by_pair = {pair: name for name, pair in names.items()}
        statuses: list[ServerStatus] = []
        for actor in actors:
            state, config = actor.state, actor.config
            if self._closed and state.state is not ServerState.DISABLED:
                # Closed: whatever the actors last said, nothing is connected any more.
                state = attrs.evolve(state, state=ServerState.DISCONNECTED, error=None, tools=())
            overrides = config.tool_overrides
            tools = tuple(
                ToolInfo(
                    name=by_pair[(actor.name, tool.name)],
                    server=actor.name,
                    tool=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    read_only=(
                        override.read_only
                        if (override := overrides.get(tool.name)) is not None and override.read_only is not None
                        else tool.read_only_hint
                    ),
                )
                for tool in state.tools
            )
            statuses.append(
                ServerStatus(
                    name=actor.name,
                    source=config.source,
                    origin=config.origin,
                    type=config.type,
                    state=state.state,
                    error=state.error,
                    tools=tools,
                    last_connected=state.last_connected,
                    generation=state.generation,
                    instructions=state.instructions,
                    enabled=config.enabled,
                    manually_disconnected=state.manually_disconnected,
                )
            )
        return tuple(statuses)

    async def watch(self) -> AsyncGenerator[SessionSnapshot, None]:
        """Yield the current snapshot, then each newer one (R-HOST-2).

        Snapshots that come and go while the consumer is busy are skipped, but
        the latest is never missed: after any change the consumer is handed a
        snapshot at least that new. Versions only grow. The iteration ends
        after the session closes.
        """
        seen = -1
        while True:
            snapshot = self.snapshot()
            if snapshot.version > seen:
                seen = snapshot.version
                yield snapshot
                continue  # changed while the consumer was busy? hand over the latest now
            if self._closed:
                return
            if self._change is None:
                self._change = trio.Event()
            await self._change.wait()

    # Dialing.

    async def prepare_turn(self) -> None:
        """Dial, concurrently, every server that is due its lazy dial, and wait for them (R-DIAL-2).

        Due: enabled, never dialed in this session, not manually disconnected.
        Each dial is bounded by the dial timeout; a failure leaves the server
        in ``error`` and is not retried by later turns (R-DIAL-4). Already
        connected servers are reused (R-DIAL-3). With nothing due this returns
        without a single checkpoint (R-DIAL-7).
        """
        due = [actor for actor in self._actors.values() if actor.wants_lazy_dial()]
        if not due or self._closed:
            return
        async with trio.open_nursery() as nursery:
            for actor in due:
                nursery.start_soon(self._lazy_dial, actor)

    @staticmethod
    async def _lazy_dial(actor: ServerActor) -> None:
        await actor.connect(explicit=False)

    async def connect(self, name: str) -> ServerStatus:
        """Dial ``name`` now, whatever the lazy rules say (R-DIAL-5), and wait for the outcome.

        A connected server is reused, not re-dialed.

        :raises UnknownServer: no such server.
        :raises ServerDisabled: its entry has ``enabled: false`` (R-CFG-6).
        :raises DialError: the dial failed; the server is left in ``error``.
        """
        actor = self._actor(name)
        if not actor.config.enabled:
            raise ServerDisabled(
                f"server {name!r} is disabled in {actor.config.origin}; enable it there to connect"
            )
        await actor.connect(explicit=True)
        status = self.server(name)
        if status.state is ServerState.ERROR:
            raise DialError(status.error or f"server {name!r}: connect failed")
        return status

    async def disconnect(self, name: str) -> ServerStatus:
        """Close ``name``'s connection, reclaim its processes, and keep it down (R-DIAL-6, R-DIAL-8).

        No lazy dial or reconnect brings it back in this session; only
        :meth:`connect` does. The configuration is untouched.

        :raises UnknownServer: no such server.
        """
        await self._actor(name).disconnect()
        return self.server(name)

    def _actor(self, name: str) -> ServerActor:
        if self._closed:
            raise WaveActorsError(f"session {self._id} is closed")
        try:
            return self._actors[name]
        except KeyError:
            known = ", ".join(sorted(self._actors)) or "none"
            raise UnknownServer(f"no server {name!r} in session {self._id}; configured: {known}") from None

    # Tools.

    def tool_declarations(self, mode: LoadMode = LoadMode.FULL) -> tuple[ToolDeclaration, ...]:
        """The tools to declare to the model, from live connections only (R-TOOL-3).

        :param mode: :attr:`LoadMode.FULL` declares every tool with its sanitized schema.
        :raises NotImplementedError: for :attr:`LoadMode.WORKING_SET`, which
            arrives with the working-set feature.
        """
        if mode is not LoadMode.FULL:
            raise NotImplementedError(f"load mode {mode.value!r} is not available yet; use LoadMode.FULL")
        return full_declarations(self.snapshot().servers, self._options.dropped_schema_keywords)

    def resolve_tool(self, name: str) -> tuple[str, str]:
        """The ``(server, raw tool)`` a model-visible name maps to (R-TOOL-1).

        :raises UnknownTool: no listed tool has that name.
        """
        snapshot = self.snapshot()
        if self._tool_index is None or self._tool_index[0] != snapshot.version:
            index = {tool.name: (tool.server, tool.tool) for status in snapshot.servers for tool in status.tools}
            self._tool_index = (snapshot.version, index)
        try:
            return self._tool_index[1][name]
        except KeyError:
            raise UnknownTool(f"no tool {name!r} in session {self._id}; " + self._tool_hint(name)) from None

    def _tool_hint(self, name: str) -> str:
        parts = name.split("__")
        if len(parts) >= 3 and parts[0] == "mcp":
            server = parts[1]
            for status in self.snapshot().servers:
                if status.name == server or status.name.replace("-", "_") == server:
                    listed = ", ".join(tool.tool for tool in status.tools) or "none listed"
                    return f"server {status.name!r} is {status.state.value}; its tools: {listed}"
        names = ", ".join(sorted(status.name for status in self.snapshot().servers)) or "none"
        return f"servers: {names}"

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> mcp_types.CallToolResult:
        """Call a tool by its model-visible name (R-TOOL-4..6).

        Runs concurrently with other calls and commands. Tool errors
        (``isError``) are returned as results.

        :param name: the model-visible name, e.g. ``mcp__echo__say``.
        :param arguments: the tool's arguments (a JSON object).
        :raises UnknownTool: no such tool.
        :raises ServerUnavailable: the server is not connected, reconnecting, or was lost mid-call.
        :raises ToolTimeout: past the server's ``tool_timeout_ms``; the call is not replayed.
        :raises TypeError: ``arguments`` is not a mapping.
        """
        if self._closed:
            raise ServerUnavailable(f"session {self._id} is closed; no calls")
        if arguments is not None and not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"arguments of {name!r} must be a JSON object (a mapping), not {type(arguments).__name__}")
        server, tool = self.resolve_tool(name)
        return await self._actor(server).call_tool(tool, arguments)

    # Reconfiguration and closing.

    async def reconfigure(self, mcp_servers: ServerEntries | None = None) -> ReconfigureResult:
        """Re-read the configuration and reconcile the running servers (R-STORE-5).

        Removed servers are retired (no new calls; accepted calls finish within
        their timeout, then the transport closes); changed ones (new
        fingerprint, or ``enabled`` flipped) reload in place under the same
        name; new ones are registered ``disconnected``.

        :param mcp_servers: new constructor entries; ``None`` keeps the current ones.
        :raises WaveActorsError: the session is closed or already reconfiguring.
        """
        if self._closed or self._destroying:
            raise WaveActorsError(f"session {self._id} is closed or being destroyed")
        if self._reconfiguring is not None:
            raise WaveActorsError(f"session {self._id} is already reconfiguring")
        self._reconfiguring = done = trio.Event()
        try:
            if mcp_servers is not None:
                self._constructor = mcp_servers
            loaded = self._load()
            removed = [name for name in self._actors if name not in loaded.servers]
            changed = [
                name
                for name, config in loaded.servers.items()
                if name in self._actors
                and (
                    config.fingerprint != self._actors[name].config.fingerprint
                    or config.enabled != self._actors[name].config.enabled
                )
            ]
            added = [name for name in loaded.servers if name not in self._actors]
            try:
                async with trio.open_nursery() as nursery:
                    for name in removed:
                        nursery.start_soon(self._actors[name].retire)
                    for name in changed:
                        nursery.start_soon(self._actors[name].reload, loaded.servers[name])
            finally:
                # Even if cancelled half-way: a retired actor never serves again,
                # so its name must be free for the next configuration to use.
                for name in removed:
                    del self._actors[name]
            for name in loaded.servers:
                if name in self._actors and name not in changed:
                    # Same connection; settings such as tool_timeout_ms may still have changed.
                    self._actors[name].update_settings(loaded.servers[name])
            self._apply_config(loaded)
            return ReconfigureResult(tuple(added), tuple(removed), tuple(changed), loaded.diagnostics)
        finally:
            self._reconfiguring = None
            done.set()

    async def wait_reconfigured(self) -> None:
        """Return once no :meth:`reconfigure` is in progress."""
        while (reconfiguring := self._reconfiguring) is not None:
            await reconfiguring.wait()

    async def aclose(self) -> None:
        """Close the session and return once every process it started is gone (R-KILL-4).

        For a session of a :class:`~wave_actors._host.Host` this is
        :meth:`Host.destroy_session <wave_actors._host.Host.destroy_session>`
        (hooks included). Idempotent. For a session of :func:`open_session`
        it closes the session and cancels the ``async with`` block; the
        reclamation completes as the block is left.
        """
        if self._destroy is not None:
            await self._destroy()
            return
        # open_session's own block lives inside the session's nursery: waiting
        # here for the nursery to finish would wait for ourselves. Closing
        # cancels the block, and leaving it completes the reclamation.
        self._close()

    def _close(self) -> None:
        """Refuse new commands, then cancel everything; the nursery's exit waits for reclamation."""
        if self._closed:
            return
        self._closed = True
        for actor in self._actors.values():
            actor.close()
        self._nursery.cancel_scope.cancel()
        self._changed()

    @classmethod
    @asynccontextmanager
    async def _open(
        cls,
        *,
        workdir: Path | str,
        home: Path | str | None = None,
        mcp_servers: ServerEntries | None = None,
        plugins: Iterable[tuple[str, ServerEntries]] = (),
        trust: TrustMode = "all",
        options: SessionOptions = SessionOptions(),
        session_id: str | None = None,
    ) -> AsyncGenerator[Session, None]:
        session: Session | None = None
        try:
            async with trio.open_nursery() as nursery:
                session = cls(
                    session_id=session_id or uuid.uuid4().hex[:12],
                    workdir=Path(workdir),
                    home=Path(home) if home is not None else None,
                    constructor=mcp_servers,
                    plugins=tuple(plugins),
                    trust=trust,
                    options=options,
                    nursery=nursery,
                )
                try:
                    yield session
                finally:
                    # Cancels every dial and connection; the nursery then waits for
                    # each transport's shielded reclamation (R-KILL-4).
                    session._close()
        finally:
            if session is not None:
                session._finished.set()


@asynccontextmanager
async def open_session(
    *,
    workdir: Path | str,
    home: Path | str | None = None,
    mcp_servers: ServerEntries | None = None,
    plugins: Iterable[tuple[str, ServerEntries]] = (),
    trust: TrustMode = "all",
    options: SessionOptions = SessionOptions(),
) -> AsyncGenerator[Session, None]:
    """A session owned by the caller's task, for hosts with a single session.

    Leaving the block closes every connection and returns only after every
    process the session started is gone (R-KILL-4).

    :param workdir: the project directory (its ``.mcp.json`` is a config source).
    :param home: the user directory holding ``mcp.json`` (default ``~/.wave``).
    :param mcp_servers: constructor entries, the highest-precedence source (R-CFG-1).
    :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source.
    :param trust: ``"approved"`` loads project entries only if approved (R-CFG-10).
    :param options: dial, reconnect and reclamation settings.
    """
    async with Session._open(  # pyright: ignore[reportPrivateUsage]
        workdir=workdir, home=home, mcp_servers=mcp_servers, plugins=plugins, trust=trust, options=options
    ) as session:
        yield session
