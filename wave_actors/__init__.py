"""wave-actors: supervised, leak-proof MCP server connections for agent hosts.

Everything public is re-exported here; the submodules are private.
"""

from wave_actors.config import (
    ConfigError as ConfigError,
    Diagnostic as Diagnostic,
    LoadedConfig as LoadedConfig,
    ServerConfig as ServerConfig,
    Source as Source,
    load_config as load_config,
)
from wave_actors.errors import (
    DialError as DialError,
    ServerDisabled as ServerDisabled,
    ServerUnavailable as ServerUnavailable,
    ToolTimeout as ToolTimeout,
    UnknownServer as UnknownServer,
    UnknownTool as UnknownTool,
    WaveActorsError as WaveActorsError,
)
