"""Project trust (R-CFG-10): approvals live in the user's home, bound to each entry's fingerprint.

The folder's ``.wave/settings.local.json`` is the user's wish list: it counts
only once the folder is trusted in the home, ``disabled`` always wins, and a
changed entry is "changed since approval" until approved again.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from wave_actors._config import (
    ApprovalState,
    ConfigError,
    LoadedConfig,
    ServerTrust,
    Severity,
    Source,
    TrustStore,
    load_config,
)
from wave_actors._config.loader import merge_config, read_config_files
from wave_actors._config.store import ConfigChanged
from wave_actors._config.vcs import git_tracking

NAMES = ("alpha", "beta", "gamma")


def setup_project(workdir: Path, settings: object | None) -> None:
    servers = {name: {"command": name} for name in NAMES}
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    if settings is not None:
        (workdir / ".wave").mkdir(exist_ok=True)
        text = settings if isinstance(settings, str) else json.dumps(settings)
        (workdir / ".wave" / "settings.local.json").write_text(text, encoding="utf-8")


def home_of(workdir: Path) -> Path:
    return workdir.parent / f"{workdir.name}-home"


def load(workdir: Path, trust: str = "approved", **kwargs: object) -> LoadedConfig:
    kwargs.setdefault("environ", {})
    return load_config(workdir, home=home_of(workdir), trust=trust, **kwargs)  # type: ignore[arg-type]


def store(workdir: Path, **environ: str) -> TrustStore:
    return TrustStore(workdir, home=home_of(workdir), environ=environ)


def record_file(workdir: Path) -> Path:
    return home_of(workdir) / "project-trust.json"


def record_of(workdir: Path) -> dict[str, Any]:
    document = json.loads(record_file(workdir).read_text(encoding="utf-8"))
    return document["projects"].get(str(workdir.resolve()), {})


def fingerprints(servers: Iterable[ServerTrust]) -> dict[str, str]:
    return {server.name: server.fingerprint for server in servers if server.fingerprint is not None}


def rewrite_entry(workdir: Path, name: str, entry: dict[str, object]) -> None:
    path = workdir / ".mcp.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["mcpServers"][name] = entry
    path.write_text(json.dumps(document), encoding="utf-8")


def messages(loaded: LoadedConfig) -> dict[str | None, str]:
    return {diagnostic.server: diagnostic.message for diagnostic in loaded.diagnostics if diagnostic.server}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


# The modes --------------------------------------------------------------------------


def test_r_cfg_10_all_mode_is_the_default_and_reads_neither_file(workdir: Path) -> None:
    """R-CFG-10: default mode "all"; neither the settings file nor the record is consulted."""
    setup_project(workdir, {"mcp_json": {"disabled": ["alpha"]}})
    loaded = load_config(workdir, home=home_of(workdir), environ={})
    assert list(loaded.servers) == list(NAMES)
    assert not record_file(workdir).exists()


def test_r_cfg_10_nothing_is_approved_until_the_user_says_so(workdir: Path) -> None:
    """R-CFG-10: no record, no settings file: no project entry loads, and each says how to approve it."""
    setup_project(workdir, None)
    loaded = load(workdir)
    assert dict(loaded.servers) == {}
    for name in NAMES:
        [diagnostic] = [d for d in loaded.diagnostics if d.server == name]
        assert (diagnostic.severity, diagnostic.source) == (Severity.INFO, Source.PROJECT)
        assert "not loaded: it is not approved" in diagnostic.message
        assert f"wave-actors approve {name} --workdir" in diagnostic.message


@pytest.mark.parametrize(
    "settings",
    [
        {"mcp_json": {"enable_all": True}},
        {"mcp_json": {"enabled": ["alpha", "beta", "gamma"]}},
        {"mcp_json": {"approved": {"alpha": "0000000000000000"}}},
    ],
)
def test_r_cfg_10_an_untrusted_folders_settings_file_approves_nothing_and_says_why(
    workdir: Path, settings: object
) -> None:
    """R-CFG-10: the settings file is a wish list; in a folder the user did not trust it is a diagnostic."""
    setup_project(workdir, settings)
    loaded = load(workdir)
    assert dict(loaded.servers) == {}
    [warning] = [d for d in loaded.diagnostics if d.severity is Severity.WARNING]
    assert warning.origin == str(workdir.resolve() / ".wave" / "settings.local.json")
    assert "this folder is not trusted" in warning.message
    assert f"wave-actors trust {workdir.resolve()}" in warning.message
    assert "not trusted" in messages(loaded)["alpha"]
    assert not record_file(workdir).exists()  # nothing is recorded for an untrusted folder


@pytest.mark.parametrize(
    ("settings", "loaded_names"),
    [
        (None, []),
        ({}, []),
        ({"mcp_json": {}}, []),
        ({"mcp_json": {"enabled": ["beta"]}}, ["beta"]),
        ({"mcp_json": {"enabled": ["beta", "not-in-file"]}}, ["beta"]),
        ({"mcp_json": {"enable_all": True}}, ["alpha", "beta", "gamma"]),
        ({"mcp_json": {"enable_all": True, "disabled": ["beta"]}}, ["alpha", "gamma"]),
        ({"mcp_json": {"enabled": ["alpha", "beta"], "disabled": ["alpha"]}}, ["beta"]),
        ({"other": 1, "mcp_json": {"enabled": ["gamma"], "unknown": 1}}, ["gamma"]),
    ],
)
def test_r_cfg_10_a_trusted_folders_settings_file_approves_what_it_enables_and_disabled_wins(
    workdir: Path, settings: object, loaded_names: list[str]
) -> None:
    """R-CFG-10: once the folder is trusted, its wish list counts; disabled always wins."""
    setup_project(workdir, settings)
    store(workdir).trust()
    loaded = load(workdir)
    assert list(loaded.servers) == loaded_names
    assert {d.server for d in loaded.diagnostics if d.server} == set(NAMES) - set(loaded_names)
    approved = record_of(workdir).get("approved", {})
    assert sorted(approved) == loaded_names
    for name in loaded_names:
        entry = approved[name]
        assert (entry["fingerprint"], entry["by"]) == (loaded.servers[name].fingerprint, "trusted folder")


def test_r_cfg_10_a_name_enabled_later_in_a_trusted_folder_is_recorded_by_the_load_that_sees_it(
    workdir: Path,
) -> None:
    """R-CFG-10: the fingerprint seen then is recorded in the home, and binds from then on."""
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    store(workdir).trust()
    assert list(record_of(workdir)["approved"]) == ["alpha"]
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha", "beta"]}})
    assert list(load(workdir).servers) == ["alpha", "beta"]
    assert sorted(record_of(workdir)["approved"]) == ["alpha", "beta"]
    rewrite_entry(workdir, "beta", {"command": "beta", "args": ["--evil"]})
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha"]
    assert messages(loaded)["beta"].startswith("changed since approval: not loaded (args changed)")


def test_r_cfg_10_sessions_merged_over_one_reading_record_a_first_sighting_once(workdir: Path) -> None:
    """R-CFG-10, R-SCOPE-3: the second session merged over the same reading finds it recorded; nothing is rewritten."""
    setup_project(workdir, {"mcp_json": {}})
    store(workdir).trust()
    setup_project(workdir, {"mcp_json": {"enable_all": True}})
    files = read_config_files(workdir.resolve(), home=home_of(workdir), trust=True)
    first = merge_config(files, constructor=None, plugins=(), trust="approved", environ={})
    written = record_file(workdir).stat()
    second = merge_config(files, constructor=None, plugins=(), trust="approved", environ={})
    assert list(first.servers) == list(second.servers) == list(NAMES)
    again = record_file(workdir).stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_r_cfg_10_disabled_in_the_settings_file_beats_an_explicit_approval(workdir: Path) -> None:
    """R-CFG-10: disabled always wins, wherever it is written, trusted folder or not."""
    setup_project(workdir, {"mcp_json": {"disabled": ["alpha"]}})
    trust = store(workdir).approve(["alpha", "beta"])
    assert trust.server("alpha").state is ApprovalState.DISABLED
    loaded = load(workdir)
    assert list(loaded.servers) == ["beta"]
    assert '"mcp_json.disabled"' in messages(loaded)["alpha"]


def test_r_cfg_10_revoked_names_stay_out_even_when_a_trusted_folder_enables_them(workdir: Path) -> None:
    """R-CFG-10: a revocation is recorded, so the trusted folder's wish list cannot approve the name again."""
    setup_project(workdir, {"mcp_json": {"enable_all": True}})
    store(workdir).trust()
    trust = store(workdir).revoke(["beta"])
    assert trust.server("beta").state is ApprovalState.DISABLED
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha", "gamma"]
    assert "revoked" in messages(loaded)["beta"] and "wave-actors approve beta" in messages(loaded)["beta"]
    assert "beta" not in record_of(workdir)["approved"]
    store(workdir).approve(["beta"])
    assert list(load(workdir).servers) == list(NAMES)


