"""Opening a session: its configuration loaded, its nursery open, its lifecycle handed to its owner.

:func:`open_owned_session` is how every session comes to be: a
:class:`~wave_actors.Host` opens each of its sessions with it (and keeps the
:class:`~wave_actors._lifecycle.SessionLifecycle`, its only handle on the
session's phase), and :func:`open_session` opens one for a host with a single
session, owned by the caller's task.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from wave_actors._auth import Credentials, CredentialStore, StoreChoice
from wave_actors._auth.credentials import credentials_for
from wave_actors._config import TrustMode
from wave_actors._lifecycle import SessionLifecycle, SessionOwner
from wave_actors._options import SessionOptions
from wave_actors._parameters import ServerEntries, SessionParameters, SessionSources, session_parameters
from wave_actors._roster import OwnedRoster, ProjectScopes, Roster, SharedRoster
from wave_actors._session import Session
from wave_actors._transport.sdk_import import start_preload

__all__ = ["open_owned_session", "open_session"]


@asynccontextmanager
async def open_owned_session(
    parameters: SessionParameters,
    *,
    owner: SessionOwner | None,
    versions: Iterator[int],
    scopes: ProjectScopes | None = None,
) -> AsyncGenerator[tuple[Session, SessionLifecycle], None]:
    """Load the configuration, open the session's nursery, and yield the session with its lifecycle.

    This is where the session's roster is picked, once: its own servers in
    its nursery, or a view onto its project's scope (R-SCOPE-1).

    Leaving the block closes the session (if nobody did) and returns once
    every process it started is gone (a project's shared processes are the
    scope's, and outlive it); :meth:`SessionLifecycle.wait_closed` returns
    then too.

    :param parameters: what the session is made of.
    :param owner: who ``session.aclose()`` asks to destroy it; ``None``: it closes itself.
    :param versions: the snapshot versions to draw from, shared by every session of a host (R-HOST-2).
    :param scopes: the host's project scopes, for a session that shares its
        project's connections (``ownership="project"``, R-SCOPE-1); ``None``:
        the session owns its connections.
    """
    sources = SessionSources(parameters)
    loaded, tool_cache = await sources.load_with_tool_cache()
    lifecycle: SessionLifecycle | None = None
    shared: SharedRoster | None = None
    if scopes is not None:
        shared = await scopes.reserve(loaded.workdir, tool_cache, sources)
    try:
        async with trio.open_nursery() as nursery:
            lifecycle = SessionLifecycle(parameters.session_id, nursery.cancel_scope)
            roster: Roster = shared or OwnedRoster(
                sources,
                nursery=nursery,
                tool_cache=tool_cache,
                cache_file=parameters.tool_cache_directory,
                workdir=loaded.workdir,
                versions=versions,
            )
            session = Session._create(  # pyright: ignore[reportPrivateUsage]  # the private constructor
                sources, roster, lifecycle=lifecycle, owner=owner
            )
            try:
                await roster.attach(loaded)
                yield session, lifecycle
            finally:
                lifecycle.close()
    finally:
        if shared is not None:
            shared.close()  # released by the close already, unless the session was never made
        if lifecycle is not None:
            lifecycle.mark_closed()


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
    """A session owned by the caller's task, for hosts with a single session.

    Leaving the block closes every connection and returns only after every
    process the session started is gone (R-KILL-4).

    :param workdir: the project directory (its ``.mcp.json`` is a config
        source), resolved once, now, and kept (``Session.workdir``, R-CFG-13).
    :param home: the user directory holding ``mcp.json`` and the approvals
        record (default ``~/.wave``).
    :param mcp_servers: constructor entries, the highest-precedence source (R-CFG-1).
    :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source; ``entries``
        is ``{name: entry}`` or, as a plugin's file holds it, ``{"mcpServers": {name: entry}}``.
    :param trust: ``"approved"`` loads a project entry only when the approvals
        record in ``home`` approves it at its current fingerprint (R-CFG-10).
    :param options: dial, reconnect and reclamation settings.
    :param client_info: the ``(name, version)`` servers are told in
        ``initialize``; default ``("wave-actors", <its version>)``, or
        ``options.transport.client_info`` when set.
    :param credentials: where remote servers' OAuth logins are kept (R-AUTH-3):
        ``"keyring"`` (the system keyring, the default; needs
        ``wave-actors[keyring]``), ``"file"`` (owner-only files in
        ``<home>/oauth``), a :class:`~wave_actors.CredentialStore`, or a
        :class:`~wave_actors.Credentials`; ``options.credentials`` wins when set.
    :raises ConfigError: ``workdir`` does not exist or is not a directory.
    :raises TypeError: ``client_info`` is not a pair of non-empty strings, or ``credentials`` is none of those.
    """
    parameters = await session_parameters(
        workdir=workdir,
        home=home,
        mcp_servers=mcp_servers,
        plugins=plugins,
        trust=trust,
        options=options,
        client_info=client_info,
        credentials=credentials_for(home, credentials),
    )
    start_preload()  # the SDK import, so that the first dial need not wait for all of it
    async with open_owned_session(parameters, owner=None, versions=itertools.count(1)) as (session, _):
        yield session
