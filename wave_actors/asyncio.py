"""wave-actors from asyncio: the same hosts, sessions and guarantees, for an asyncio program (R-AIO-1, R-AIO-2).

::

    from wave_actors.asyncio import Host

    async def main() -> None:
        async with Host.open() as host:
            session = await host.create_session(workdir, {"echo": {...}})
            await session.prepare_turn()
            result = await session.call_tool("mcp__echo__say", {"text": "hi"})
            await host.destroy_session(session.id)   # returns once its processes are gone

    asyncio.run(main())   # or uvloop.run(main())

:class:`Host`, :class:`Session` and :func:`open_session` have the shapes of
:class:`wave_actors.Host`, :class:`wave_actors.Session` and
:func:`wave_actors.open_session`, raise the same exceptions
(:class:`wave_actors.WaveActorsError` and its kind) and take the same
options. There is no second copy of the logic: each drives the trio one.

How it runs. Each ``Host.open()`` (or ``open_session()``) starts one thread
of its own, ``wave-actors host``, running a trio loop that holds the trio
host; every awaited method is a trio task there, and its outcome comes back
to the caller's loop by ``call_soon_threadsafe``. The getters (``servers()``,
``snapshot()``, ``tool_declarations()``, ``working_set()``, ...) answer at
once, without a hand-off, from the newest snapshot the trio side handed over
(after ``await session.connect(...)``, at least the one that command left).
Callbacks you pass run in your loop's thread: ``on_progress`` in order and
before the call's result, in the calling task's context variables, and
``before_destroy`` hooks as tasks of your loop. ``SessionOptions.transition_observer``
is the exception: it is called in the trio thread, synchronously.

Why a thread and not trio's guest mode, measured (``python -m
benchmarks.asyncio_face``; echo over stdio to the stdlib fault server, one
server per side, in one process, sides taking turns, medians of 7 rounds of
1000 calls, one first ``prepare_turn`` per side a round; a quiet 2-core
machine; the ratios, taken per round, are what to read):

========================  ===========  ===========  ============  ===================================
way, loop                 latency µs   calls/s, 10  first         a 0.3 s call, tool timeout 0.6 s,
                          (ratio)      in flight    prepare_turn  loop blocked 1 s
                                       (ratio)      ms (ratio)
========================  ===========  ===========  ============  ===================================
trio alone                197 (1.00)   6915 (1.00)  24.6 (1.00)   (no loop to block)
thread, asyncio           338 (1.72)   6765 (0.97)  24.5 (1.01)   the result, at 1.0 s
guest run, asyncio        394 (2.04)   6486 (0.93)  25.4 (1.02)   ToolTimeout (spurious), at 1.0 s
selector guest, asyncio   322 (1.64)   6635 (0.94)  25.7 (1.04)   ToolTimeout (spurious), at 1.0 s
thread, uvloop            318 (1.60)   6522 (0.97)  25.0 (1.01)   the result, at 1.0 s
guest run, uvloop         372 (1.89)   6695 (0.98)  24.8 (1.02)   ToolTimeout (spurious), at 1.0 s
selector guest, uvloop    294 (1.50)   6817 (1.11)  25.4 (1.01)   ToolTimeout (spurious), at 1.0 s
========================  ===========  ===========  ============  ===================================

"Guest run" is ``trio.lowlevel.start_guest_run``: trio still waits for I/O
in a thread of its own and hands each wake-up to the loop, so every wait
crosses threads twice. A "selector guest" crosses no thread at all:
the guest's waits are the loop watching trio's epoll descriptor. It is the
best a trio run inside the loop's thread could do, and it is measured, not
offered: trio's public API has no such mode (the benchmark reaches into
trio's private guest machinery for it).

No way reaches 1.2x on this machine. What crossing threads costs, measured
with nothing of this library (a bare hand-off to a trio thread and back,
``run_sync_soon`` one way, ``call_soon_threadsafe`` the other, no server):
21 µs when the kernel runs the two threads on one core, 70 to 75 when on
two (both pinned either way; left to the kernel, it is nearly always two,
since it wakes a thread on an idle core, and an idle core of this virtual
machine takes ~25 µs to wake). That is 0.11 or 0.35 of a trio call; the
benchmark measures it each round. Beyond it the face's own hand-off costs
~20 µs a round trip (an operation that only checkpoints: 92 to 107 µs
against the bare 70 to 86), and the trio thread's two waits for I/O a call
(for the request, then the answer) take 35 to 48 µs of CPU each, against
12 to 19 for trio's one (thread CPU time around trio's waits). With the
loop's thread and the trio thread pinned to one core and the server on the
other, the face measured 1.33 to 1.41; the library does not pin a host's
threads. The
calls/s ratios move with the machine's load between runs of the same tree
(0.83 to 1.06 over six full runs, either loop); the latency ratios less
(1.56 to 1.80 for the thread). With ten calls in flight the hand-offs go in
batches (25 µs an operation against 110 µs for one alone), which is why
throughput keeps up where latency does not.

What decides is the blocked loop: a guest run of either kind stops whenever
the loop does, so a host loop blocked for a second freezes every call,
every reclamation grace and every deadline with it, and a call the server
answered in time fails as timed out, or not, depending on whether trio sees
the deadline or the answer first once the loop is back. A trio thread keeps
the servers' pipes drained, deadlines true and reclamation going whatever
the loop does, the same with the standard loop and uvloop, for 0.1 more of
latency than the best a guest could do.

Endings. Leaving ``async with Host.open()`` destroys every session and
returns once every process is gone; a cancellation (``asyncio.run``
cancelling the task at its end, Ctrl-C under ``asyncio.run``) is raised only
after that. A loop that goes away with the block still open -- closed, its
thread ended, or the interpreter exiting -- is noticed by the trio thread
within 0.1 s and the host is closed then; the thread is not a daemon, so the
interpreter waits for that reclamation before it exits. A process that dies
outright (SIGKILL) is covered as under trio: the watchdog and the
parent-death signal (:meth:`Host.orphan_protection`, R-KILL-7); for SIGTERM,
SIGINT and SIGHUP, wrap the program in :func:`reclaim_on_signals`.

Cancellation. Cancelling a task that awaits a method is a trio cancellation
of that operation, waited for: a call is cancelled on the server
(``notifications/cancelled``) before the task sees
:class:`asyncio.CancelledError`; a destroy is shielded and finishes its
reclamation first; a ``prepare_turn`` or ``connect`` stops waiting while the
dial goes on, as it does under trio. A trio-side failure reaches the caller
as the very exception, its trio frames in its traceback.

A :class:`Host` belongs to the loop that opened it: use it from that loop's thread.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, final

from wave_actors._asyncio.mirror import SnapshotMirror, publish
from wave_actors._asyncio.runtime import RuntimeClosed, TrioRuntime
from wave_actors._auth import Credentials, CredentialStore, LoginStatus, StoreChoice
from wave_actors._config import Diagnostic, TrustMode
from wave_actors._errors import WaveActorsError
from wave_actors._host import Host as _TrioHost, PendingDestroy
from wave_actors._opening import open_session as _open_trio_session
from wave_actors._options import ProjectOptions, SessionOptions
from wave_actors._parameters import ServerEntries
from wave_actors._reconfigure import ReconfigureResult
from wave_actors._session import Session as _TrioSession
from wave_actors._session_reads import SessionReads
from wave_actors._status import ServerStatus, SessionSnapshot
from wave_actors._surface import NoPublicConstructor
from wave_actors._tools import LoadMode
from wave_actors._watchdog.guard import OrphanProtection

if TYPE_CHECKING:
    import mcp_types

__all__ = ["DestroyHook", "Host", "Session", "open_session", "reclaim_on_signals"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

DestroyHook = Callable[["Session"], Awaitable[None]]
"""``async def hook(session)``, run as a task of the host's loop before a session's servers are closed."""


@final
class Session(SessionReads, metaclass=NoPublicConstructor):
    """The MCP servers of one conversation, from asyncio: :class:`wave_actors.Session`'s shapes (R-AIO-1).

    Create one with :meth:`Host.create_session` or :func:`open_session`.
    Every method does what the trio session's method of the same name does
    (see there for the rules it keeps); what differs is said here.
    """

    def __init__(self, runtime: TrioRuntime, session: _TrioSession, mirror: SnapshotMirror, owner: Host | None) -> None:
        self._runtime = runtime
        self._session = session
        self._mirror = mirror
        self._owner = owner

    @property
    def id(self) -> str:
        """The session's id, unique within its host."""
        return self._session.id

    @property
    def workdir(self) -> Path:
        """The project directory whose configuration this session uses: resolved once, when it was created."""
        return self._session.workdir

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Problems found loading the configuration (R-CFG-4); loading never raised."""
        return self._session.diagnostics

    @property
    def ownership(self) -> Literal["session", "project"]:
        """``"session"``: the session owns its connections; ``"project"``: it shares its project's (R-SCOPE-1)."""
        return self._session.ownership

    @property
    def closed(self) -> bool:
        """Whether the session is closed: it refuses commands, and its processes are being (or were) reclaimed."""
        return self._session.closed

    @property
    def reconfiguring(self) -> bool:
        """Whether a :meth:`reconfigure` is in progress."""
        return self._session.reconfiguring

    def snapshot(self) -> SessionSnapshot:
        """The newest snapshot the trio side handed over; its version grows with every change (R-HOST-2).

        After an awaited command of this session returns, it is at least the
        snapshot the command left behind.
        """
        return self._mirror.snapshot

    def _dropped_schema_keywords(self) -> frozenset[str]:
        return self._session._dropped_schema_keywords()  # pyright: ignore[reportPrivateUsage]  # the trio face's

    async def watch(self) -> AsyncIterator[SessionSnapshot]:
        """Yield the current snapshot, then each newer one; the latest is never missed (R-HOST-2).

        Snapshots that come and go while the consumer is busy are skipped.
        The iteration ends after the session closes, with a snapshot showing it closed.
        """
        async for snapshot in self._mirror.watch():
            yield snapshot

    async def wait_for(self, predicate: Callable[[SessionSnapshot], bool]) -> SessionSnapshot:
        """Wait until ``predicate(snapshot)`` holds, and return that snapshot.

        Bound it with :func:`asyncio.timeout`.

        :param predicate: called in this loop's thread with each new snapshot; it must not block.
        :raises WaveActorsError: the session closed before the predicate held.
        :raises Exception: whatever ``predicate`` raised.
        """
        return await self._mirror.wait_for(predicate, self.id)

    async def _command(self, function: Callable[[], Awaitable[_T]]) -> _T:
        """Run a command of the trio session; the snapshot it leaves is handed over before its outcome."""
        session, mirror, runtime = self._session, self._mirror, self._runtime

        async def command() -> _T:
            try:
                return await function()
            finally:
                runtime.post(mirror.update, session.snapshot(), session.closed)

        return await runtime.run(command)

    async def prepare_turn(self) -> None:
        """Dial, concurrently, every server that is due its lazy dial, and wait for them (R-DIAL-2).

        Cancelling the caller stops the wait at once; the dials belong to the
        session and carry on, as under trio.
        """
        await self._command(self._session.prepare_turn)

    async def connect(self, name: str) -> ServerStatus:
        """Dial ``name`` now, whatever the lazy rules say (R-DIAL-5), and wait for the outcome.

        :param name: the server.
        :raises UnknownServer: no such server.
        :raises ServerDisabled: its entry has ``enabled: false`` (R-CFG-6).
        :raises DialError: the dial failed; the server is left in ``error``.
        :raises ServerUnavailable: a disconnect overtook the dial, or the session closed meanwhile.
        """
        return await self._command(lambda: self._session.connect(name))

    async def reconnect(self, name: str) -> ServerStatus:
        """Tear ``name``'s connection down and dial it again now, and wait for the outcome (R-RACE-1, R-SCOPE-6).

        :param name: the server.
        :raises UnknownServer: no such server.
        :raises ServerDisabled: its entry has ``enabled: false`` (R-CFG-6).
        :raises DialError: the new dial failed; the server is left in ``error``.
        """
        return await self._command(lambda: self._session.reconnect(name))

    async def refresh_tools(self, name: str) -> ServerStatus:
        """Ask ``name``'s live connection for its tools again, and return its status once the new list shows.

        :param name: the server.
        :raises UnknownServer: no such server.
        :raises ServerUnavailable: it is not connected.
        :raises ToolTimeout: no complete listing within the dial timeout.
        :raises ToolCallError: the server's listing was malformed.
        """
        return await self._command(lambda: self._session.refresh_tools(name))

    async def disconnect(self, name: str) -> ServerStatus:
        """Close ``name``'s connection, reclaim its processes, and keep it down (R-DIAL-6, R-DIAL-8).

        :param name: the server.
        :raises UnknownServer: no such server.
        """
        return await self._command(lambda: self._session.disconnect(name))

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

        Cancelling the caller cancels the call on its server
        (``notifications/cancelled``) and waits for that before
        :class:`asyncio.CancelledError` is raised; the call is never replayed.

        :param name: the model-visible name, e.g. ``mcp__echo__say``.
        :param arguments: the tool's arguments (a JSON object).
        :param on_progress: ``on_progress(progress, total, message)``, called in
            this loop's thread, in the server's order and before the call
            returns, in the context variables of the calling task, for each
            ``notifications/progress`` of this call (R-TOOL-10). What it
            raises goes to the loop's exception handler.
        :param mode: the load mode of the turn the model is in (R-WS-7).
        :param expected_fingerprint: send only on a connection dialed with that entry (R-TOOL-11).
        :raises EntryChanged: the server's entry is another now; nothing was sent.
        :raises UnknownTool: no live listing has a tool of that name; nothing was sent.
        :raises ServerUnavailable: the tool's server is not connected, or was lost mid-call.
        :raises ToolTimeout: past the server's ``tool_timeout_ms``; the call is not replayed.
        :raises ToolCallError: the server refused the request, or its answer was malformed.
        :raises TypeError: a bad name, argument, callback or fingerprint; nothing was sent (R-TOOL-9).
        :raises ValueError: ``mode`` is not a load mode.
        """
        if on_progress is not None and not callable(on_progress):
            raise TypeError(f"on_progress must be a callable, not {type(on_progress).__name__}")
        relayed = self._runtime.relay(on_progress) if on_progress is not None else None
        session = self._session
        return await self._runtime.run(
            lambda: session.call_tool(
                name, arguments, on_progress=relayed, mode=mode, expected_fingerprint=expected_fingerprint
            )
        )

    async def reconfigure(
        self,
        mcp_servers: ServerEntries | None = None,
        *,
        plugins: Iterable[tuple[str, ServerEntries]] | None = None,
    ) -> ReconfigureResult:
        """Re-read the configuration and reconcile the running servers (R-STORE-5).

        :param mcp_servers: new constructor entries; ``None`` keeps the current ones.
        :param plugins: new ``(plugin_name, entries)`` sources; ``None`` keeps the current ones.
        :raises WaveActorsError: the session is closed, being destroyed, or already reconfiguring.
        """
        chosen = None if plugins is None else tuple(plugins)
        return await self._command(lambda: self._session.reconfigure(mcp_servers, plugins=chosen))

    async def logout(self, name: str) -> bool:
        """Remove remote server ``name``'s login, in every process of this machine (R-AUTH-3).

        As :meth:`wave_actors.Session.logout`: a live connection of the server
        is dialed again without the login. Logging in is the trio face's
        :meth:`wave_actors.Session.login` for now (its flow is a trio object).

        :returns: whether a login was stored.
        :raises UnknownServer: no such server.
        :raises CredentialStoreError: the credential store could not be written.
        """
        return await self._command(lambda: self._session.logout(name))

    async def login_status(self, name: str) -> LoginStatus:
        """How remote server ``name``'s login stands: needed, or stored until when; never a token (R-AUTH-3).

        :raises UnknownServer: no such server.
        """
        session = self._session
        return await self._runtime.run(lambda: session.login_status(name))

    async def aclose(self) -> None:
        """Close the session and return once every process it started is gone (R-KILL-4). Idempotent.

        For a session of a :class:`Host` this is :meth:`Host.destroy_session`.
        For the session of :func:`open_session` it closes the session (its
        ``async with`` block goes on, with a closed session) and returns once
        its reclamation is over. Either way it is shielded: a cancelled caller
        sees :class:`asyncio.CancelledError` only after that.
        """
        if self._owner is not None:
            await self._owner.destroy_session(self.id)
            return
        try:
            await self._command(self._session.aclose)
        except RuntimeClosed:
            pass  # closed with its block already
        await self._runtime.finished()


@final
class Host(metaclass=NoPublicConstructor):
    """Owns many sessions and their servers, from asyncio: :class:`wave_actors.Host`'s shapes (R-AIO-1).

    Open it with :meth:`open`; leaving the block destroys every remaining
    session and returns once every process is gone.
    """

    def __init__(self, runtime: TrioRuntime, host: _TrioHost) -> None:
        self._runtime = runtime
        self._host = host
        self._sessions: dict[str, Session] = {}

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        home: Path | str | None = None,
        options: SessionOptions = SessionOptions(),
        before_destroy: Iterable[DestroyHook] = (),
        hook_timeout: float = 5.0,
        watchdog: bool = True,
        subreaper: bool = False,
        cgroups: bool = True,
        client_info: tuple[str, str] | None = None,
        project: ProjectOptions = ProjectOptions(),
        watch_config: bool = False,
        credentials: Credentials | StoreChoice | CredentialStore | None = None,
    ) -> AsyncGenerator[Host, None]:
        """Run a host, in a trio thread of its own, for the duration of an ``async with`` block.

        Every parameter is :meth:`wave_actors.Host.open`'s.

        :param home: the user directory holding ``mcp.json`` (default ``~/.wave``).
        :param options: default dial, reconnect and reclamation settings of sessions.
        :param before_destroy: ``async def hook(session)`` coroutines, run in
            order as tasks of this loop before a session's servers are closed;
            each is bounded by ``hook_timeout`` (then cancelled) and a failure
            is logged, never fatal (R-KILL-3).
        :param hook_timeout: seconds each hook may take.
        :param watchdog: keep a watchdog process that reclaims every server
            family within 2 s if this process dies without closing the host (R-KILL-7).
        :param subreaper: make this process a child subreaper (Linux; R-KILL-6).
        :param cgroups: run every server family in a cgroup of its own where the process may (Linux; R-KILL-10).
        :param client_info: the ``(name, version)`` every server is told in ``initialize``.
        :param project: how the connections of ``ownership="project"`` sessions are shared (R-SCOPE).
        :param watch_config: reconcile live workdirs by itself when their configuration files change.
        :param credentials: where remote servers' OAuth logins are kept (R-AUTH-3):
            ``"keyring"`` (the default), ``"file"``, a store or a :class:`~wave_actors.Credentials`.
        :raises TypeError: ``client_info`` is not a pair of non-empty strings, or ``credentials`` is none of those.
        """
        hooks = tuple(before_destroy)
        faces: list[Host] = []  # the face, once it exists: hooks are handed the session's face

        def hold(runtime: TrioRuntime) -> AbstractAsyncContextManager[_TrioHost]:
            def bridged(hook: DestroyHook) -> Callable[[_TrioSession], Awaitable[None]]:
                async def run_hook(session: _TrioSession) -> None:
                    await runtime.run_in_loop(lambda: hook(faces[0]._face_of(session)))

                return run_hook

            return _TrioHost.open(
                home=home,
                options=options,
                before_destroy=[bridged(hook) for hook in hooks],
                hook_timeout=hook_timeout,
                watchdog=watchdog,
                subreaper=subreaper,
                cgroups=cgroups,
                client_info=client_info,
                project=project,
                watch_config=watch_config,
                credentials=credentials,
            )

        async with TrioRuntime.open(hold, name="wave-actors host") as (runtime, host):
            face = cls._create(runtime, host)  # pyright: ignore[reportPrivateUsage]  # the private constructor
            faces.append(face)
            yield face

    def _face_of(self, session: _TrioSession) -> Session:
        face = self._sessions.get(session.id)
        if face is None or face._session is not session:  # pyright: ignore[reportPrivateUsage]
            raise WaveActorsError(f"session {session.id} was not created through this host's asyncio face")
        return face

    async def create_session(
        self,
        workdir: Path | str,
        mcp_servers: ServerEntries | None = None,
        plugins: Iterable[tuple[str, ServerEntries]] = (),
        *,
        trust: TrustMode = "all",
        options: SessionOptions | None = None,
        session_id: str | None = None,
        ownership: Literal["session", "project"] = "session",
    ) -> Session:
        """Create a session: every configured server is registered, nothing is spawned (R-DIAL-1).

        Every parameter is :meth:`wave_actors.Host.create_session`'s. A
        caller cancelled once the session exists still leaves it listed in
        :meth:`sessions`, for the host to destroy.

        :param workdir: the project directory, resolved now, once (R-CFG-13).
        :param mcp_servers: constructor entries, the highest-precedence source (R-CFG-1).
        :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source.
        :param trust: ``"approved"`` loads a project entry only when approved (R-CFG-10).
        :param options: overrides the host's session options.
        :param session_id: an id of the host's choosing (default: a random one).
        :param ownership: ``"session"`` or ``"project"`` (R-SCOPE-1).
        :raises ConfigError: ``workdir`` does not exist or is not a directory.
        :raises WaveActorsError: the host is closing, or the id is taken.
        :raises ValueError: an unknown ``ownership`` or ``trust``, or ``options`` with ``"project"``.
        """
        host, runtime = self._host, self._runtime
        chosen = tuple(plugins)

        async def create() -> tuple[_TrioSession, SnapshotMirror]:
            session = await host.create_session(
                workdir,
                mcp_servers,
                chosen,
                trust=trust,
                options=options,
                session_id=session_id,
                ownership=ownership,
            )
            return session, _mirrored(runtime, session, self._forget)

        return await runtime.run(create, then=self._adopt)

    def _adopt(self, made: tuple[_TrioSession, SnapshotMirror]) -> Session:
        session, mirror = made
        face = Session._create(self._runtime, session, mirror, self)  # pyright: ignore[reportPrivateUsage]
        self._sessions[session.id] = face
        return face

    def _forget(self, session: _TrioSession) -> None:
        face = self._sessions.get(session.id)
        if face is not None and face._session is session and session.closed:  # pyright: ignore[reportPrivateUsage]
            del self._sessions[session.id]

    async def logout(self, name: str) -> bool:
        """Remove server ``name``'s login, in every process of this machine; live connections drop it (R-AUTH-3).

        As :meth:`wave_actors.Host.logout`, for every session of the host
        that has a server of that name.

        :returns: whether a login was stored.
        :raises CredentialStoreError: the credential store could not be written.
        """
        host, runtime, faces = self._host, self._runtime, self.sessions()

        async def logout() -> bool:
            try:
                return await host.logout(name)
            finally:  # the redials it started show in each session's snapshot, as after a command
                for face in faces:
                    trio_session, mirror = face._session, face._mirror  # pyright: ignore[reportPrivateUsage]
                    runtime.post(mirror.update, trio_session.snapshot(), trio_session.closed)

        return await runtime.run(logout)

    def get_session(self, session_id: str) -> Session:
        """The live session with that id.

        :raises KeyError: no such session (never created, or destroyed).
        """
        return self._sessions[session_id]

    def sessions(self) -> list[Session]:
        """Every live session, in creation order."""
        return list(self._sessions.values())

    async def destroy_session(self, session_id: str) -> None:
        """Run the hooks, close the session, and return once every process it started is gone (R-KILL-3..5).

        Shielded, as under trio: cancelling the caller does not stop it, and
        :class:`asyncio.CancelledError` is raised once the reclamation is
        over. Idempotent; a destroy during a reconfigure of the session is
        queued until it ends (:meth:`pending_destroys`).

        :param session_id: the session's id.
        """
        host = self._host
        face = self._sessions.get(session_id)
        try:
            await self._runtime.run(lambda: host.destroy_session(session_id))
        except RuntimeClosed:
            return  # the host is closed: every session was destroyed with it
        if face is not None:
            self._forget(face._session)  # pyright: ignore[reportPrivateUsage]

    async def reconcile(
        self, workdir: Path | str, *, plugins: Iterable[tuple[str, ServerEntries]] | None = None
    ) -> ReconfigureResult:
        """Apply the configuration on disk to every live session of ``workdir``: the sync point after edits (R-SCOPE-3).

        :param workdir: the project directory.
        :param plugins: new ``(plugin_name, entries)`` sources for every live
            session of the workdir; ``None`` keeps each session's own.
        :returns: what changed, over every session of the workdir.
        """
        host = self._host
        chosen = None if plugins is None else tuple(plugins)
        return await self._runtime.run(lambda: host.reconcile(workdir, plugins=chosen))

    def project_servers(self, workdir: Path | str) -> list[ServerStatus]:
        """Every connection the project of ``workdir`` holds, sorted by name, then by age (R-SCOPE-1).

        .. note:: Read in the host's trio thread while this one waits: a
           quick read, for a settings page, not a loop.

        :param workdir: the project directory.
        :raises WaveActorsError: the host is closed.
        """
        host = self._host
        return self._runtime.call_sync(lambda: host.project_servers(workdir))

    def pending_destroys(self) -> list[PendingDestroy]:
        """Destroys waiting for a reconfigure to end: queued, never dropped (R-KILL-5).

        :raises WaveActorsError: the host is closed.
        """
        return self._runtime.call_sync(self._host.pending_destroys)

    def orphan_protection(self) -> OrphanProtection:
        """What keeps this host's server families from outliving the process if it dies without closing (R-KILL-7).

        :raises WaveActorsError: the host is closed.
        """
        return self._runtime.call_sync(self._host.orphan_protection)


def _mirrored(
    runtime: TrioRuntime, session: _TrioSession, closed: Callable[[_TrioSession], None] | None = None
) -> SnapshotMirror:
    """Trio thread: a mirror of ``session``, kept up to date by a task of the runtime until the session closes.

    :param closed: called in the asyncio thread once the session is closed.
    """
    mirror = SnapshotMirror(session.snapshot(), session.closed)

    async def follow() -> None:
        await publish(session, mirror, runtime)
        if closed is not None:
            runtime.post(closed, session)

    runtime.start_soon(follow, name=f"session {session.id}: handing snapshots to asyncio")
    return mirror


@asynccontextmanager
async def open_session(
    *,
    workdir: Path | str,
    home: Path | str | None = None,
    mcp_servers: ServerEntries | None = None,
    plugins: Iterable[tuple[str, ServerEntries]] = (),
    trust: TrustMode = "all",
    options: SessionOptions = SessionOptions(),
    client_info: tuple[str, str] | None = None,
    credentials: Credentials | StoreChoice | CredentialStore | None = None,
) -> AsyncGenerator[Session, None]:
    """A session for an asyncio host with a single session, in a trio thread of its own (R-AIO-1).

    Leaving the block closes every connection and returns only after every
    process the session started is gone (R-KILL-4). Every parameter is
    :func:`wave_actors.open_session`'s.

    :param workdir: the project directory, resolved once, now (R-CFG-13).
    :param home: the user directory holding ``mcp.json`` and the approvals record.
    :param mcp_servers: constructor entries, the highest-precedence source (R-CFG-1).
    :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source.
    :param trust: ``"approved"`` loads a project entry only when approved (R-CFG-10).
    :param options: dial, reconnect and reclamation settings.
    :param client_info: the ``(name, version)`` servers are told in ``initialize``.
    :param credentials: where remote servers' OAuth logins are kept (R-AUTH-3):
        ``"keyring"`` (the default), ``"file"``, a store or a :class:`~wave_actors.Credentials`.
    :raises ConfigError: ``workdir`` does not exist or is not a directory.
    :raises TypeError: ``client_info`` is not a pair of non-empty strings, or ``credentials`` is none of those.
    """
    chosen = tuple(plugins)

    @asynccontextmanager
    async def hold(runtime: TrioRuntime) -> AsyncGenerator[tuple[_TrioSession, SnapshotMirror], None]:
        async with _open_trio_session(
            workdir=workdir,
            home=home,
            mcp_servers=mcp_servers,
            plugins=chosen,
            trust=trust,
            options=options,
            client_info=client_info,
            credentials=credentials,
        ) as session:
            yield session, _mirrored(runtime, session)

    async with TrioRuntime.open(hold, name="wave-actors session") as (runtime, (session, mirror)):
        yield Session._create(runtime, session, mirror, None)  # pyright: ignore[reportPrivateUsage]


@asynccontextmanager
async def reclaim_on_signals(
    signals: Iterable[int] | None = None, *, exit_on_signal: bool = True
) -> AsyncGenerator[None, None]:
    """Turn SIGTERM, SIGINT and SIGHUP into a clean shutdown of everything opened inside the block (R-KILL-7).

    The asyncio counterpart of :func:`wave_actors.reclaim_on_signals`::

        async def main() -> None:
            async with wave_actors.asyncio.reclaim_on_signals():
                async with wave_actors.asyncio.Host.open() as host:
                    ...  # serve

        asyncio.run(main())

    On the first signal the task that entered the block is cancelled, so
    every ``Host.open`` and ``open_session`` inside it closes and reclaims its
    server families; once the block has unwound, :class:`SystemExit` is
    raised with status 128 + the signal's number. Signals that arrive
    meanwhile are logged and ignored. While the block runs, the loop's
    handlers for those signals are replaced (``loop.add_signal_handler``);
    afterwards they are removed, so each signal has its default action again.

    :param signals: the signals to handle (default SIGTERM, SIGINT and SIGHUP,
        those of them the platform has).
    :param exit_on_signal: ``False`` ends the block early instead, and the
        program goes on after it.
    :raises SystemExit: after the block unwound, if a signal arrived (unless ``exit_on_signal`` is false).
    :raises RuntimeError: not called from a task, or the loop cannot handle signals
        (not its process's main thread; Windows).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("reclaim_on_signals() must be entered by a task")
    wanted = tuple(signals) if signals is not None else _DEFAULT_SIGNALS
    received: list[int] = []

    def on_signal(number: int) -> None:
        name = signal.Signals(number).name
        if received:
            logger.warning("%s: already reclaiming every server family; the graces bound it", name)
            return
        received.append(number)
        logger.warning("%s: reclaiming every server family before exiting", name)
        task.cancel()

    for number in wanted:
        loop.add_signal_handler(number, on_signal, number)
    try:
        yield
    except asyncio.CancelledError:
        if not received or task.uncancel() > 0:
            raise  # not ours, or someone else's cancellation as well
    finally:
        for number in wanted:
            loop.remove_signal_handler(number)
    if received and exit_on_signal:
        raise SystemExit(128 + received[0])


_DEFAULT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
