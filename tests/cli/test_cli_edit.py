"""``wave-actors add`` and ``wave-actors remove``: edit the user or project file from the command line (R-STORE, R-CLI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, write_servers

from wave_actors import load_config


def servers_in(path: Path) -> dict[str, object]:
    return json.loads(path.read_text(encoding="utf-8"))["mcpServers"]


@pytest.fixture
def add(run_cli: RunCli, home: Path) -> RunCli:
    """``wave-actors add ARGS --home HOME -- COMMAND``: the fixture's ``--home`` must come before ``--``."""

    def run(*arguments: str, command: tuple[str, ...] = ()) -> object:
        tail = ("--", *command) if command else ()
        return run_cli("add", *arguments, "--home", str(home), *tail, with_home=False)

    return run


def test_add_writes_a_stdio_server_after_double_dash_to_the_user_file(add: RunCli, home: Path) -> None:
    completed = add("files", "-e", "ROOT=${HOME}/srv", command=("python3", "-m", "files", "--verbose"))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == f"added server 'files': {home / 'mcp.json'} (user file)\n"
    assert servers_in(home / "mcp.json")["files"] == {
        "command": "python3",
        "args": ["-m", "files", "--verbose"],
        "env": {"ROOT": "${HOME}/srv"},  # stored literally
    }
    assert list(servers_in(home / "mcp.json")) == ["echo", "off", "files"]  # the others are kept


def test_add_writes_a_remote_server_to_the_project_file(add: RunCli, workdir: Path) -> None:
    completed = add(
        "docs", "--scope", "project", "--url", "https://docs.example/sse", "-t", "sse",
        "-H", "Authorization: Bearer ${DOCS_TOKEN}", "--tool-timeout-ms", "120000", "--json",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["action"] == "added" and document["scope"] == "project"
    assert document["file"] == str(workdir.resolve() / ".mcp.json")
    assert servers_in(workdir / ".mcp.json") == {
        "docs": {
            "type": "sse",
            "url": "https://docs.example/sse",
            "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
            "tool_timeout_ms": 120000,
        }
    }
    assert load_config(workdir, environ={}).servers["docs"].type == "sse"


def test_add_never_prints_a_secret(add: RunCli, home: Path) -> None:
    for arguments, command in (
        (("a", "-e", "TOKEN=s3cr3t-env"), ("server",)),
        (("b", "--url", "https://x.example/mcp?key=s3cr3t-query", "-H", "X-Key: s3cr3t-header", "--json"), ()),
        (("c", "-H", "s3cr3t-no-name", "--url", "https://x.example/mcp"), ()),
        (("d", "--url", "https://x.example/mcp", "-e", "TOKEN=s3cr3t-env"), ()),
    ):
        completed = add(*arguments, command=command)
        assert "s3cr3t" not in completed.stdout + completed.stderr, arguments
    assert set(servers_in(home / "mcp.json")) == {"echo", "off", "a", "b"}


@pytest.mark.parametrize(
    ("arguments", "command", "named"),
    [
        (("-e", "TOKEN=s3cr3t-env", "-e", "ROOT=${HOME}"), ("server",), "env TOKEN"),
        (("--url", "https://x.example/mcp", "-H", "Authorization: Bearer s3cr3t-header"), (), "header Authorization"),
        (("--url", "https://x.example/mcp?api_key=s3cr3t-query"), (), "url query api_key"),
    ],
)
def test_a_literal_secret_for_the_project_file_needs_force(
    add: RunCli, workdir: Path, arguments: tuple[str, ...], command: tuple[str, ...], named: str
) -> None:
    # R-STORE-6: the project file is the repository's, shared with everyone who has it.
    refused = add("x", "--scope", "project", *arguments, command=command)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert named in refused.stderr and "${VAR}" in refused.stderr and "--force" in refused.stderr
    assert "s3cr3t" not in refused.stdout + refused.stderr and "ROOT" not in refused.stderr
    assert not (workdir / ".mcp.json").exists()
    forced = add("x", "--scope", "project", "--force", *arguments, command=command)
    assert forced.returncode == 0, forced.stderr
    assert f"warning: {workdir.resolve() / '.mcp.json'}" in forced.stderr and named in forced.stderr
    assert "s3cr3t" not in forced.stdout + forced.stderr
    assert "x" in servers_in(workdir / ".mcp.json")


def test_placeholders_and_the_user_file_need_no_force(add: RunCli, home: Path, workdir: Path) -> None:
    placeholders = add("p", "--scope", "project", "-e", "TOKEN=${TOKEN}", command=("server",))
    assert placeholders.returncode == 0 and placeholders.stderr == ""
    user = add("u", "-e", "TOKEN=s3cr3t-env", command=("server",))
    assert user.returncode == 0 and user.stderr == ""
    assert "p" in servers_in(workdir / ".mcp.json") and "u" in servers_in(home / "mcp.json")


def test_a_project_file_linked_to_the_user_file_is_not_edited_as_the_project(
    run_cli: RunCli, add: RunCli, home: Path, workdir: Path
) -> None:
    # R-STORE-6: --scope project never rewrites the user's own file through a link the repository holds.
    (workdir / ".mcp.json").symlink_to(home / "mcp.json")
    before = (home / "mcp.json").read_bytes()
    removed = run_cli("remove", "echo", "--scope", "project")
    added = add("x", "--scope", "project", command=("server",))
    for completed in (removed, added):
        assert completed.returncode == 2 and "outside the project" in completed.stderr
    assert (home / "mcp.json").read_bytes() == before


def test_adding_an_existing_name_needs_replace(add: RunCli, home: Path) -> None:
    before = (home / "mcp.json").read_bytes()
    refused = add("echo", command=("other",))
    assert refused.returncode == 2
    assert "exists already" in refused.stderr and "--replace" in refused.stderr
    assert (home / "mcp.json").read_bytes() == before
    replaced = add("echo", "--replace", command=("other",))
    assert replaced.returncode == 0, replaced.stderr
    assert replaced.stdout.startswith("replaced server 'echo'")
    assert servers_in(home / "mcp.json")["echo"] == {"command": "other"}


@pytest.mark.parametrize(
    ("arguments", "command", "cause"),
    [
        (("x",), (), "either the command"),
        (("x", "--url", "https://x.example"), ("cmd",), "either the command"),
        (("x", "--url", "https://x.example", "-e", "A=1"), (), "does not use 'env'"),
        (("x", "--tool-timeout-ms", "0"), ("cmd",), "tool_timeout_ms"),
        (("x", "-e", "NO_EQUALS"), ("cmd",), "--env number 1: expected NAME=VALUE"),
        (("x", "--scope", "plugin"), ("cmd",), "invalid choice"),
    ],
)
def test_an_add_that_cannot_be_done_is_a_usage_error_and_writes_nothing(
    add: RunCli, home: Path, arguments: tuple[str, ...], command: tuple[str, ...], cause: str
) -> None:
    before = (home / "mcp.json").read_bytes()
    completed = add(*arguments, command=command)
    assert completed.returncode == 2
    assert cause in completed.stderr and completed.stderr.count("\n") == 1
    assert (home / "mcp.json").read_bytes() == before


def test_remove_finds_the_file_that_defines_the_server(run_cli: RunCli, home: Path, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"local": {"command": "local"}})
    completed = run_cli("remove", "local")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == f"removed server 'local': {workdir.resolve() / '.mcp.json'} (project file)\n"
    assert servers_in(workdir / ".mcp.json") == {}
    assert list(servers_in(home / "mcp.json")) == ["echo", "off"]