def test_r_cfg_10_untrust_forgets_every_decision_about_the_folder(workdir: Path) -> None:
    """R-CFG-10: trust, approvals and revocations of the workdir go; other workdirs keep theirs."""
    other = workdir.parent / "other"
    other.mkdir()
    setup_project(other, None)
    TrustStore(other, home=home_of(workdir), environ={}).approve(["alpha"])
    setup_project(workdir, {"mcp_json": {"enable_all": True}})
    store(workdir).trust()
    store(workdir).revoke(["gamma"])
    trust = store(workdir).untrust()
    assert not trust.trusted and {server.state for server in trust.servers} == {ApprovalState.PENDING}
    assert dict(load(workdir).servers) == {}
    assert list(load_config(other, home=home_of(workdir), trust="approved", environ={}).servers) == ["alpha"]


# Approval by fingerprint --------------------------------------------------------------


def test_r_cfg_10_approve_records_the_fingerprint_in_the_home_and_the_entry_loads(workdir: Path) -> None:
    """R-CFG-10: an approval is a record under the host's home, keyed by the resolved workdir."""
    setup_project(workdir, None)
    trust = store(workdir).approve(["alpha", "gamma"])
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha", "gamma"]
    for name in ("alpha", "gamma"):
        server = trust.server(name)
        assert server.state is ApprovalState.APPROVED
        assert server.approved_fingerprint == server.fingerprint == loaded.servers[name].fingerprint
    assert trust.server("beta").state is ApprovalState.PENDING
    assert not (workdir / ".wave").exists()  # nothing is written into the project


