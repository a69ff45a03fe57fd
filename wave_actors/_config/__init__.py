"""Configuration: sources, merging, ``${VAR}`` expansion, fingerprints, diagnostics (R-CFG).

:func:`load_config` is the entry point: it reads the constructor's entries,
``<workdir>/.mcp.json``, ``~/.wave/mcp.json`` and plugin entries, and returns a
:class:`LoadedConfig` whose diagnostics say what was skipped and why; it never
raises for what a file says (R-CFG-4). :func:`server_config` builds a single
entry and raises :class:`ConfigError` instead, for edits that must be valid
before they are written.

This package imports neither ``mcp`` nor ``trio``: listing servers must stay fast.
"""

from wave_actors._config.entry import server_config as server_config
from wave_actors._config.fingerprint import connection_fingerprint as connection_fingerprint
from wave_actors._config.loader import load_config as load_config
from wave_actors._config.model import (
    DEFAULT_TOOL_TIMEOUT_MS as DEFAULT_TOOL_TIMEOUT_MS,
    MAX_TOOL_TIMEOUT_MS as MAX_TOOL_TIMEOUT_MS,
    Diagnostic as Diagnostic,
    LoadedConfig as LoadedConfig,
    ServerConfig as ServerConfig,
    Severity as Severity,
    Source as Source,
    ToolOverride as ToolOverride,
    TransportType as TransportType,
)
from wave_actors._config.trust import TrustMode as TrustMode
from wave_actors._errors import ConfigError as ConfigError
