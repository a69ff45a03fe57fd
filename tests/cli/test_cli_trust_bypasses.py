"""Attacks on project trust through the real command, each proving the crafted command never ran (R-CFG-10, R-CLI).

Each crafted repository ships ``.wave/settings.local.json`` enabling every
server (``enable_all``), which approved itself when trust was decided by
whether git tracks that file. Its ``.mcp.json`` server is the fault server
with ``pid_file``: had it started, the marker file would exist. Every test
runs ``wave-actors tools SERVER --trust approved`` in the repository and
asserts the marker does not exist and the error says why: approvals live in
the user's home, where nothing inside the repository can write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import RunCli, write_servers

from wave_actors.testing import fault_server_entry

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(directory: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True, timeout=30)


def commit_everything(directory: Path) -> None:
    git(directory, "add", "-A")
    git(directory, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "ship it")


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where the crafted server would write its pid, had it started."""
    return tmp_path / "crafted-server-ran"


@pytest.fixture
def crafted(workdir: Path, marker: Path) -> Path:
    """A repository whose .mcp.json runs the crafted server and whose settings file enables everything."""
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry(pid_file=marker)})
    (workdir / ".wave").mkdir()
    (workdir / ".wave" / "settings.local.json").write_text(json.dumps({"mcp_json": {"enable_all": True}}))
    return workdir


def assert_refused_as_untrusted(completed: subprocess.CompletedProcess[str], workdir: Path, marker: Path) -> None:
    assert completed.returncode == 2, completed.stderr
    assert not marker.exists(), "the crafted server ran"
    assert "'docs' was not loaded" in completed.stderr
    assert "this folder is not trusted" in completed.stderr
    assert f"wave-actors trust {workdir.resolve()}" in completed.stderr


@needs_git
@pytest.mark.parametrize("worktree", [False, True], ids=["bare", "bare-with-core.worktree"])
def test_r_cfg_10_an_embedded_bare_repository_approves_nothing(
    run_cli: RunCli, crafted: Path, marker: Path, worktree: bool
) -> None:
    """Bypass 1: .wave is itself a committed bare repository whose empty index "does not track" the settings."""
    git(crafted / ".wave", "init", "-q", "--bare")
    for directory in ("objects", "refs"):  # git commits no empty directory: these make it a repository in a clone
        (crafted / ".wave" / directory / "keep").touch()
    if worktree:
        git(crafted / ".wave", "config", "core.worktree", "..")
    git(crafted, "init", "-q")
    commit_everything(crafted)
    clone = crafted.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(crafted), str(clone)], check=True, capture_output=True, timeout=30)
    assert (clone / ".wave" / "HEAD").exists() and (clone / ".wave" / "settings.local.json").exists()

    completed = run_cli("tools", "docs", "--trust", "approved", "--workdir", str(clone))

    assert_refused_as_untrusted(completed, clone, marker)


def test_r_cfg_10_a_folder_outside_any_git_work_tree_approves_nothing(
    run_cli: RunCli, crafted: Path, marker: Path
) -> None:
    """Bypass 2: a ZIP download, an sdist, a copied folder: no .git anywhere."""
    if any((parent / ".git").exists() for parent in crafted.parents):
        pytest.skip("the temporary directory is inside a git work tree")

    completed = run_cli("tools", "docs", "--trust", "approved")

    assert_refused_as_untrusted(completed, crafted, marker)


@needs_git
def test_r_cfg_10_a_clone_on_a_machine_without_git_approves_nothing(
    run_cli: RunCli, crafted: Path, marker: Path, tmp_path: Path
) -> None:
    """Bypass 2: git missing from PATH, where "cannot ask git" counted as "untracked"."""
    git(crafted, "init", "-q")
    commit_everything(crafted)
    empty = tmp_path / "no-git-here"
    empty.mkdir()

    completed = run_cli("tools", "docs", "--trust", "approved", env={"PATH": str(empty)})

    assert_refused_as_untrusted(completed, crafted, marker)


def test_r_cfg_10_an_archive_with_its_own_git_directory_approves_nothing(
    run_cli: RunCli, crafted: Path, marker: Path, tmp_path: Path
) -> None:
    """Bypass 2: an archive carrying a .git of its own choosing (an index that lists nothing, hooks, fsmonitor)."""
    git_directory = crafted / ".git"
    (git_directory / "objects").mkdir(parents=True)
    (git_directory / "refs" / "heads").mkdir(parents=True)
    (git_directory / "HEAD").write_text("ref: refs/heads/main\n")
    fsmonitor = tmp_path / "fsmonitor-ran"
    (git_directory / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = touch {fsmonitor}\n"
    )

    completed = run_cli("tools", "docs", "--trust", "approved")

    assert_refused_as_untrusted(completed, crafted, marker)
    assert not fsmonitor.exists()


def test_r_cfg_10_a_command_changed_after_approval_does_not_run(
    run_cli: RunCli, workdir: Path, marker: Path, home: Path
) -> None:
    """Bypass 3: an approval binds the entry's fingerprint; a pull that changes what it runs needs approval again."""
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry()})
    approved = run_cli("approve", "docs", "--yes")
    assert approved.returncode == 0, approved.stderr
    assert run_cli("call", "docs", "echo", "--args", '{"text": "before"}', "--trust", "approved").returncode == 0
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry(pid_file=marker)})  # "git pull"

    completed = run_cli("tools", "docs", "--trust", "approved")

    assert completed.returncode == 2
    assert not marker.exists(), "the changed server ran"
    assert "changed since approval: not loaded (args changed)" in completed.stderr
    assert "wave-actors approve docs" in completed.stderr
    listing = json.loads(run_cli("servers", "--json").stdout)["project_trust"]
    [docs] = listing["servers"]
    assert (docs["state"], docs["changed_fields"]) == ("changed", ["args"])
    assert docs["approved_fingerprint"] != docs["fingerprint"]


def test_r_cfg_10_nothing_inside_the_project_can_forge_an_approval(
    run_cli: RunCli, crafted: Path, marker: Path, home: Path
) -> None:
    """R-CFG-10: a repository shipping a record of approvals (at any place it controls) approves nothing."""
    forged = {"version": 1, "projects": {str(crafted.resolve()): {"trusted": True}}}
    for place in (crafted / "project-trust.json", crafted / ".wave" / "project-trust.json"):
        place.write_text(json.dumps(forged))
        place.chmod(0o600)

    completed = run_cli("tools", "docs", "--trust", "approved")

    assert_refused_as_untrusted(completed, crafted, marker)
    assert sorted(os.listdir(home)) == ["mcp.json"]  # a refusal records nothing
