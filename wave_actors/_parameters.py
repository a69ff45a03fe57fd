"""What a session is made of: its id, where its configuration comes from, and its options."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs
import trio

from wave_actors._cache import ToolCache, cache_file, read_cache
from wave_actors._config import LoadedConfig, TrustMode, load_config
from wave_actors._options import SessionOptions

__all__ = ["ServerEntries", "SessionParameters", "session_parameters"]

ServerEntries = Mapping[str, Mapping[str, object]]
"""Server entries by name, as in a configuration file's ``mcpServers`` object (R-CFG-2)."""


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
    def tool_cache_file(self) -> Path:
        """``<home>/mcp-tools-cache.json``, the tool snapshot cache (R-CACHE-1)."""
        return cache_file(self.home)

    async def load_with_tool_cache(self) -> tuple[LoadedConfig, ToolCache]:
        """Load the configuration and read the workdir's tool snapshots, in one worker thread (R-CFG-11, R-CACHE-3).

        Reading the cache never fails: an unusable cache is an empty one.
        """

        def load() -> tuple[LoadedConfig, ToolCache]:
            loaded = load_config(
                self.workdir, home=self.home, constructor=self.constructor, plugins=self.plugins, trust=self.trust
            )
            return loaded, read_cache(self.tool_cache_file, workdir=loaded.workdir, shared=True)

        return await trio.to_thread.run_sync(load)


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
