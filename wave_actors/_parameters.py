"""What a session is made of: its id, where its configuration comes from, and its options.

:class:`SessionParameters` is the frozen record; :class:`SessionSources`
holds a live session's current one, loads it (in a worker thread), and keeps
what the last load said.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import final

import attrs
import trio

from wave_actors._cache import ToolCache, cache_directory, read_cache
from wave_actors._config import Diagnostic, LoadedConfig, Severity, TrustMode, load_config
from wave_actors._options import SessionOptions

__all__ = ["Plugins", "ServerEntries", "SessionParameters", "SessionSources", "session_parameters"]

logger = logging.getLogger(__name__)

ServerEntries = Mapping[str, Mapping[str, object]]
"""Server entries by name, as in a configuration file's ``mcpServers`` object (R-CFG-2)."""

Plugins = tuple[tuple[str, ServerEntries], ...]
"""``(plugin_name, entries)`` sources, the lowest precedence (R-CFG-1)."""


@attrs.frozen
class SessionParameters:
    """Everything a session is created from; its configuration is reloaded from the same on reconfigure.

    :param session_id: unique within the owner.
    :param workdir: the project directory (its ``.mcp.json`` is a source).
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

    async def load(self) -> LoadedConfig:
        """Load the configuration in a worker thread, so a large file never stalls other sessions (R-CFG-11)."""
        load = functools.partial(
            load_config,
            self.workdir,
            home=self.home,
            constructor=self.constructor,
            plugins=self.plugins,
            trust=self.trust,
        )
        return await trio.to_thread.run_sync(load)

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
            loaded = load_config(
                self.workdir, home=self.home, constructor=self.constructor, plugins=self.plugins, trust=self.trust
            )
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
        return self._note(await self.parameters.load())

    async def load_with_tool_cache(self) -> tuple[LoadedConfig, ToolCache]:
        """Load the configuration and read the workdir's tool snapshots, once, as the session is created."""
        loaded, tool_cache = await self.parameters.load_with_tool_cache()
        return self._note(loaded), tool_cache

    def _note(self, loaded: LoadedConfig) -> LoadedConfig:
        self.diagnostics = loaded.diagnostics
        for diagnostic in loaded.diagnostics:
            logger.log(logging.WARNING if diagnostic.severity is Severity.ERROR else logging.INFO, "%s", diagnostic)
        return loaded


def session_parameters(
    *,
    workdir: Path | str,
    home: Path | str | None,
    mcp_servers: ServerEntries | None,
    plugins: Iterable[tuple[str, ServerEntries]],
    trust: TrustMode,
    options: SessionOptions,
    session_id: str | None = None,
    client_info: tuple[str, str] | None = None,
) -> SessionParameters:
    """The parameters of a new session, from the arguments of ``create_session`` / ``open_session``.

    :param client_info: the ``(name, version)`` the session's servers are told,
        unless ``options`` name their own (``options.transport.client_info``).
    :raises TypeError: ``client_info`` is not a pair of non-empty strings.
    """
    if client_info is not None and options.transport.client_info is None:
        options = attrs.evolve(options, transport=attrs.evolve(options.transport, client_info=client_info))
    return SessionParameters(
        session_id=session_id or uuid.uuid4().hex[:12],
        workdir=Path(workdir),
        home=Path(home) if home is not None else None,
        constructor=mcp_servers,
        plugins=tuple(plugins),
        trust=trust,
        options=options,
    )