def test_r_cfg_10_a_changed_entry_is_not_loaded_and_the_warning_names_the_fields_never_the_values(
    workdir: Path,
) -> None:
    """R-CFG-10, R-CFG-12: what changed is told by field and variable name; values are secrets."""
    setup_project(workdir, None)
    rewrite_entry(workdir, "alpha", {"command": "alpha", "env": {"TOKEN": "old-secret", "GONE": "x"}})
    store(workdir).approve(["alpha", "beta"])
    rewrite_entry(
        workdir, "alpha", {"command": "curl", "args": ["evil.example"], "env": {"TOKEN": "new-secret", "NEW": "y"}}
    )
    loaded = load(workdir)
    assert list(loaded.servers) == ["beta"]
    [warning] = [d for d in loaded.diagnostics if d.server == "alpha"]
    assert (warning.severity, warning.source) == (Severity.WARNING, Source.PROJECT)
    assert warning.message.startswith(
        "changed since approval: not loaded (command, args, env GONE (removed), env NEW (added), env TOKEN changed)"
    )
    for secret in ("old-secret", "new-secret", "curl", "evil.example"):
        assert secret not in warning.message
    server = store(workdir).read().server("alpha")
    assert server.state is ApprovalState.CHANGED
    assert server.changed_fields == ("command", "args", "env GONE (removed)", "env NEW (added)", "env TOKEN")
    store(workdir).approve(["alpha"])
    assert load(workdir).servers["alpha"].command == "curl"


