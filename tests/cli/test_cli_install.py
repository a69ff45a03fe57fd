"""The command as a user gets it: the built wheel installs into a clean virtual environment and runs (R-CLI).

``pip wheel .`` builds the distribution a user installs with ``pipx install .``
or ``pip install .``; a fresh ``python -m venv`` gets it and its
dependencies; then ``wave-actors`` runs from outside the checkout: its
version, a listing, and a dial of the installed fault server. Before the
install, the same interpreter running ``python -m wave_actors`` inside the
checkout says what to install instead of a ``ModuleNotFoundError`` traceback.

pip finds the dependencies where it is configured to: when that includes a
local index (``file://``), only the local ones are used, so the test needs no
network where the suite's own dependencies came from a local mirror.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from cli_support import write_servers

ROOT = Path(__file__).resolve().parents[2]


def pip_sources() -> list[str]:
    """pip options that keep it to its configured local index and links, or none if it has no local index."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    settings: dict[str, str] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        settings[key.rpartition(".")[2]] = value.strip("'\"")
    for name in ("index-url", "extra-index-url", "find-links"):
        settings[name] = os.environ.get("PIP_" + name.upper().replace("-", "_"), settings.get(name, ""))
    indexes = [url for name in ("index-url", "extra-index-url") for url in settings[name].split()]
    local = [url for url in indexes if url.startswith("file:")]
    if not local:
        return []
    options = ["--index-url", local[0]]
    for url in local[1:]:
        options += ["--extra-index-url", url]
    for links in settings["find-links"].split():
        options += ["--find-links", links]
    return options


def clean_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(argv: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=clean_environment(), capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_built_wheel_installs_into_a_clean_venv_and_runs(tmp_path: Path) -> None:
    sources = pip_sources()
    wheels = tmp_path / "wheels"
    built = run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(wheels), *sources], tmp_path, 240
    )
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("wave_actors-*.whl")
    venv = tmp_path / "venv"
    created = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"

    # Before the install: the checkout's package, run by an interpreter without its dependencies.
    bare = run([str(python), "-m", "wave_actors", "--version"], ROOT)
    assert bare.returncode == 1
    [line] = bare.stderr.splitlines()
    assert line.startswith("wave-actors: error: this Python does not have what wave-actors needs: trio")
    assert "pipx install ." in line and "Traceback" not in bare.stderr

    installed = run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", str(wheel), *sources], tmp_path, 300
    )
    assert installed.returncode == 0, installed.stderr
    command = str(venv / "bin" / "wave-actors")

    shown = run([command, "--version"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"wave-actors {version('wave-actors')}\n"

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    server = {"command": str(python), "args": ["-m", "wave_actors.testing.fault_server"]}
    write_servers(project / ".mcp.json", {"echo": server})
    listed = run([command, "servers", "--workdir", str(project), "--home", str(home)], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("NAME ")
    dialed = run(
        [command, "call", "echo", "echo", "--args", '{"text": "installed"}', "--workdir", str(project)], tmp_path
    )
    assert dialed.returncode == 0, dialed.stderr
    assert dialed.stdout == "installed\n"
