"""Session: one conversation's MCP servers, the public facade over its roster.

A session registers every configured server as an actor and spawns nothing
(R-DIAL-1). ``prepare_turn`` dials, concurrently, the servers that were never
dialed (R-DIAL-2); explicit ``connect`` / ``disconnect`` override the lazy
rules (R-DIAL-5, R-DIAL-6). A session that owns its connections runs every
actor's task in its own nursery, so closing it cancels every dial and
connection and its nursery returns only after every process they started is
reclaimed (R-RACE-2, R-KILL-4); a session sharing its project's connections
holds references, and the project's scope owns the processes (R-SCOPE-1).

Lifecycle. A session is ``OPEN``, ``RECONFIGURING``, ``DESTROYING`` or
``CLOSED``; :mod:`wave_actors._lifecycle` holds the phase and its rules.

Whose servers. The session is a facade over a
:class:`~wave_actors._roster.interface.Roster`, picked once when the session
is opened: its own servers in its own nursery (``ownership="session"``), or
a view onto its project's shared ones (``ownership="project"``, R-SCOPE).
Nothing here asks which.

Who owns it. :func:`~wave_actors._opening.open_owned_session` opens the nursery, builds the session
and yields it with its :class:`SessionLifecycle`, the owner's only handle on
the phase. :class:`~wave_actors.Host` is one owner (it implements
:class:`SessionOwner`, so ``session.aclose()`` is its ``destroy_session``);
:func:`~wave_actors.open_session` is the other, for hosts with a single session.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, final

from wave_actors._actor.actor import ServerActor
from wave_actors._auth import Credentials, LoginStatus
from wave_actors._auth.login import LoginFlow
from wave_actors._catalog import Standing, build_snapshot, unknown_tool_reason
from wave_actors._config import Diagnostic, TransportType
from wave_actors._errors import (
    DialError,
    LoginRequired,
    ServerDisabled,
    ServerUnavailable,
    UnknownServer,
    UnknownTool,
    WaveActorsError,
)
from wave_actors._lifecycle import SessionLifecycle, SessionOwner
from wave_actors._parameters import ServerEntries, SessionSources
from wave_actors._reconfigure import ReconfigureResult
from wave_actors._roster import Roster
from wave_actors._session_reads import SessionReads
from wave_actors._status import ServerState, ServerStatus, SessionSnapshot
from wave_actors._surface import NoPublicConstructor
from wave_actors._tools import (
    MCP_CALL,
    MCP_DESCRIBE,
    LoadMode,
    call_gateway,
)
from wave_actors._transport.arguments import tool_call_arguments
from wave_actors._transport.options import client_implementation
from wave_actors._transport.sdk_import import load_sdk

if TYPE_CHECKING:
    import mcp_types

__all__ = ["Session"]


@final
class Session(SessionReads, metaclass=NoPublicConstructor):
    """The MCP servers of one conversation (R-HOST-1).

    Create one with :meth:`Host.create_session <wave_actors.Host.create_session>`
    or :func:`~wave_actors.open_session`; ``Session(...)`` raises :class:`TypeError`.
    """

    def __init__(
        self,
        sources: SessionSources,
        roster: Roster,
        *,
        lifecycle: SessionLifecycle,
        owner: SessionOwner | None,
    ) -> None:
        self._sources = sources
        self._roster = roster
        self._owner = owner
        self._lifecycle = lifecycle
        lifecycle.on_close(roster.close)
        self._snapshot: SessionSnapshot | None = None

    @property
    def id(self) -> str:
        """The session's id, unique within its host."""
        return self._sources.parameters.session_id

    @property
    def workdir(self) -> Path:
        """The project directory whose configuration this session uses: resolved once, when it was created."""
        return self._sources.parameters.workdir

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Problems found loading the configuration (R-CFG-4); loading never raised."""
        return self._sources.diagnostics

    @property
    def ownership(self) -> Literal["session", "project"]:
        """``"session"``: the session owns its connections; ``"project"``: it shares its project's (R-SCOPE-1)."""
        return self._roster.ownership

    @property
    def closed(self) -> bool:
        """Whether the session is closed: it refuses commands, and its processes are being (or were) reclaimed."""
        return self._lifecycle.closed

    @property
    def reconfiguring(self) -> bool:
        """Whether a :meth:`reconfigure` is in progress."""
        return self._lifecycle.reconfiguring

    def snapshot(self) -> SessionSnapshot:
        """Every server's status now, with a version that grows with every change (R-HOST-2).

        Versions grow across every session of a host, so a view that keeps the
        highest version it has seen never ignores a new session that reuses an id.
        """
        roster, snapshot = self._roster, self._snapshot
        version = roster.current_version()
        if snapshot is None or snapshot.version != version:
            servers = ((actor.config, actor.state) for actor in roster.actors.values())
            snapshot = self._snapshot = build_snapshot(
                version, servers, closed=self.closed, cache=roster.tool_cache, shared=roster.sharing()
            )
        return snapshot

    def _dropped_schema_keywords(self) -> frozenset[str]:
        return self._sources.parameters.options.dropped_schema_keywords

    async def watch(self) -> AsyncIterator[SessionSnapshot]:
        """Yield the current snapshot, then each newer one (R-HOST-2).

        Snapshots that come and go while the consumer is busy are skipped, but
        the latest is never missed: after any change the consumer is handed a
        snapshot at least that new. Versions only grow. The iteration ends
        after the session closes, with a snapshot showing it closed.
        """
        roster = self._roster
        with roster.watching():
            async for version in roster.version.eventual_values():
                snapshot = self.snapshot()
                yield snapshot
                if self.closed and snapshot.version >= version and roster.current_version() == snapshot.version:
                    return

    async def wait_for(self, predicate: Callable[[SessionSnapshot], bool]) -> SessionSnapshot:
        """Wait until ``predicate(snapshot)`` holds, and return that snapshot.

        Checked at once, then after every change; it shares :meth:`watch`'s
        mechanism, so no change is missed. Bound it with ``trio.fail_after``::

            with trio.fail_after(10):
                await session.wait_for(lambda s: s.server("git").state is ServerState.CONNECTED)

        :param predicate: called synchronously with each new snapshot; it must not block.
        :raises WaveActorsError: the session closed before the predicate held.
        :raises Exception: whatever ``predicate`` raised (in the caller's task).
        """
        found: list[SessionSnapshot] = []
        failed: list[Exception] = []

        def holds(_: int) -> bool:
            if found or failed:
                return True  # decided already; later versions must not change the answer
            snapshot = self.snapshot()
            try:
                if predicate(snapshot):
                    found.append(snapshot)
                    return True
            except Exception as error:  # raised in the caller's task, never in a server's
                failed.append(error)
                return True
            return self.closed

        roster = self._roster
        if not holds(roster.current_version()):
            with roster.watching():
                await roster.version.wait_value(holds)
        if failed:
            raise failed[0]
        if not found:
            raise WaveActorsError(f"session {self.id} closed before the awaited condition held")
        return found[0]

    # Dialing.

    async def prepare_turn(self) -> None:
        """Dial, concurrently, every server that is due its lazy dial, and wait for them (R-DIAL-2).

        Due: enabled, never dialed in this session, not manually disconnected.
        Each dial is bounded by the dial timeout; a failure leaves the server
        in ``error`` and is not retried by later turns (R-DIAL-4). Already
        connected servers are reused (R-DIAL-3). With nothing due this returns
        without a single checkpoint (R-DIAL-7).

        .. note:: The dials belong to the session, not to this call. Cancel
           the caller (the user interrupted the turn) and it returns at once,
           while the dials carry on: the next turn finds those servers
           connected, or still connecting, and never dials them twice. Only
           :meth:`disconnect`, closing the session or the dial timeout end a
           dial.

        In a project-mode session the dials are the project's, and the turn
        waits at most the ready budget (:attr:`ProjectOptions.ready_budget
        <wave_actors.ProjectOptions.ready_budget>`, default 5 s) for them and
        for this session's other connections that are still connecting; a
        timeout fails nothing: the server shows ``connecting``, and its tools
        come with a later turn (R-SCOPE-4).
        """
        await self._roster.prepare_turn()

    async def connect(self, name: str) -> ServerStatus:
        """Dial ``name`` now, whatever the lazy rules say (R-DIAL-5), and wait for the outcome.

        A connected server is reused, not re-dialed.

        .. note:: The dial belongs to the session, not to this call: a caller
           that is cancelled stops waiting at once and the dial carries on, for
           whoever else waits for the server (another ``connect``, the next
           turn). To end it, call :meth:`disconnect`; closing the session and
           the dial timeout end it too.

        :raises UnknownServer: no such server (or it was removed by a reconfigure meanwhile).
        :raises ServerDisabled: its entry has ``enabled: false`` (R-CFG-6).
        :raises DialError: the dial failed; the server is left in ``error``.
        :raises LoginRequired: the server asks for an OAuth login; it is left
            ``needs_login`` until a login (:meth:`login`) dials it again (R-AUTH-2).
        :raises ServerUnavailable: the dial did not end connected for another
            reason: a :meth:`disconnect` overtook it, the server was retired, or
            the session closed meanwhile.
        """
        actor = self._actor(name)
        if not actor.config.enabled:
            raise ServerDisabled(f"server {name!r} is disabled in {actor.config.origin}; enable it there to connect")
        with self._roster.waiting():
            await actor.connect(explicit=True)
        if self.closed:
            raise ServerUnavailable(f"session {self.id} closed while server {name!r} was connecting")
        status = self.server(name)
        if status.state is ServerState.ERROR:
            raise DialError(status.error or f"server {name!r}: connect failed")
        if status.state is ServerState.NEEDS_LOGIN:
            raise LoginRequired(status.error or f"server {name!r} needs a login", server=name)
        if status.state is not ServerState.CONNECTED:
            why = "a disconnect overtook it" if status.manually_disconnected else f"it is {status.state.value}"
            raise ServerUnavailable(f"server {name!r} did not stay connected: {why}")
        return status

    async def reconnect(self, name: str) -> ServerStatus:
        """Tear ``name``'s connection down and dial it again now, with its current entry, and wait for the outcome.

        The new connection is a new generation: the old one is closed and its
        processes reclaimed before the new dial starts, so there are never two
        (R-RACE-1, R-RACE-6), and its close is never taken for a loss. It is
        not a manual disconnect: afterwards the server is reconnected after a
        loss as usual, and a manual disconnect it was under is lifted, as by
        :meth:`connect`. While it dials, the last tool list stays listed and
        calls fail fast with :class:`ServerUnavailable`; the new connection's
        listing replaces it.

        In a project-mode session the connection is the project's: every
        live session of the project moves to the new generation together,
        served by one new process (R-SCOPE-6).

        :raises UnknownServer: no such server.
        :raises ServerDisabled: its entry has ``enabled: false`` (R-CFG-6).
        :raises DialError: the new dial failed; the server is left in ``error``.
        :raises LoginRequired: the server asks for an OAuth login (R-AUTH-2).
        """
        actor = self._actor(name)
        if not actor.config.enabled:
            raise ServerDisabled(f"server {name!r} is disabled in {actor.config.origin}; enable it there to connect")
        with self._roster.waiting():
            await actor.reconnect()
        status = self.server(name)
        if status.state is ServerState.ERROR:
            raise DialError(status.error or f"server {name!r}: reconnect failed")
        if status.state is ServerState.NEEDS_LOGIN:
            raise LoginRequired(status.error or f"server {name!r} needs a login", server=name)
        return status

    async def refresh_tools(self, name: str) -> ServerStatus:
        """Ask ``name``'s live connection for its tools again, and return its status once the new list shows.

        Only the listing: the connection, its generation and its calls are
        untouched, as when the server sends ``notifications/tools/list_changed``
        (R-RACE-7). The new list is written to the tool snapshot cache (R-CACHE-1).

        :raises UnknownServer: no such server.
        :raises ServerUnavailable: it is not connected.
        :raises ToolTimeout: no complete listing within the dial timeout.
        :raises ToolCallError: the server's listing was malformed.
        """
        actor = self._actor(name)
        with self._roster.waiting():
            await actor.refresh_tools()
        return self.server(name)

    async def disconnect(self, name: str) -> ServerStatus:
        """Close ``name``'s connection, reclaim its processes, and keep it down (R-DIAL-6, R-DIAL-8).

        No lazy dial or reconnect brings it back in this session; only
        :meth:`connect` does. The configuration is untouched.

        :raises UnknownServer: no such server.
        """
        actor = self._actor(name)
        with self._roster.waiting():
            await actor.disconnect()
        return self.server(name)

    # Logins (R-AUTH).

    @asynccontextmanager
    async def login(
        self, name: str, *, redirect_uri: str | None = None, listen: bool = True
    ) -> AsyncGenerator[LoginFlow, None]:
        """Log in to remote server ``name`` (OAuth): yield the login once its authorization URL is known (R-AUTH-2).

        For a server whose status is ``needs_login``, or to log in before it
        asks (or again, as someone else). The login starts from what the server
        said when it asked (the scope, where its metadata is), discovers the
        authorization server, registers this client when the entry names none,
        and stops at the URL the user must visit::

            async with session.login("tracker") as login:
                webbrowser.open(login.authorization_url)   # or show it
                status = await login.wait()                # stored, then connected

        The browser comes back to a loopback listener this login runs (the
        entry's ``oauth.redirect_uri``, or a free port), or the host passes
        what it ended on to :meth:`LoginFlow.complete <wave_actors.LoginFlow.complete>`
        (a browser host, a redirect URI that is not this machine's). The login
        is stored in the host's credentials (never in a configuration file),
        bound to the entry's URL; then the server connects by itself, in this
        session and in every session of the host waiting for this login.
        Leaving the block ends a login not yet complete; after ten minutes it
        ends by itself. Of two logins of one server, the newer wins.

        :param name: the server.
        :param redirect_uri: where the browser comes back, instead of the entry's
            ``oauth.redirect_uri`` (a browser host's own callback page, say).
        :param listen: run the loopback listener for a loopback redirect URI; ``False``
            when the browser is elsewhere and the host passes the callback back.
        :raises UnknownServer: no such server.
        :raises LoginFailed: it has no login (not remote, or a machine client), the
            listener cannot listen, or the login failed before its URL was known
            (discovery, a resource that is not this server's, registration).
        :raises CredentialStoreError: the credential store cannot be used.
        """
        actor = self._actor(name)
        credentials = self._credentials()
        await load_sdk(TransportType.HTTP)  # the login runs the SDK's OAuth client
        from wave_actors._auth.flow import open_login

        async def connect_after(_: object) -> ServerStatus | None:
            if self.closed or name not in self._roster.actors:
                return None
            current = self._roster.actors[name]
            if current.config.enabled:
                with self._roster.waiting():
                    await current.connect(explicit=True)
            return None if self.closed else self.server(name)

        options = self._sources.parameters.options
        async with open_login(
            actor.config,
            credentials,
            client_name=client_implementation(options.transport)[0],
            redirect_uri=redirect_uri,
            listen=listen,
            http_timeout=options.transport.http_timeout,
            on_stored=connect_after,
        ) as flow:
            yield flow

    async def logout(self, name: str) -> bool:
        """Remove remote server ``name``'s login, in every process of this machine (R-AUTH-3).

        Logins started before it can no longer be saved; a refresh in flight
        (here or in another process) is dropped when it answers. A live
        connection of the server here is dialed again, without the login (it
        then shows ``needs_login`` if the server asks for one). The
        configuration is untouched.

        :returns: whether a login was stored.
        :raises UnknownServer: no such server.
        :raises CredentialStoreError: the credential store could not be written.
        """
        self._actor(name)
        removed = await self._credentials().logout(name)
        await self._dial_without_login(name)
        return removed

    async def _dial_without_login(self, name: str) -> None:
        """After a logout: a live connection of ``name`` is dialed again, so it stops using the removed login."""
        actor = self._roster.actors.get(name)
        if self.closed or actor is None:
            return
        if actor.state.state in (ServerState.CONNECTED, ServerState.RECONNECTING):
            with self._roster.waiting():
                await actor.reconnect()

    async def login_status(self, name: str) -> LoginStatus:
        """How remote server ``name``'s login stands: needed, or stored until when; never a token (R-AUTH-3).

        Read from the record every process of the machine shares, not the
        credential store (no keyring prompt).

        :raises UnknownServer: no such server.
        """
        config = self._actor(name).config
        remote = config.transport in (TransportType.HTTP, TransportType.SSE)
        return await self._credentials().status(name, config.url if remote else None)

    def _credentials(self) -> Credentials:
        credentials = self._sources.parameters.options.credentials
        if credentials is None:  # sessions of a Host or open_session always have some
            raise WaveActorsError(f"session {self.id} has no credential store; set SessionOptions.credentials")
        return credentials

    def _actor(self, name: str) -> ServerActor:
        if self.closed:
            raise WaveActorsError(f"session {self.id} is closed")
        try:
            return self._roster.actors[name]
        except KeyError:
            raise UnknownServer(self._unknown_server(name, self.snapshot())) from None

    # Tools.

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: Callable[[float, float | None, str | None], None] | None = None,
        mode: LoadMode | None = None,
        expected_fingerprint: str | None = None,
    ) -> mcp_types.CallToolResult:
        """Call a tool by its model-visible name (R-TOOL-4..6), or one of the gateway tools (R-WS-4).

        ``mcp_call`` and ``mcp_describe`` take ``{server, tool[, arguments]}``:
        a mistake in them (an unknown server or tool, arguments that are not a
        JSON object) is answered with an ``isError`` result for the model and
        nothing is sent; ``mcp_describe`` answers from the snapshot with no
        I/O; a resolved ``mcp_call`` is this same call by the tool's name, so
        its failures are the exceptions below. The gateway exists only in
        working-set mode: given ``mode=LoadMode.FULL``, both are answered with
        an ``isError`` result saying so, and nothing is sent (R-WS-7).

        Runs concurrently with other calls and commands. Tool errors
        (``isError``) are returned as results.

        :param name: the model-visible name, e.g. ``mcp__echo__say``.
        :param arguments: the tool's arguments (a JSON object).
        :param on_progress: ``on_progress(progress, total, message)`` is called,
            synchronously and in the server's order, for each
            ``notifications/progress`` of this call and of no other (R-TOOL-10);
            ``total`` and ``message`` are ``None`` when the server sent none. It
            must not block; to hand updates to another task, pass a memory
            channel's ``send_nowait``. Without it no progress token is sent.
            Progress never extends the call's deadline (R-TOOL-4). A callback
            that raises is logged and the call goes on.
        :param mode: the load mode of the turn the model is in, as given to
            :meth:`tool_declarations`; ``None`` (the default) when the caller
            does not say, and the gateway tools run whatever the mode.
        :param expected_fingerprint: the :attr:`ServerStatus.fingerprint
            <wave_actors.ServerStatus.fingerprint>` of the tool's server that the
            host looked at (when it showed or approved the call): the call is sent
            only on a connection dialed with that entry, while it is still the
            server's entry (R-TOOL-11). A reload or reconfigure in flight can
            never slip between the check and the send: both take the one
            connection the call goes on. ``None`` checks nothing. For
            ``mcp_call`` it is checked against the server the arguments name;
            ``mcp_describe`` sends nothing and ignores it.
        :raises EntryChanged: given ``expected_fingerprint``, the server's entry
            is another now (changed by a reload or reconfigure). Nothing was sent.
        :raises UnknownTool: no live listing of the session's servers has a
            tool of that name: never listed (a tool only the snapshot cache
            shows is never callable, R-CACHE-2), withdrawn by its server since
            (``tools/list_changed``), or its server was removed from the
            configuration. Nothing was sent.
        :raises ServerUnavailable: the newest listing of the tool's server has
            it, but the server is not connected (disconnected, reconnecting,
            in error, disabled since), or the connection was lost mid-call;
            or, given ``expected_fingerprint``, a reload to that entry has not
            connected yet (nothing was sent).
        :raises ToolTimeout: past the server's ``tool_timeout_ms``; the call is not replayed.
        :raises ToolCallError: the server refused the request, or its answer was malformed.
        :raises TypeError: ``name`` is not a string, or ``arguments`` is not a
            mapping or holds a value JSON cannot carry (a lone surrogate, bytes,
            a non-string key, NaN, a circular or too deep nesting), or
            ``expected_fingerprint`` is not a string; nothing was sent and the
            connection is untouched (R-TOOL-9).
        :raises ValueError: ``mode`` is not a load mode.
        """
        if on_progress is not None and not callable(on_progress):
            raise TypeError(f"on_progress must be a callable, not {type(on_progress).__name__}")
        if expected_fingerprint is not None and not isinstance(expected_fingerprint, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected_fingerprint must be a string, not {type(expected_fingerprint).__name__}")
        turn_mode = None if mode is None else LoadMode(mode)
        if name in (MCP_CALL, MCP_DESCRIBE):  # compared, not hashed: a name of any type is the check below's
            return await call_gateway(
                name,
                arguments,
                self.snapshot(),
                functools.partial(self.call_tool, on_progress=on_progress, expected_fingerprint=expected_fingerprint),
                self._dropped_schema_keywords(),
                mode=turn_mode,
            )
        if self.closed:
            raise ServerUnavailable(f"session {self.id} is closed; no calls")
        plain = tool_call_arguments(name, arguments)  # in the caller's task, before anything is queued (R-TOOL-9)
        server, tool = self._resolve_call(name)
        actor = self._actor(server)
        return await actor.call_tool(tool, plain, on_progress=on_progress, expected_fingerprint=expected_fingerprint)

    def _resolve_call(self, name: str) -> tuple[str, str]:
        """The ``(server, raw tool)`` a call goes to: a listed tool, or one its server's newest listing has.

        A tool whose server is down goes to its actor, which says why it is
        unavailable; any other name is :class:`UnknownTool`, with the reason.
        Both are decided from state that changes only where a listing
        arrives, never from what was looked at before (R-TOOL-1).
        """
        snapshot = self.snapshot()
        try:
            tool = snapshot.tool(name)
        except KeyError:
            known = self._roster.known_tool(name)
            if known is not None and known.standing is Standing.LISTED:
                return known.server, known.tool
            raise UnknownTool(
                f"no tool {name!r} in session {self.id}: {unknown_tool_reason(snapshot, name, known)}"
            ) from None
        return tool.server, tool.tool

    # Reconfiguration and closing.

    async def reconfigure(
        self,
        mcp_servers: ServerEntries | None = None,
        *,
        plugins: Iterable[tuple[str, ServerEntries]] | None = None,
    ) -> ReconfigureResult:
        """Re-read the configuration and reconcile the running servers (R-STORE-5).

        Removed servers are retired (no new calls; accepted calls finish within
        their timeout, then the transport closes); changed ones (new
        fingerprint, or ``enabled`` flipped) reload in place under the same
        name; new ones are registered ``disconnected``.

        In a project-mode session this reconciles the project's shared
        connections, this session's new sources included: every project-mode
        session of the workdir loads its configuration again and is given the
        connection of the entry it loaded (R-SCOPE-1, R-SCOPE-3). The
        workdir's session-mode sessions are not touched; :meth:`Host.reconcile
        <wave_actors.Host.reconcile>` reaches both.

        :param mcp_servers: new constructor entries; ``None`` keeps the current ones.
        :param plugins: new ``(plugin_name, entries)`` sources; ``None`` keeps the
            current ones. A plugin left out (disabled, unloaded) takes its
            servers away at once.
        :raises WaveActorsError: the session is closed, being destroyed, or already reconfiguring.
        """
        self._lifecycle.begin_reconfigure()
        try:
            self._sources.replace(constructor=mcp_servers, plugins=None if plugins is None else tuple(plugins))
            return await self._roster.reconfigure()
        finally:
            self._lifecycle.end_reconfigure()

    async def aclose(self) -> None:
        """Close the session. Idempotent.

        For a session of a :class:`~wave_actors.Host` this is
        :meth:`Host.destroy_session <wave_actors.Host.destroy_session>`
        (hooks included): it returns once every process the session started
        is gone (R-KILL-4). A project-mode session started none: its servers
        are the project's, and stay for its other sessions until their idle
        timer fires (R-SCOPE-2).

        For a session of :func:`~wave_actors.open_session` it closes the session and
        cancels the ``async with`` block, and returns at once: the block runs
        inside the session, so the reclamation completes as the block is
        left, and leaving it returns only after every process is gone.
        """
        if self._owner is not None:
            await self._owner.destroy_session(self.id)
            return
        # open_session's own block lives inside the session's nursery: waiting
        # here for the nursery to finish would wait for ourselves. Closing
        # cancels the block, and leaving it completes the reclamation.
        self._lifecycle.close()