def test_r_cfg_10_a_changed_variable_expansion_is_a_changed_entry(workdir: Path) -> None:
    """R-CFG-10, R-CFG-5: the fingerprint is taken after ${VAR} expansion."""
    setup_project(workdir, None)
    rewrite_entry(workdir, "alpha", {"command": "${TOOL}"})
    TrustStore(workdir, home=home_of(workdir), environ={"TOOL": "safe"}).approve(["alpha"])
    assert list(load(workdir, environ={"TOOL": "safe"}).servers) == ["alpha"]
    loaded = load(workdir, environ={"TOOL": "other"})
    assert dict(loaded.servers) == {}
    assert "(command changed)" in messages(loaded)["alpha"]


def test_r_cfg_10_settings_approved_map_enables_a_name_only_at_its_fingerprint(workdir: Path) -> None:
    """R-CFG-10: the older {name: fingerprint} form is a wish at that fingerprint, in a trusted folder."""
    setup_project(workdir, None)
    fingerprint = store(workdir).read().server("alpha").fingerprint
    setup_project(workdir, {"mcp_json": {"approved": {"alpha": fingerprint, "beta": "0000000000000000"}}})
    store(workdir).trust()
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha"]
    assert messages(loaded)["beta"].startswith("changed since approval: not loaded")


def test_r_cfg_10_an_unapproved_project_entry_does_not_shadow_a_user_entry(workdir: Path) -> None:
    """R-CFG-10 with R-CFG-1: an unapproved or changed entry is not a definition at all."""
    setup_project(workdir, None)
    store(workdir).approve(["beta"])
    rewrite_entry(workdir, "beta", {"command": "changed"})
    home_of(workdir).joinpath("mcp.json").write_text(
        json.dumps({"mcpServers": {"alpha": {"command": "mine"}, "beta": {"command": "mine too"}}})
    )
    servers = load(workdir).servers
    assert (servers["alpha"].source, servers["alpha"].command) == (Source.USER, "mine")
    assert (servers["beta"].source, servers["beta"].command) == (Source.USER, "mine too")


def test_r_cfg_10_unapproved_project_entries_are_not_validated(workdir: Path) -> None:
    """R-CFG-10: untrusted content is neither judged nor expanded."""
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": 5}}}))
    loaded = load(workdir)
    assert [d.severity for d in loaded.diagnostics] == [Severity.INFO]


def test_r_cfg_10_trust_mode_does_not_touch_other_sources(workdir: Path) -> None:
    """R-CFG-10: only project entries need approval."""
    loaded = load(workdir, constructor={"c": {"command": "x"}}, plugins=[("p", {"p": {"command": "y"}})])
    assert list(loaded.servers) == ["c", "p"]
    assert loaded.diagnostics == ()


def test_unknown_trust_mode_is_a_programming_error(workdir: Path) -> None:
    with pytest.raises(ValueError, match="trust"):
        load(workdir, trust="some")


def test_r_cfg_10_the_record_is_keyed_by_the_resolved_workdir(workdir: Path) -> None:
    """R-CFG-10: a symbolic link to the project finds the same approvals."""
    setup_project(workdir, None)
    link = workdir.parent / "link"
    link.symlink_to(workdir)
    TrustStore(link, home=home_of(workdir), environ={}).approve(["alpha"])
    assert list(load(workdir).servers) == ["alpha"]
    assert list(record_of(workdir)["approved"]) == ["alpha"]


# What approve and revoke refuse -------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "entry", "reason"),
    [
        (["nope"], None, "has no such server"),
        (["alpha"], {"command": 5}, "is invalid"),
    ],
)
def test_r_cfg_10_approve_refuses_what_it_cannot_approve_and_records_nothing(
    workdir: Path, names: list[str], entry: dict[str, object] | None, reason: str
) -> None:
    """R-CFG-10: an unknown name, or an entry that cannot load (no fingerprint), is a ConfigError."""
    setup_project(workdir, None)
    if entry is not None:
        rewrite_entry(workdir, "alpha", entry)
    with pytest.raises(ConfigError, match=reason):
        store(workdir).approve([*names, "beta"])
    assert not record_file(workdir).exists()


