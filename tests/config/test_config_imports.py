"""The configuration package stays light (the CLI lists servers without dialing)."""

from __future__ import annotations

import subprocess
import sys


def test_config_imports_neither_mcp_nor_trio() -> None:
    code = (
        "import sys, wave_actors.config; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'trio', 'anyio', 'httpx')); "
        "print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_public_surface() -> None:
    import wave_actors.config as config

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
