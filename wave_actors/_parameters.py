"""What a session is made of: its id, where its configuration comes from, and its options.

:class:`SessionParameters` is the frozen record; :class:`SessionSources`
holds a live session's current one, loads it (in a worker thread), and keeps
what the last load said. :func:`load_together` loads the sessions of one
project over one reading of its files.

A session's workdir is resolved once, when it is created
(:func:`session_parameters`), and every later load, reconcile and project
lookup uses that path: a symbolic link re-pointed later, or a relative path
after a ``chdir``, never turns the session into another project's (R-CFG-13).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import final

import attrs
import trio

from wave_actors._auth import Credentials
from wave_actors._cache import ToolCache, cache_directory, read_cache
from wave_actors._config import Diagnostic, LoadedConfig, Severity, TrustMode
from wave_actors._config.loader import ConfigFiles, merge_config, read_config_files
from wave_actors._config.sources import resolve_existing_workdir
from wave_actors._config.trust import TRUST_MODES
from wave_actors._options import SessionOptions

__all__ = [
    "Plugins",
    "ServerEntries",
    "SessionParameters",
    "SessionSources",
    "load_together",
    "session_parameters",
]

logger = logging.getLogger(__name__)

ServerEntries = Mapping[str, Mapping[str, object]]
"""Server entries by name, as in a configuration file's ``mcpServers`` object (R-CFG-2)."""

Plugins = tuple[tuple[str, ServerEntries], ...]
"""``(plugin_name, entries)`` sources, the lowest precedence (R-CFG-1)."""


@attrs.frozen
class SessionParameters:
    """Everything a session is created from; its configuration is reloaded from the same on reconfigure.

    :param session_id: unique within the owner.
    :param workdir: the project directory (its ``.mcp.json`` is a source),
        resolved once, when the session was created.
    :param home: the user directory holding ``mcp.json`` (``None``: ``~/.wave``).
    :param constructor: constructor entries, the highest-precedence source (R-CFG-1).
    :param plugins: ``(plugin_name, entries)`` pairs, the lowest-precedence source.
    :param trust: ``"approved"`` loads project entries only if approved (R-CFG-10).
    :param options: dial, reconnect and reclamation settings.
    """

    session_id: str
    workdir: Path
    home: Path | None
    constructor: ServerEntries | None
    plugins: tuple[tuple[str, ServerEntries], ...]
    trust: TrustMode
    options: SessionOptions

    def read_files(self, *, trust: bool | None = None) -> ConfigFiles:
        """Read the workdir's files, as they are now (blocking: call it in a worker thread).

        :param trust: read what approves too; default: when this session's trust mode needs it.
        """
        return read_config_files(
            self.workdir, home=self.home, trust=self.trust == "approved" if trust is None else trust
        )

    def merged(self, files: ConfigFiles) -> LoadedConfig:
        """This session's configuration: its own sources merged over ``files`` (R-CFG-1, R-CFG-10)."""
        return merge_config(files, constructor=self.constructor, plugins=self.plugins, trust=self.trust)

    async def load(self) -> LoadedConfig:
        """Load the configuration in a worker thread, so a large file never stalls other sessions (R-CFG-11)."""
        return await trio.to_thread.run_sync(lambda: self.merged(self.read_files()))

    @property
    def tool_cache_directory(self) -> Path:
        """``<home>/mcp-tools-cache``, the tool snapshot cache (R-CACHE-1)."""
        return cache_directory(self.home)

    async def load_with_tool_cache(self) -> tuple[LoadedConfig, ToolCache]:
        """Load the configuration and read its servers' tool snapshots, in one worker thread (R-CFG-11, R-CACHE-3).

        Only the snapshots of the servers configured now are read (R-CACHE-6).
        Reading the cache never fails: an unusable cache is an empty one.
        """

        def load() -> tuple[LoadedConfig, ToolCache]:
            loaded = self.merged(self.read_files())
            keys = [(config.name, config.fingerprint) for config in loaded.servers.values()]
            return loaded, read_cache(self.tool_cache_directory, workdir=loaded.workdir, keys=keys, shared=True)

        return await trio.to_thread.run_sync(load)