def test_r_cfg_10_approve_records_only_what_was_reviewed(workdir: Path) -> None:
    """R-CFG-10: an entry changed between review and approval is refused, not approved unseen."""
    setup_project(workdir, None)
    [alpha, beta] = store(workdir).review(["alpha", "beta"])
    assert alpha.config is not None and alpha.config.command == "alpha"
    rewrite_entry(workdir, "beta", {"command": "swapped"})
    with pytest.raises(ConfigChanged, match="'beta' changed since it was reviewed"):
        store(workdir).approve(["alpha", "beta"], fingerprints=fingerprints([alpha, beta]))
    assert not record_file(workdir).exists()


def test_r_cfg_10_trust_records_only_what_was_reviewed(workdir: Path) -> None:
    """R-CFG-10: the settings file enabling more (or another entry) than was shown refuses the trust."""
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    shown = fingerprints(server for server in store(workdir).read().servers if server.enabled_in_settings)
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha", "beta"]}})
    with pytest.raises(ConfigChanged, match="'beta'"):
        store(workdir).trust(fingerprints=shown)
    assert not record_file(workdir).exists()
    assert store(workdir).trust(fingerprints=fingerprints(store(workdir).read().servers)).trusted


def test_r_cfg_10_revoke_refuses_an_unknown_name(workdir: Path) -> None:
    setup_project(workdir, None)
    with pytest.raises(ConfigError, match="cannot revoke 'nope'"):
        store(workdir).revoke(["nope"])


def test_r_cfg_10_trust_store_refuses_a_missing_workdir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such directory"):
        TrustStore(tmp_path / "missing", home=tmp_path / "home")
    (tmp_path / "file").touch()
    with pytest.raises(ConfigError, match="is not a directory"):
        TrustStore(tmp_path / "file", home=tmp_path / "home")


def test_r_cfg_10_approvals_of_a_server_gone_from_the_project_file_are_listed_as_unused(workdir: Path) -> None:
    setup_project(workdir, None)
    store(workdir).approve(["alpha"])
    store(workdir).revoke(["beta"])
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"gamma": {"command": "gamma"}}}))
    trust = store(workdir).read()
    assert trust.unused_approvals == ("alpha", "beta")
    store(workdir).revoke(["alpha"])  # known: it was approved


# The record file ----------------------------------------------------------------------


def test_r_cfg_10_the_record_is_owner_only_and_written_atomically(workdir: Path) -> None:
    """R-CFG-10: 0600, a lock file next to it, no temporary file left."""
    setup_project(workdir, None)
    store(workdir).approve(["alpha"])
    path = record_file(workdir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o640)  # loosened by hand (readable, not writable, by others): the next edit makes it private again
    store(workdir).approve(["beta"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["project-trust.json", "project-trust.json.lock"]
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["version"] == 1


def test_r_cfg_10_a_record_others_may_write_approves_nothing_and_is_not_edited(workdir: Path) -> None:
    """R-CFG-10: a record writable by group or others could have been forged."""
    setup_project(workdir, None)
    store(workdir).approve(["alpha"])
    path = record_file(workdir)
    path.chmod(0o666)
    before = path.read_bytes()
    loaded = load(workdir)
    assert dict(loaded.servers) == {}
    [error] = [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert error.origin == str(path) and "writable by other users" in error.message
    with pytest.raises(ConfigError, match="writable by other users"):
        store(workdir).approve(["beta"])
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"version": 2, "projects": {}}', '"version"'),
        ('{"projects": []}', '"projects" must be an object'),
        ('{"projects": {"WORKDIR": {"trusted": "yes"}}}', "trusted must be true or false"),
        ('{"projects": {"WORKDIR": {"approved": {"alpha": {"fingerprint": 5}}}}}', "fingerprint must be a string"),
    ],
)
def test_r_cfg_10_a_malformed_record_approves_nothing_with_a_diagnostic(
    workdir: Path, content: str, reason: str
) -> None:
    """R-CFG-4, R-CFG-10: an unusable record approves nothing; an edit refuses to touch it."""
    setup_project(workdir, {"mcp_json": {"enable_all": True}})
    path = record_file(workdir)
    path.parent.mkdir()
    path.write_text(content.replace("WORKDIR", str(workdir.resolve())), encoding="utf-8")
    path.chmod(0o600)
    loaded = load(workdir)
    assert dict(loaded.servers) == {}
    [error] = [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert error.origin == str(path) and reason in error.message
    with pytest.raises(ConfigError, match="fix or remove it first"):
        store(workdir).trust()


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ("{not json", None),
        ('["alpha"]', None),
        ({"mcp_json": ["alpha"]}, "mcp_json"),
        ({"mcp_json": {"enabled": "alpha"}}, "mcp_json.enabled"),
        ({"mcp_json": {"enabled": ["alpha", 1]}}, "mcp_json.enabled[1]"),
        ({"mcp_json": {"enable_all": "yes"}}, "mcp_json.enable_all"),
        ({"mcp_json": {"enable_all": True, "disabled": None}}, "mcp_json.disabled"),
        ({"mcp_json": {"approved": {"alpha": 5}}}, "mcp_json.approved['alpha']"),
    ],
)
def test_r_cfg_10_malformed_settings_load_no_project_entry_with_a_diagnostic(
    workdir: Path, settings: object, field: str | None
) -> None:
    """R-CFG-10, R-CFG-4: a settings file that cannot be read cannot say what it disables: nothing loads."""
    setup_project(workdir, settings)
    store(workdir).approve(["alpha"])
    loaded = load(workdir)
    assert dict(loaded.servers) == {}
    [error] = [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    assert error.origin == str(workdir.resolve() / ".wave" / "settings.local.json")
    assert error.field == field
    assert "no project server is approved" in error.message


def test_r_cfg_10_a_record_that_cannot_be_written_loads_nothing_new(workdir: Path) -> None:
    """R-CFG-10: a trusted folder's new wish that cannot be recorded is not loaded (no fingerprint would bind it)."""
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    store(workdir).trust()
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha", "beta"]}})
    lock = home_of(workdir) / "project-trust.json.lock"
    lock.unlink()
    lock.mkdir()  # the lock cannot be taken, even by root
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha"]
    assert "could not be recorded" in messages(loaded)["beta"]


# git: a warning about a committed wish list, never a gate ----------------------------------


def git(workdir: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(workdir), *args], check=True, capture_output=True, timeout=30)


