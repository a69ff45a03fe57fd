"""Host: many sessions by id, each a task in the host's nursery (R-HOST-1, R-KILL-3..5).

Destroying a session runs the host's ``before_destroy`` hooks (saving a
transcript, say), then closes the session: its scope is cancelled and
``destroy_session`` returns only once every process it started is gone. A
hook that fails or overruns is logged and teardown goes on: reclamation can
never be skipped by an earlier failure (R-KILL-3).

Sessions created with ``ownership="project"`` share one connection per
server with every other such session of their workdir that loaded the same
entry; those connections belong to the host's project scopes
(:mod:`wave_actors._roster.project`), which the host closes last (R-SCOPE-1). :meth:`Host.reconcile` is the one sync point
after configuration edits, in both modes (R-SCOPE-3).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal, final

import attrs
import trio

from wave_actors._auth import Credentials, CredentialStore, StoreChoice
from wave_actors._auth.credentials import credentials_for
from wave_actors._auth.login import LoginFlow
from wave_actors._cache import cache_directory
from wave_actors._config import Diagnostic, ServerConfig, TransportType, TrustMode
from wave_actors._config.sources import default_home, resolve_workdir
from wave_actors._config_watch import ConfigWatcher
from wave_actors._errors import WaveActorsError
from wave_actors._lifecycle import SessionLifecycle
from wave_actors._opening import open_owned_session
from wave_actors._options import ProjectOptions, SessionOptions
from wave_actors._parameters import ServerEntries, SessionParameters, session_parameters
from wave_actors._reconfigure import ReconfigureResult
from wave_actors._roster import ProjectScopes
from wave_actors._session import Session
from wave_actors._status import ServerStatus
from wave_actors._surface import NoPublicConstructor
from wave_actors._transport import TransportOptions
from wave_actors._transport.options import client_implementation
from wave_actors._transport.sdk_import import load_sdk, start_preload
from wave_actors._watchdog.guard import OrphanGuard, OrphanProtection, open_orphan_guard

__all__ = ["DestroyHook", "Host", "PendingDestroy"]

logger = logging.getLogger(__name__)

DestroyHook = Callable[[Session], Awaitable[None]]
"""``async def hook(session)``, run before a session's servers are closed."""


@attrs.frozen
class PendingDestroy:
    """A destroy waiting for a reconfigure of the same session to end (R-KILL-5).

    :param session_id: the session to destroy.
    :param requested_at: ``trio.current_time()`` when it was requested.
    """

    session_id: str
    requested_at: float


