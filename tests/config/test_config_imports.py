"""The configuration package stays light and synchronous (the CLI lists servers without dialing;
sessions load configuration in a worker thread, R-CFG-11)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import wave_actors._config


def test_config_does_not_import_the_mcp_sdk() -> None:
    # The package's __init__ brings trio (the runtime needs it); the SDK and HTTP stack wait for a dial.
    code = (
        "import sys, wave_actors._config; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx', 'httpx2')); "
        "print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_no_configuration_module_imports_trio_or_the_mcp_sdk() -> None:
    # R-CFG-11: loading runs in trio.to_thread.run_sync; nothing in it may touch the event loop,
    # and the package docstring says so.
    package = Path(wave_actors._config.__file__).parent
    found: dict[str, set[str]] = {}
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            tops = {name.split(".")[0] for name in names} & {"trio", "mcp", "anyio", "httpx", "httpx2"}
            if tops:
                found.setdefault(module.name, set()).update(tops)
    assert found == {}
    assert len(list(package.glob("*.py"))) >= 10  # the scan saw the package


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
        "MAX_FILE_BYTES",
        "TrustStore",
        "ApprovalState",
        "ProjectTrust",
        "ServerTrust",
        "redact_url",
    } <= set(dir(config))