def commit_all(workdir: Path) -> None:
    git(workdir, "add", "-A")
    git(workdir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")


def test_r_cfg_10_a_committed_settings_file_in_a_trusted_folder_gets_a_warning(workdir: Path) -> None:
    """R-CFG-10: the git check is a warning now; the trusted folder's wish still counts."""
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    git(workdir, "init", "-q")
    commit_all(workdir)
    store(workdir).trust()
    loaded = load(workdir)
    assert list(loaded.servers) == ["alpha"]
    [warning] = [d for d in loaded.diagnostics if d.severity is Severity.WARNING]
    assert "this file is committed to the repository" in warning.message


def test_r_cfg_10_an_ignored_settings_file_in_a_trusted_folder_gets_no_warning(workdir: Path) -> None:
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    (workdir / ".gitignore").write_text(".wave/\n")
    git(workdir, "init", "-q")
    commit_all(workdir)
    store(workdir).trust()
    assert [d for d in load(workdir).diagnostics if d.severity is not Severity.INFO] == []


def test_r_cfg_10_git_is_asked_from_the_workdir_not_from_a_bare_repository_inside_it(workdir: Path) -> None:
    """R-CFG-10: a committed .wave that is itself a bare repository does not answer for the project."""
    setup_project(workdir, {"mcp_json": {"enable_all": True}})
    git(workdir / ".wave", "init", "-q", "--bare")
    git(workdir, "init", "-q")
    commit_all(workdir)
    settings = workdir.resolve() / ".wave" / "settings.local.json"
    assert git_tracking(workdir.resolve(), settings).tracked is True


def test_r_cfg_10_without_git_the_tracking_is_unknown_and_nothing_depends_on_it(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup_project(workdir, {"mcp_json": {"enabled": ["alpha"]}})
    (workdir / ".git").mkdir()
    (workdir / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(workdir / "empty-bin"))
    assert git_tracking(workdir.resolve(), workdir.resolve() / ".wave" / "settings.local.json").tracked is None
    assert dict(load(workdir).servers) == {}  # untrusted: no approval, whatever git would say
    store(workdir).trust()
    assert list(load(workdir).servers) == ["alpha"]
