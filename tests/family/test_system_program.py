"""The programs a spawn runs besides the server are the system's own, never the host's ``PATH``'s (R-KILL-7).

``setpriv`` sees every server's command line and environment, tokens
included. A ``setpriv`` planted in a directory early on the host's ``PATH``
(``~/.local/bin``, ``node_modules/.bin``, ``.``) must never run.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from wave_actors._family.parent_death import find_setpriv, parent_death_signal_available
from wave_actors._family.system_program import trusted_system_program
from wave_actors.testing import fault_server_entry

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="setpriv is util-linux's")


def plant_setpriv(directory: Path, marker: Path) -> None:
    """A ``setpriv`` that would note it ran (and what it saw), then pass everything on to the real one."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "setpriv"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexec /usr/bin/setpriv "$@"\n')
    shim.chmod(0o755)


def test_a_setpriv_planted_on_the_path_is_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    plant_setpriv(tmp_path / "bin", marker)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    found = find_setpriv()

    assert not marker.exists()
    assert found is None or (os.path.dirname(found) in {"/usr/bin", "/bin", "/usr/sbin", "/sbin"})


@pytest.mark.skipif(not parent_death_signal_available(), reason="servers get no parent-death signal here")
def test_a_server_spawned_by_a_host_whose_path_starts_with_a_planted_setpriv_never_passes_through_it(
    tmp_path: Path,
) -> None:
    # The attack end to end: a fresh process (its spawner looks for setpriv once) dials a server with a token.
    marker = tmp_path / "ran"
    plant_setpriv(tmp_path / "bin", marker)
    home, workdir = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    workdir.mkdir()
    entry = {**fault_server_entry(), "env": {"API_TOKEN": "s3cr3t-token"}}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"echo": entry}}))
    environment = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}

    completed = subprocess.run(
        [sys.executable, "-m", "wave_actors", "tools", "echo", "--home", str(home)],
        cwd=workdir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert "mcp__echo__echo" in completed.stdout
    assert not marker.exists(), marker.read_text()


def system_like(root: Path, *, file_mode: int = 0o755, directory_mode: int = 0o755, owner: int = 0) -> Path:
    """``root/bin/tool``: a directory and an executable with the given modes and owner."""
    directory = root / "bin"
    directory.mkdir(parents=True)
    tool = directory / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(file_mode)
    directory.chmod(directory_mode)
    os.chown(tool, owner, -1)
    return tool


def root_holds_alone(directory: Path) -> bool:
    status = directory.stat()
    shut = not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or bool(status.st_mode & stat.S_ISVTX)
    return status.st_uid == 0 and shut


@pytest.mark.skipif(os.geteuid() != 0, reason="making root's files needs root")
@pytest.mark.parametrize(
    ("file_mode", "directory_mode", "owner"),
    [
        (0o775, 0o755, 0),  # its group may replace its content
        (0o757, 0o755, 0),  # anyone may
        (0o755, 0o777, 0),  # anyone may put another file in its place
        (0o755, 0o755, 1000),  # a user's own file
        (0o644, 0o755, 0),  # not executable
    ],
)
def test_a_program_someone_else_could_have_written_is_refused(
    tmp_path: Path, file_mode: int, directory_mode: int, owner: int
) -> None:
    tmp_path.chmod(0o755)
    tool = system_like(tmp_path, file_mode=file_mode, directory_mode=directory_mode, owner=owner)
    assert trusted_system_program("tool", [str(tool.parent)]) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="making root's files needs root")
def test_a_program_only_root_could_have_written_is_found_by_its_real_path(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    if any(not root_holds_alone(path) for path in tmp_path.parents):
        pytest.skip(f"{tmp_path} lies under a directory root does not hold alone")
    tool = system_like(tmp_path)
    (tmp_path / "link").symlink_to(tool.parent)
    assert trusted_system_program("tool", ["relative/bin", str(tmp_path / "link")]) == str(tool)
    assert trusted_system_program("missing", [str(tool.parent)]) is None