@final
class SessionSources:
    """A live session's configuration sources, reloadable, and the diagnostics of their last load (R-CFG-4).

    Shared by the session (its id, workdir, options and diagnostics) and its
    roster (which loads the sources again on ``reconfigure`` and on a
    project's ``reconcile``, R-STORE-5, R-SCOPE-3).

    :param parameters: what the session was created from.
    """

    __slots__ = ("diagnostics", "parameters")

    def __init__(self, parameters: SessionParameters) -> None:
        self.parameters = parameters
        self.diagnostics: tuple[Diagnostic, ...] = ()

    def replace(self, *, constructor: ServerEntries | None = None, plugins: Plugins | None = None) -> None:
        """Take new constructor entries or plugin sources for the next load; ``None`` keeps the current ones."""
        if constructor is not None:
            self.parameters = attrs.evolve(self.parameters, constructor=constructor)
        if plugins is not None:
            self.parameters = attrs.evolve(self.parameters, plugins=plugins)

    async def load(self, plugins: Plugins | None = None) -> LoadedConfig:
        """Load the configuration again (R-CFG-11), with new plugin sources if given (kept for later loads)."""
        self.replace(plugins=plugins)
        return self.note(await self.parameters.load())

    async def load_with_tool_cache(self) -> tuple[LoadedConfig, ToolCache]:
        """Load the configuration and read the workdir's tool snapshots, once, as the session is created."""
        loaded, tool_cache = await self.parameters.load_with_tool_cache()
        return self.note(loaded), tool_cache

    def note(self, loaded: LoadedConfig) -> LoadedConfig:
        """Keep (and log) what a load of these sources said; returns ``loaded``."""
        self.diagnostics = loaded.diagnostics
        for diagnostic in loaded.diagnostics:
            logger.log(logging.WARNING if diagnostic.severity is Severity.ERROR else logging.INFO, "%s", diagnostic)
        return loaded


async def load_together(sources: Sequence[SessionSources], plugins: Plugins | None = None) -> list[LoadedConfig]:
    """Load sessions of one workdir over *one* reading of its files, in one worker thread (R-SCOPE-3, R-CFG-11).

    A project's sessions reloaded together never disagree because a file
    changed between two readings: each merges its own sources (constructor
    entries, plugins, trust mode) over the same files.

    :param sources: the sessions' sources.
    :param plugins: new plugin sources for every one of them (kept for later loads); ``None`` keeps each one's own.
    :returns: each session's configuration, in the order of ``sources``.
    """
    for session in sources:
        session.replace(plugins=plugins)
    parameters = [session.parameters for session in sources]
    trust = any(each.trust == "approved" for each in parameters)

    def load() -> list[LoadedConfig]:
        readings: dict[tuple[Path, Path | None], ConfigFiles] = {}
        loads: list[LoadedConfig] = []
        for each in parameters:
            key = (each.workdir, each.home)
            files = readings.get(key)
            if files is None:
                files = readings[key] = each.read_files(trust=trust)
            loads.append(each.merged(files))
        return loads

    loaded = await trio.to_thread.run_sync(load)
    return [session.note(each) for session, each in zip(sources, loaded, strict=True)]


async def session_parameters(
    *,
    workdir: Path | str,
    home: Path | str | None,
    mcp_servers: ServerEntries | None,
    plugins: Iterable[tuple[str, ServerEntries]],
    trust: TrustMode,
    options: SessionOptions,
    session_id: str | None = None,
    client_info: tuple[str, str] | None = None,
    credentials: Credentials | None = None,
) -> SessionParameters:
    """The parameters of a new session, from the arguments of ``create_session`` / ``open_session``.

    The workdir is resolved here, once, in a worker thread, and kept: the
    session's project is the directory it named when it was created.

    :param client_info: the ``(name, version)`` the session's servers are told,
        unless ``options`` name their own (``options.transport.client_info``).
    :param credentials: where OAuth logins are kept (R-AUTH-3), unless
        ``options`` name their own (``options.credentials``).
    :raises ConfigError: ``workdir`` does not exist or is not a directory.
    :raises ValueError: an unknown ``trust`` mode.
    :raises TypeError: ``client_info`` is not a pair of non-empty strings.
    """
    if trust not in TRUST_MODES:
        raise ValueError(f"trust must be one of {TRUST_MODES}, got {trust!r}")
    if client_info is not None and options.transport.client_info is None:
        options = attrs.evolve(options, transport=attrs.evolve(options.transport, client_info=client_info))
    if credentials is not None and options.credentials is None:
        options = attrs.evolve(options, credentials=credentials)
    resolved = await trio.to_thread.run_sync(resolve_existing_workdir, workdir)
    return SessionParameters(
        session_id=session_id or uuid.uuid4().hex[:12],
        workdir=resolved,
        home=Path(home) if home is not None else None,
        constructor=mcp_servers,
        plugins=tuple(plugins),
        trust=trust,
        options=options,
    )
