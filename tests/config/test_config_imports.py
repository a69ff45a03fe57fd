"""The configuration package stays light (the CLI lists servers without dialing)."""

from __future__ import annotations

import subprocess
import sys


def test_config_does_not_import_the_mcp_sdk() -> None:
    # The package's __init__ brings trio (the runtime needs it); the SDK and HTTP stack wait for a dial.
    code = (
        "import sys, wave_actors._config; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx', 'httpx2')); "
        "print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_public_surface() -> None:
    import wave_actors._config as config

    assert {
        "load_config",
        "server_config",
        "connection_fingerprint",
        "ServerConfig",
        "LoadedConfig",
        "Diagnostic",
        "Severity",
        "Source",
        "ToolOverride",
        "TransportType",
        "ConfigError",
        "TrustMode",
        "DEFAULT_TOOL_TIMEOUT_MS",
        "MAX_TOOL_TIMEOUT_MS",
    } <= set(dir(config))
