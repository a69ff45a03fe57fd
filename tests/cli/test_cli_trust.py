"""Project trust on the command line (R-CLI, R-CFG-10).

``--trust approved`` loads a project (``.mcp.json``) entry only when the
approvals record of ``--home`` approves it at its current fingerprint;
``all``, the default as in the library, loads every one. ``trust``,
``untrust``, ``approve`` and ``revoke`` record the user's decisions there.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, write_servers

from wave_actors.testing import fault_server_entry


@pytest.fixture
def project(workdir: Path, run_cli: RunCli) -> Path:
    """A project file with ``approved`` and ``stranger``; only ``approved`` is approved (by the command)."""
    write_servers(workdir / ".mcp.json", {"approved": fault_server_entry(), "stranger": fault_server_entry()})
    completed = run_cli("approve", "approved", "--yes")
    assert completed.returncode == 0, completed.stderr
    return workdir


def _listed(completed: subprocess.CompletedProcess[str]) -> set[str]:
    assert completed.returncode == 0, completed.stderr
    return {server["name"] for server in json.loads(completed.stdout)["servers"]}


def test_servers_loads_every_project_entry_by_default(run_cli: RunCli, project: Path) -> None:
    assert _listed(run_cli("servers", "--json")) == {"approved", "stranger", "echo", "off"}
    assert _listed(run_cli("servers", "--json", "--trust", "all")) == {"approved", "stranger", "echo", "off"}


def test_servers_with_trust_approved_lists_approved_project_entries_only(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("servers", "--json", "--trust", "approved")

    assert _listed(completed) == {"approved", "echo", "off"}
    [diagnostic] = [d for d in json.loads(completed.stdout)["diagnostics"] if d["server"] == "stranger"]
    assert "not approved" in diagnostic["message"]


def test_servers_shows_each_project_entrys_trust_state_in_either_mode(run_cli: RunCli, project: Path) -> None:
    # R-CFG-10: a settings page (or a person) sees what approved mode would load, and why not.
    document = json.loads(run_cli("servers", "--json").stdout)["project_trust"]
    assert document["trusted"] is False
    states = {server["name"]: server["state"] for server in document["servers"]}
    assert states == {"approved": "approved", "stranger": "pending"}
    text = run_cli("servers").stdout
    assert "project servers in --trust approved (folder not trusted" in text
    assert any(line.split()[:2] == ["stranger", "pending"] for line in text.splitlines())


def test_tools_with_trust_approved_refuses_an_unapproved_project_server(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("tools", "stranger", "--trust", "approved")

    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert "'stranger'" in line and "not approved" in line and "wave-actors approve stranger" in line


def test_call_with_trust_approved_reaches_an_approved_project_server(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("call", "approved", "echo", "--args", '{"text": "trusted"}', "--trust", "approved")

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "trusted\n"


def test_watch_with_trust_approved_connects_approved_servers_only(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("watch", "--json", "--duration", "3", "--trust", "approved")

    assert completed.returncode == 0, completed.stderr
    last = json.loads(completed.stdout.splitlines()[-1])
    assert {server["name"] for server in last["servers"]} == {"approved", "echo", "off"}


def test_an_unknown_trust_mode_is_a_usage_error(run_cli: RunCli) -> None:
    completed = run_cli("servers", "--trust", "some")

    assert completed.returncode == 2
    [line] = completed.stderr.splitlines()
    assert "--trust" in line and "approved" in line


def test_help_says_what_approved_means_and_why_all_is_the_default() -> None:
    for command in ("servers", "tools", "call", "watch"):
        usage = " ".join(
            subprocess.run(
                cli_command(command, "--help"), capture_output=True, text=True, timeout=30, check=True
            ).stdout.split()
        )
        assert "--trust {all,approved}" in usage, command
        assert "approvals record in --home" in usage and "the default, as in the library" in usage, command


# approve and revoke ---------------------------------------------------------------------


def test_approve_shows_what_runs_and_records_nothing_unless_the_answer_is_yes(
    run_cli: RunCli, workdir: Path, home: Path
) -> None:
    # R-CFG-10, R-CFG-12: the command, its arguments and the names of its variables; never a value.
    entry = {**fault_server_entry(), "env": {"API_TOKEN": "s3cret-value"}}
    write_servers(workdir / ".mcp.json", {"docs": entry})
    for answer in ("", "n\n", "whatever\n"):
        declined = run_cli("approve", "docs", answer=answer)
        assert declined.returncode == 1
        assert "nothing recorded" in declined.stderr
        assert not (home / "project-trust.json").exists()
    completed = run_cli("approve", "docs", answer="y\n")

    assert completed.returncode == 0, completed.stderr
    review = completed.stdout
    assert f"command: {entry['command']}" in review
    assert "args: " in review and "env: API_TOKEN (values not shown)" in review
    assert "s3cret-value" not in review + completed.stderr
    assert "Approve 1 server(s)" in review and "approved 'docs' at " in review
    record = home / "project-trust.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert "s3cret-value" not in record.read_text(encoding="utf-8")
    assert not (workdir / ".wave").exists()


def test_approve_with_json_needs_yes(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry()})

    completed = run_cli("approve", "docs", "--json")

    assert completed.returncode == 2
    assert "--json needs --yes" in completed.stderr


def test_approve_with_json_reports_every_entrys_state(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry(), "other": fault_server_entry()})

    completed = run_cli("approve", "docs", "--json", "--yes")

    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["action"] == "approve" and document["trusted"] is False
    [docs, other] = document["servers"]
    assert (docs["name"], docs["state"]) == ("docs", "approved")
    assert docs["approved_fingerprint"] == docs["fingerprint"]
    assert (other["name"], other["state"], other["approved_fingerprint"]) == ("other", "pending", None)


@pytest.mark.parametrize(
    ("command", "servers", "reason"),
    [
        ("approve", {"docs": fault_server_entry()}, "cannot approve 'nope'"),
        ("revoke", {"docs": fault_server_entry()}, "cannot revoke 'nope'"),
    ],
)
def test_deciding_about_an_unknown_server_is_a_usage_error(
    run_cli: RunCli, workdir: Path, home: Path, command: str, servers: dict[str, object], reason: str
) -> None:
    write_servers(workdir / ".mcp.json", servers)

    completed = run_cli(command, "nope", "--yes") if command == "approve" else run_cli(command, "nope")

    assert completed.returncode == 2
    assert reason in completed.stderr
    assert not (home / "project-trust.json").exists()


def test_approve_refuses_an_invalid_entry(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"docs": {"command": 5}})

    completed = run_cli("approve", "docs", "--yes")

    assert completed.returncode == 2
    assert "is invalid" in completed.stderr


def test_revoke_takes_an_approval_back(run_cli: RunCli, project: Path) -> None:
    completed = run_cli("revoke", "approved")

    assert completed.returncode == 0, completed.stderr
    assert "revoked 'approved'" in completed.stdout
    assert _listed(run_cli("servers", "--json", "--trust", "approved")) == {"echo", "off"}


# trust and untrust ----------------------------------------------------------------------


def test_trust_shows_what_the_folders_settings_approve_then_they_load(
    run_cli: RunCli, workdir: Path, home: Path
) -> None:
    write_servers(workdir / ".mcp.json", {"wished": fault_server_entry(), "other": fault_server_entry()})
    (workdir / ".wave").mkdir()
    (workdir / ".wave" / "settings.local.json").write_text(json.dumps({"mcp_json": {"enabled": ["wished"]}}))
    assert _listed(run_cli("servers", "--json", "--trust", "approved")) == {"echo", "off"}
    assert run_cli("trust", answer="n\n").returncode == 1

    completed = run_cli("trust", answer="yes\n")

    assert completed.returncode == 0, completed.stderr
    assert "approves these 1 server(s) now" in completed.stdout
    assert "wished (stdio)" in completed.stdout and "other (stdio)" not in completed.stdout
    assert f"trusted {workdir.resolve()}" in completed.stdout
    assert _listed(run_cli("servers", "--json", "--trust", "approved")) == {"wished", "echo", "off"}
    forgot = run_cli("untrust", "--json")
    assert forgot.returncode == 0, forgot.stderr
    assert json.loads(forgot.stdout)["trusted"] is False
    assert _listed(run_cli("servers", "--json", "--trust", "approved")) == {"echo", "off"}


def test_trust_of_a_missing_directory_is_a_usage_error(run_cli: RunCli, workdir: Path) -> None:
    completed = run_cli("trust", str(workdir / "missing"), "--yes")

    assert completed.returncode == 2
    assert "not a directory" in completed.stderr


def test_an_unusable_record_is_a_usage_error_and_is_left_alone(run_cli: RunCli, project: Path, home: Path) -> None:
    record = home / "project-trust.json"
    record.write_text("{not json")

    completed = run_cli("approve", "stranger", "--yes")

    assert completed.returncode == 2
    assert "fix or remove it first" in completed.stderr
    assert record.read_text() == "{not json"


def test_an_entry_changed_while_the_question_is_open_is_not_approved(workdir: Path, home: Path, tmp_path: Path) -> None:
    # R-CFG-10: what is recorded is what was shown; a swap behind the user's back is refused (exit 1).
    marker = tmp_path / "swapped-in-server-ran"
    write_servers(workdir / ".mcp.json", {"docs": fault_server_entry()})
    process = subprocess.Popen(
        cli_command("approve", "docs", "--home", str(home)),
        cwd=workdir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        shown = b""
        deadline = time.monotonic() + 30
        while b"[y/N]" not in shown:
            ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no question within 30 s: {shown!r}"
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, f"the command ended before asking: {shown!r}"
            shown += chunk
        write_servers(workdir / ".mcp.json", {"docs": fault_server_entry(pid_file=marker)})
        _, errors = process.communicate(b"y\n", timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 1
    assert "'docs' changed since it was reviewed" in errors.decode()
    assert not (home / "project-trust.json").exists() or "docs" not in (home / "project-trust.json").read_text()
    assert not marker.exists()


def test_trusting_a_folder_whose_servers_still_wait_says_what_to_run_or_edit(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"files": fault_server_entry()})

    completed = run_cli("trust", "--yes")

    assert completed.returncode == 0, completed.stderr
    settings = workdir.resolve() / ".wave" / "settings.local.json"
    assert f"wave-actors approve files --workdir {workdir.resolve()}" in completed.stdout
    assert f'list them in "mcp_json": {{"enabled": [...]}} of {settings}' in completed.stdout


def test_the_trust_question_names_the_settings_file_to_edit_when_it_enables_nothing(
    run_cli: RunCli, workdir: Path
) -> None:
    write_servers(workdir / ".mcp.json", {"files": fault_server_entry()})

    completed = run_cli("trust", answer="n\n")

    assert completed.returncode == 1
    settings = workdir.resolve() / ".wave" / "settings.local.json"
    assert f"its {settings} approves no server now" in completed.stdout
    assert 'list them there as {"mcp_json": {"enabled": ["NAME", ...]}}' in completed.stdout


def test_a_server_disabled_by_the_settings_file_says_which_list_to_edit(run_cli: RunCli, workdir: Path) -> None:
    write_servers(workdir / ".mcp.json", {"files": fault_server_entry()})
    (workdir / ".wave").mkdir()
    (workdir / ".wave" / "settings.local.json").write_text('{"mcp_json": {"disabled": ["files"]}}')

    completed = run_cli("tools", "files", "--trust", "approved")

    assert completed.returncode == 2
    assert '"mcp_json.disabled"' in completed.stderr and "take it out of that list to let it load" in completed.stderr
