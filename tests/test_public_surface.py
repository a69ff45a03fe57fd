"""The public surface is pinned: what DESIGN.md promises is importable, documented and typed."""

from __future__ import annotations

import inspect
import subprocess
import sys

import supervisors
import wave_actors

DESIGN_NAMES = {
    "Host",
    "Session",
    "open_session",
    "ServerState",
    "ServerStatus",
    "ToolInfo",
    "ServerConfig",
    "load_config",
    "LoadMode",
    "WaveActorsError",
    "ServerUnavailable",
    "ToolTimeout",
    "UnknownTool",
    "ConfigError",
}


def public_names(module: object) -> set[str]:
    return {name for name in vars(module) if not name.startswith("_") and not inspect.ismodule(getattr(module, name))}


def test_design_names_are_exported() -> None:
    assert DESIGN_NAMES <= public_names(wave_actors)


def test_every_public_name_is_documented() -> None:
    for module in (wave_actors, supervisors):
        for name in public_names(module):
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_every_error_is_a_wave_actors_error() -> None:
    for name in public_names(wave_actors):
        value = getattr(wave_actors, name)
        if inspect.isclass(value) and issubclass(value, Exception):
            assert issubclass(value, wave_actors.WaveActorsError), name


def test_importing_the_package_does_not_import_the_mcp_sdk() -> None:
    # Listing configuration must stay fast: the SDK costs over a second to import.
    code = "import sys, wave_actors; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_supervisors_does_not_import_wave_actors() -> None:
    code = "import sys, supervisors; print(any(m.startswith('wave_actors') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