def test_a_name_in_both_files_needs_a_scope(run_cli: RunCli, home: Path, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"echo": {"command": "local"}})
    ambiguous = run_cli("remove", "echo")
    assert ambiguous.returncode == 2 and "--scope" in ambiguous.stderr
    removed = run_cli("remove", "echo", "--scope", "user", "--json")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["file"] == str(home / "mcp.json")
    assert "echo" not in servers_in(home / "mcp.json") and "echo" in servers_in(workdir / ".mcp.json")


def test_removing_an_unknown_server_names_both_files(run_cli: RunCli, home: Path, workdir: Path) -> None:
    completed = run_cli("remove", "nope")
    assert completed.returncode == 2
    assert str(home / "mcp.json") in completed.stderr and ".mcp.json" in completed.stderr


def test_a_file_that_is_not_valid_json_is_never_rewritten(run_cli: RunCli, workdir: Path) -> None:
    (workdir / ".mcp.json").write_text('{"mcpServers": {"a": ', encoding="utf-8")
    for arguments in (("remove", "a", "--scope", "project"), ("add", "b", "--scope", "project", "--url", "https://b")):
        completed = run_cli(*arguments)
        assert completed.returncode == 2
        assert "not valid JSON" in completed.stderr and ".mcp.json" in completed.stderr
        assert (workdir / ".mcp.json").read_text(encoding="utf-8") == '{"mcpServers": {"a": '


def test_a_file_that_cannot_be_written_is_a_failure_and_stays_as_it_was(home: Path, workdir: Path) -> None:
    # Exit 1: the request was fine, the file system refused. As root, file permissions are enforced by
    # dropping the capabilities that bypass them.
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    before = (home / "mcp.json").read_bytes()
    os.chmod(home, 0o555)
    try:
        argv = [*prefix, *cli_command("remove", "echo", "--scope", "user", "--home", str(home))]
        completed = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=45, check=False)
    finally:
        os.chmod(home, 0o755)
    assert completed.returncode == 1, completed.stderr
    assert "Permission denied" in completed.stderr and str(home / "mcp.json") in completed.stderr
    assert (home / "mcp.json").read_bytes() == before
