"""Configuration: sources, merging, ``${VAR}`` expansion, fingerprints, diagnostics."""

from wave_actors.config.model import (
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
from wave_actors.errors import ConfigError as ConfigError


def load_config(*args: object, **kwargs: object) -> LoadedConfig:  # placeholder until the loader lands
    raise NotImplementedError
