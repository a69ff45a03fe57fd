"""Configuration: sources, merging, ``${VAR}`` expansion, fingerprints, trust, diagnostics (R-CFG).

:func:`load_config` is the entry point: it reads the constructor's entries,
``<workdir>/.mcp.json``, ``~/.wave/mcp.json`` and plugin entries, and returns a
:class:`LoadedConfig` whose diagnostics say what was skipped and why; it never
raises for what a file says (R-CFG-4). :func:`server_config` builds a single
entry and raises :class:`ConfigError` instead, for edits that must be valid
before they are written. :class:`TrustStore` records the user's trust in a
project and approvals of its servers in the user's home (R-CFG-10);
:func:`redact_url` is how anything that prints a configured URL keeps its
secrets out (R-CFG-12).

No module of this package imports ``mcp`` or ``trio``, and importing it does
no I/O, so listing servers stays fast (importing it still runs
``wave_actors/__init__.py``, which brings ``trio``). Loading is synchronous,
keeps no global mutable state and is safe in a worker thread
(``trio.to_thread.run_sync``), which is where an event loop should run it.
"""

from wave_actors._config.entry import server_config as server_config
from wave_actors._config.fingerprint import connection_fingerprint as connection_fingerprint
from wave_actors._config.loader import load_config as load_config
from wave_actors._config.model import (
    DEFAULT_TOOL_TIMEOUT_MS as DEFAULT_TOOL_TIMEOUT_MS,
    MAX_TOOL_TIMEOUT_MS as MAX_TOOL_TIMEOUT_MS,
    Diagnostic as Diagnostic,
    LoadedConfig as LoadedConfig,
    OAuthGrant as OAuthGrant,
    OAuthSettings as OAuthSettings,
    ServerConfig as ServerConfig,
    Severity as Severity,
    ShutdownGraces as ShutdownGraces,
    Source as Source,
    ToolOverride as ToolOverride,
    TransportType as TransportType,
)
from wave_actors._config.redact import redact_url as redact_url
from wave_actors._config.sources import MAX_FILE_BYTES as MAX_FILE_BYTES
from wave_actors._config.trust import (
    ApprovalState as ApprovalState,
    ProjectTrust as ProjectTrust,
    ServerTrust as ServerTrust,
    TrustMode as TrustMode,
)
from wave_actors._config.trust_store import TrustStore as TrustStore
from wave_actors._errors import ConfigError as ConfigError