@final
class Host(metaclass=NoPublicConstructor):
    """Owns many sessions and their servers for the life of a process (R-HOST-1).

    Open it with :meth:`open`; leaving the block destroys every remaining session.
    """

    def __init__(
        self,
        *,
        nursery: trio.Nursery,
        home: Path | None,
        options: SessionOptions,
        before_destroy: Sequence[DestroyHook],
        hook_timeout: float,
        guard: OrphanGuard,
        project: ProjectOptions,
    ) -> None:
        self._nursery = nursery
        self._guard = guard
        self._versions = itertools.count(1)  # one sequence for every session's snapshots (R-HOST-2)
        self._scopes = ProjectScopes(
            nursery=nursery,
            options=options,
            project=project,
            cache_file=cache_directory(home),
            versions=self._versions,
        )
        self._home = home
        self._options = options
        self._hooks = tuple(before_destroy)
        self._hook_timeout = hook_timeout
        self._sessions: dict[str, tuple[Session, SessionLifecycle]] = {}
        self._pending: dict[str, PendingDestroy] = {}
        self._reserved: set[str] = set()
        self._closing = False
        self._client_info: tuple[str, str] | None = None
        self._watcher: ConfigWatcher | None = None

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
        """Run a host for the duration of an ``async with`` block.

        :param home: the user directory holding ``mcp.json`` (default ``~/.wave``).
        :param options: default dial, reconnect and reclamation settings of sessions.
        :param before_destroy: hooks run, in order, before a session's servers
            are closed; each is bounded by ``hook_timeout`` and a failure is
            logged, never fatal (R-KILL-3).
        :param hook_timeout: seconds each hook may take.
        :param watchdog: keep a watchdog process that reclaims every server
            family within 2 s if this process dies without closing the host,
            SIGKILL included (Linux; R-KILL-7). See :meth:`orphan_protection`.
        :param subreaper: make this process a child subreaper, so orphaned
            members of server families are re-parented to it and collected
            here, never left as zombies (Linux; R-KILL-6).
        :param cgroups: where this process may make cgroups (cgroup v2
            delegated to it, or root; probed here), run every server family
            in a cgroup of its own and end it with ``cgroup.kill``: whatever a
            server starts, however it detaches, is reclaimed (Linux;
            R-KILL-10). Elsewhere, or with ``False``, families are found by
            their tag, session and tree.
        :param project: how the connections of ``ownership="project"``
            sessions are shared: idle timeout, first-turn ready budget (R-SCOPE).
        :param watch_config: notice edits to the user file, the approvals
            record, and the project files and settings files of live workdirs
            (another process's, ``wave-actors remove``)
            and :meth:`reconcile` their workdirs, once a changed file has held
            still for a poll (half a second).
        :param client_info: the ``(name, version)`` every server is told in
            ``initialize``, unless a session's options name their own
            (``TransportOptions.client_info``); default ``("wave-actors", <its version>)``.
        :param credentials: where remote servers' OAuth logins are kept, for
            every session (R-AUTH-3): ``"keyring"`` (the system keyring, the
            default; needs ``wave-actors[keyring]``), ``"file"`` (owner-only
            files in ``<home>/oauth``, for daemons, CI and tests), a
            :class:`~wave_actors.CredentialStore` of the host's, or a
            :class:`~wave_actors.Credentials`. ``options.credentials`` wins when set.
            A keyring that is missing or failing is said so when a login is
            read or written; it never falls back to files.
        :raises TypeError: ``client_info`` is not a pair of non-empty strings, or ``credentials`` is none of those.
        """
        client_info = TransportOptions(client_info=client_info).client_info  # refused here, not at the first session
        if options.credentials is None:
            options = attrs.evolve(options, credentials=credentials_for(home, credentials))
        start_preload()  # the SDK import, in a thread of its own: the first dial need not wait for all of it
        async with (
            open_orphan_guard(watchdog=watchdog, subreaper=subreaper, cgroups=cgroups) as guard,
            trio.open_nursery() as nursery,
        ):
            host = cls._create(  # pyright: ignore[reportPrivateUsage]  # the private constructor
                nursery=nursery,
                home=Path(home) if home is not None else None,
                options=options,
                before_destroy=tuple(before_destroy),
                hook_timeout=hook_timeout,
                guard=guard,
                project=project,
            )
            host._client_info = client_info
            watching = trio.CancelScope()
            if watch_config:
                host._watcher = ConfigWatcher(host._home or default_home(), host._workdirs, host.reconcile)
                nursery.start_soon(host._watch_config, host._watcher, watching)
            try:
                yield host
            finally:
                host._closing = True
                watching.cancel()
                with trio.CancelScope(shield=True):
                    async with trio.open_nursery() as teardown:
                        for session_id in list(host._sessions):
                            teardown.start_soon(host.destroy_session, session_id)
                # Last, the shared connections: the nursery's exit waits for their reclamation.
                host._scopes.close()

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

        The configuration is read in a worker thread, so a large or slow file
        never stalls the host's other sessions (R-CFG-11).

        With ``ownership="project"`` the session owns no connection: it
        attaches to its workdir's project scope, where one connection per
        server is shared by every such session of that workdir that loaded
        the same entry (sessions given different entries under one name get
        a connection each), and outlives them by the idle timeout
        (:class:`ProjectOptions`, R-SCOPE-1, R-SCOPE-2). Destroying the session then releases its references and
        returns at once; the processes are the project's, reclaimed when the
        idle timer fires, when the configuration drops the server, or when the
        host closes. See :mod:`wave_actors._roster.project` for every rule, manual
        disconnect (per connection) included.

        :param workdir: the project directory (its ``.mcp.json`` is a config
            source). It is resolved now, once (absolute, symbolic links
            followed), and the session keeps that path (``Session.workdir``)
            for every later reload, reconcile and project lookup (R-CFG-13).
        :param mcp_servers: constructor entries, the highest-precedence source (R-CFG-1).
        :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source; ``entries``
            is ``{name: entry}`` or, as a plugin's file holds it, ``{"mcpServers": {name: entry}}``.
        :param trust: ``"approved"`` loads a project entry only when the
            approvals record in the host's ``home`` approves it at its
            current fingerprint (R-CFG-10; see :class:`~wave_actors.TrustStore`).
        :param options: overrides the host's session options.
        :param session_id: an id of the host's choosing (default: a random one).
        :param ownership: ``"session"`` (the session owns its connections) or
            ``"project"`` (it shares its project's).
        :raises ConfigError: ``workdir`` does not exist or is not a directory.
        :raises WaveActorsError: the host is closing, or the id is taken.
        :raises ValueError: an unknown ``ownership`` or ``trust``, or
            ``options`` with ``"project"``: shared connections run with the
            host's options.
        """
        if ownership not in ("session", "project"):
            raise ValueError(f"ownership must be 'session' or 'project', not {ownership!r}")
        if ownership == "project" and options is not None:
            raise ValueError(
                "a project-mode session shares its connections, which run with the host's options: "
                "pass options to Host.open(), not to create_session()"
            )
        if self._closing:
            raise WaveActorsError("the host is closing; no new sessions")
        parameters = await session_parameters(
            workdir=workdir,
            home=self._home,
            mcp_servers=mcp_servers,
            plugins=plugins,
            trust=trust,
            options=options or self._options,
            session_id=session_id,
            client_info=self._client_info,
            credentials=self.credentials,
        )
        # Checked after the workdir was resolved (a checkpoint), with no checkpoint before the reservation.
        if self._closing:
            raise WaveActorsError("the host is closing; no new sessions")
        if parameters.session_id in self._sessions or parameters.session_id in self._reserved:
            raise WaveActorsError(f"a session with id {parameters.session_id!r} exists already")
        self._reserved.add(parameters.session_id)  # two concurrent creates must not both get it
        try:
            if self._watcher is not None:
                await self._watcher.note(parameters.workdir)
            session: Session = await self._nursery.start(
                self._run_session, parameters, self._scopes if ownership == "project" else None
            )
        finally:
            self._reserved.discard(parameters.session_id)
        return session

    async def _run_session(
        self,
        parameters: SessionParameters,
        scopes: ProjectScopes | None,
        *,
        task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The session's task: it lives until :meth:`destroy_session` closes the session's scope."""
        refused = False
        opening = open_owned_session(parameters, owner=self, versions=self._versions, scopes=scopes)
        async with opening as (session, lifecycle):
            if refused := self._closing:
                # The host began closing while this session's configuration loaded: its teardown has
                # listed the sessions to destroy already, so this one closes here, before it is listed.
                lifecycle.close()
            else:
                self._sessions[session.id] = (session, lifecycle)
                task_status.started(session)
                await trio.sleep_forever()  # ends when lifecycle.close() cancels the session's scope
        if refused:  # raised here, outside the session's nursery, so the creator gets it as it is
            raise WaveActorsError("the host is closing; no new sessions")

    @property
    def credentials(self) -> Credentials:
        """Where this host's sessions keep remote servers' OAuth logins (R-AUTH-3)."""
        credentials = self._options.credentials
        assert credentials is not None  # Host.open sets it
        return credentials

    @asynccontextmanager
    async def login(
        self, server: ServerConfig, *, redirect_uri: str | None = None, listen: bool = True
    ) -> AsyncGenerator[LoginFlow, None]:
        """Log in to a remote server without a session: a settings page's "log in" (R-AUTH-2).

        As :meth:`Session.login <wave_actors.Session.login>`, for an entry the
        host holds (from :func:`~wave_actors.load_config`, say): the login is
        stored in the host's credentials, and every session of the host that
        waits for it (``needs_login``) connects by itself.
        :meth:`LoginFlow.wait <wave_actors.LoginFlow.wait>` returns ``None``.

        :param server: the server's entry.
        :param redirect_uri: where the browser comes back, instead of the entry's.
        :param listen: run the loopback listener for a loopback redirect URI.
        :raises LoginFailed: the server has no login, the listener cannot listen,
            or the login failed before its URL was known.
        :raises CredentialStoreError: the credential store cannot be used.
        """
        await load_sdk(TransportType.HTTP)
        from wave_actors._auth.flow import open_login

        async def stored(_: object) -> ServerStatus | None:
            return None

        transport = self._options.transport
        name = (self._client_info or client_implementation(transport))[0]
        async with open_login(
            server,
            self.credentials,
            client_name=name,
            redirect_uri=redirect_uri,
            listen=listen,
            http_timeout=transport.http_timeout,
            on_stored=stored,
        ) as flow:
            yield flow

    async def logout(self, name: str) -> bool:
        """Remove server ``name``'s login, in every process of this machine; live connections drop it (R-AUTH-3).

        As :meth:`Session.logout <wave_actors.Session.logout>`, for every
        session of the host that has a server of that name.

        :returns: whether a login was stored.
        :raises CredentialStoreError: the credential store could not be written.
        """
        removed = await self.credentials.logout(name)
        for session in self.sessions():
            await session._dial_without_login(name)  # pyright: ignore[reportPrivateUsage]
        return removed

    def get_session(self, session_id: str) -> Session:
        """The live session with that id.

        :raises KeyError: no such session (never created, or destroyed).
        """
        return self._sessions[session_id][0]

    def sessions(self) -> list[Session]:
        """Every live session, in creation order."""
        return [session for session, _ in self._sessions.values()]

    def orphan_protection(self) -> OrphanProtection:
        """What keeps this host's server families from outliving the process if it dies without closing (R-KILL-7)."""
        return self._guard.protection()

    def project_servers(self, workdir: Path | str) -> list[ServerStatus]:
        """Every connection (or registration) the project of ``workdir`` holds, sorted by name, then by age.

        What a settings page shows of a project (R-SCOPE-1): whether each
        connection is up (``state``) apart from how many sessions use it and,
        with none, when its idle timer closes it (``shared``). A name that
        sessions loaded different entries for is listed once per entry (tell
        them apart by ``fingerprint`` and ``source``). Empty when no
        project-mode session of that workdir was created, or when everything
        it held has closed.

        :param workdir: the project directory (resolved here, as the configuration loader does).
        """
        scope = self._scopes.get(str(resolve_workdir(workdir)))
        return scope.servers() if scope is not None else []

    async def reconcile(
        self, workdir: Path | str, *, plugins: Iterable[tuple[str, ServerEntries]] | None = None
    ) -> ReconfigureResult:
        """Apply the configuration on disk to every live session of ``workdir``: the sync point after edits (R-SCOPE-3).

        Call it after writing a configuration file (a
        :class:`~wave_actors.ConfigStore` edit, a settings page); with
        ``Host.open(watch_config=True)`` the host calls it itself. Removed
        servers are retired at once (accepted calls finish within their
        timeout, new calls are refused) and withdrawn from every session;
        changed ones reload in place under the same names, so their tools keep
        their model-visible names; added ones become available,
        ``disconnected`` until a turn dials them (R-STORE-5).

        For project-mode sessions the project's shared connections follow
        (once, whatever the number of sessions); each session-mode session
        of the workdir is reconfigured (a reconfigure it is already running
        is waited for first; a session being destroyed is left to its destroy).

        :param workdir: the project directory, resolved now; the sessions of
            that path (as each resolved its own when it was created) are reconciled.
        :param plugins: new ``(plugin_name, entries)`` sources for every live
            session of the workdir; ``None`` keeps each session's own. A
            plugin left out (disabled, unloaded) takes its servers away at once,
            in every session, in both modes.
        :returns: what changed, over every session of the workdir: the names
            added, removed and reloaded, and the diagnostics of the new loads.
        """
        chosen = tuple(plugins) if plugins is not None else None
        target = await trio.to_thread.run_sync(resolve_workdir, workdir)
        sessions = list(self._sessions.values())
        results: list[ReconfigureResult] = []

        async def reconfigure(session: Session, lifecycle: SessionLifecycle) -> None:
            while lifecycle.open:
                if lifecycle.reconfiguring:
                    await lifecycle.wait_reconfigured()
                    continue
                results.append(await session.reconfigure(plugins=chosen))
                return

        async def reconcile_project() -> None:
            scope = self._scopes.get(str(target))
            if scope is not None:
                results.extend((await scope.reconcile(chosen)).values())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reconcile_project)
            for session, lifecycle in sessions:
                if session.workdir == target and session.ownership == "session":
                    nursery.start_soon(reconfigure, session, lifecycle)
        return _merged(results)

    def _workdirs(self) -> list[Path]:
        return [session.workdir for session, _ in self._sessions.values()]

    @staticmethod
    async def _watch_config(watcher: ConfigWatcher, watching: trio.CancelScope) -> None:
        with watching:
            await watcher.run()

    def pending_destroys(self) -> list[PendingDestroy]:
        """Destroys waiting for a reconfigure to end: queued, never dropped (R-KILL-5)."""
        return list(self._pending.values())

    async def destroy_session(self, session_id: str) -> None:
        """Run the hooks, close the session, and return once every process it started is gone.

        Idempotent: destroying a destroyed (or unknown) session does nothing;
        a second call while the first runs waits for the same outcome
        (R-KILL-4). A destroy requested during a reconfigure of the session
        is queued until it ends (R-KILL-5).

        The whole chain, shielded from the caller's cancellation:

        1. ``lifecycle.begin_destroy()``: the session enters ``DESTROYING``; no
           reconfigure may start. A second destroy waits for step 6 instead.
        2. A running reconfigure is waited for, listed meanwhile in
           :meth:`pending_destroys` (R-KILL-5).
        3. The ``before_destroy`` hooks run, each bounded; failures are logged (R-KILL-3).
        4. ``lifecycle.close()``: ``CLOSED``; every actor refuses commands and
           releases its waiters; the session's cancel scope is cancelled. (A
           project-mode session releases its references instead: steps 5 and 6
           are its project's, when the idle timer fires or the host closes.)
        5. Each actor's task is cancelled inside its supervisor, which stops the
           transport child; leaving ``open_connection`` closes the MCP session
           and, for stdio, reclaims the whole process family: stdin EOF, grace,
           SIGTERM, grace, SIGKILL, shielded and bounded (R-KILL-1, R-KILL-2).
        6. The session's nursery exits once every such task has; the session's
           task here ends; ``lifecycle.wait_closed()`` returns (R-KILL-4).

        :param session_id: the session's id.
        """
        entry = self._sessions.get(session_id)
        if entry is None:
            return
        session, lifecycle = entry
        with trio.CancelScope(shield=True):
            if not lifecycle.begin_destroy():
                await lifecycle.wait_closed()
                return
            if lifecycle.reconfiguring:
                self._pending[session_id] = PendingDestroy(session_id, trio.current_time())
                logger.info("session %s: destroy queued until its reconfigure ends", session_id)
                try:
                    await lifecycle.wait_reconfigured()
                finally:
                    del self._pending[session_id]
            for hook in self._hooks:
                await self._run_hook(hook, session)
            lifecycle.close()
            await lifecycle.wait_closed()
            self._sessions.pop(session_id, None)

    async def _run_hook(self, hook: DestroyHook, session: Session) -> None:
        try:
            with trio.fail_after(self._hook_timeout):
                await hook(session)
        except trio.TooSlowError:
            logger.warning(
                "session %s: before_destroy hook %r overran %g s; destroying anyway",
                session.id,
                hook,
                self._hook_timeout,
            )
        except Exception:
            logger.warning(
                "session %s: before_destroy hook %r failed; destroying anyway", session.id, hook, exc_info=True
            )


def _merged(results: Iterable[ReconfigureResult]) -> ReconfigureResult:
    """One result for a workdir: each name once, in sorted order; each diagnostic once."""
    added: set[str] = set()
    removed: set[str] = set()
    changed: set[str] = set()
    diagnostics: dict[Diagnostic, None] = {}
    for result in results:
        added.update(result.added)
        removed.update(result.removed)
        changed.update(result.changed)
        diagnostics.update(dict.fromkeys(result.diagnostics))
    return ReconfigureResult(tuple(sorted(added)), tuple(sorted(removed)), tuple(sorted(changed)), tuple(diagnostics))
