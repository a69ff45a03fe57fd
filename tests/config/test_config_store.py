"""Editing the user and project files: atomic, validated, versioned, byte-identical on failure (R-STORE-1..4)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from wave_actors import ConfigChanged, ConfigError, ConfigFile, ConfigStore, Source, load_config
from wave_actors._config.store import ABSENT_VERSION

ORIGINAL = """{
    "editor": {"theme": "dark", "tabs": [1, 2]},
    "mcpServers": {
        "files": {"command": "python3", "args": ["-m", "files"], "env": {"TOKEN": "${FILES_TOKEN}"}},
        "tracker": {"url": "https://mcp.example.com/mcp?key=${KEY}"}
    },
    "zzz": null
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / ".mcp.json").write_text(ORIGINAL, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(project: Path, home: Path) -> ConfigStore:
    return ConfigStore(project, home=home)


def test_read_gives_the_entries_as_written_and_a_version(store: ConfigStore, project: Path) -> None:
    read = store.read("project")
    assert read.path == project.resolve() / ".mcp.json"
    assert read.exists and read.scope is Source.PROJECT
    assert list(read.servers) == ["files", "tracker"]
    assert read.servers["files"] == {"command": "python3", "args": ["-m", "files"], "env": {"TOKEN": "${FILES_TOKEN}"}}
    assert store.read(Source.PROJECT).version == read.version


def test_a_missing_file_reads_as_empty_with_the_absent_version(store: ConfigStore, home: Path) -> None:
    read = store.read("user")
    assert read == ConfigFile(Source.USER, home.absolute() / "mcp.json", False, ABSENT_VERSION, {})


def test_remove_keeps_every_other_byte_of_the_file(store: ConfigStore, project: Path) -> None:
    # R-STORE-1: other entries, unknown top-level keys, their order and formatting survive.
    written = store.remove("files", "project", store.read("project").version)
    text = (project / ".mcp.json").read_text(encoding="utf-8")
    assert text == ORIGINAL.replace(
        '        "files": {"command": "python3", "args": ["-m", "files"], "env": {"TOKEN": "${FILES_TOKEN}"}},\n', ""
    )
    assert list(written.servers) == ["tracker"]
    assert written.version == store.read("project").version != ABSENT_VERSION


def test_put_replaces_in_place_and_adds_at_the_end(store: ConfigStore, project: Path) -> None:
    version = store.put("files", {"command": "node", "args": ["files.js"]}, "project", store.read("project").version)
    store.put("search", {"url": "https://search.example.com/mcp"}, "project", version.version)
    document = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    assert list(document) == ["editor", "mcpServers", "zzz"]
    assert list(document["mcpServers"]) == ["files", "tracker", "search"]
    assert document["mcpServers"]["files"] == {"command": "node", "args": ["files.js"]}
    assert document["editor"] == {"theme": "dark", "tabs": [1, 2]}
    assert '"editor": {"theme": "dark", "tabs": [1, 2]},' in (project / ".mcp.json").read_text(encoding="utf-8")


def test_values_are_stored_literally_never_expanded(store: ConfigStore, project: Path, home: Path) -> None:
    # ${VAR} placeholders are kept as written, set or not (the user guide's "stored literally").
    entry = {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    store.put("x", entry, "user", ABSENT_VERSION)
    assert json.loads((home / "mcp.json").read_text())["mcpServers"]["x"] == entry


def test_adding_the_first_user_server_creates_the_home_and_a_private_file(store: ConfigStore, home: Path) -> None:
    written = store.put("echo", {"command": "echo"}, "user", ABSENT_VERSION)
    path = home / "mcp.json"
    assert written.exists and written.path == path.absolute()
    assert json.loads(path.read_text()) == {"mcpServers": {"echo": {"command": "echo"}}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config(home.parent, home=home).servers["echo"].command == "echo"


def test_a_rewritten_file_keeps_its_permission_bits(store: ConfigStore, project: Path) -> None:
    os.chmod(project / ".mcp.json", 0o640)
    store.remove("files", "project", store.read("project").version)
    assert stat.S_IMODE((project / ".mcp.json").stat().st_mode) == 0o640


def test_a_symbolic_link_stays_a_link_to_the_rewritten_file(tmp_path: Path, project: Path) -> None:
    (project / "config").mkdir()
    real = project / "config" / "shared.json"
    (project / ".mcp.json").rename(real)
    (project / ".mcp.json").symlink_to(Path("config") / "shared.json")
    store = ConfigStore(project)
    store.remove("tracker", "project", store.read("project").version)
    assert (project / ".mcp.json").is_symlink()
    assert list(json.loads(real.read_text())["mcpServers"]) == ["files"]


@pytest.mark.parametrize("target", ["the user file", "a file elsewhere"])
def test_a_project_file_linked_outside_the_project_is_never_edited(tmp_path: Path, project: Path, target: str) -> None:
    # R-STORE-6: a repository whose .mcp.json links to the user's own file must not make "edit the
    # project" rewrite it; nor any other file outside the workdir.
    home = tmp_path / "home"
    store = ConfigStore(project, home=home)
    store.put("mine", {"command": "mine"}, "user", ABSENT_VERSION)
    outside = home / "mcp.json" if target == "the user file" else tmp_path / "elsewhere.json"
    if not outside.exists():
        outside.write_text(ORIGINAL, encoding="utf-8")
    (project / ".mcp.json").unlink()
    (project / ".mcp.json").symlink_to(outside)
    before = outside.read_bytes()
    read = store.read("project")  # reading through the link is what the loader does too
    for edit in (
        lambda: store.put("added", {"command": "added"}, "project", read.version),
        lambda: store.remove(next(iter(read.servers)), "project", read.version),
        lambda: store.import_servers({"other": {"command": "other"}}, "project", read.version),
    ):
        with pytest.raises(ConfigError, match="outside the project"):
            edit()
        assert outside.read_bytes() == before
    assert (project / ".mcp.json").is_symlink()


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


@pytest.mark.parametrize(("umask", "mode"), [(0o077, 0o600), (0o022, 0o644), (0o027, 0o640)], indirect=["umask"])
def test_a_new_project_file_gets_the_permissions_the_umask_leaves(tmp_path: Path, umask: int, mode: int) -> None:
    # R-STORE-6: a user who keeps new files private (umask 077) gets a private project file too.
    workdir = tmp_path / "fresh"
    workdir.mkdir()
    store = ConfigStore(workdir, home=tmp_path / "home")
    store.put("files", {"command": "files"}, "project", ABSENT_VERSION)
    assert stat.S_IMODE((workdir / ".mcp.json").stat().st_mode) == mode
    assert os.listdir(workdir) == [".mcp.json"]


def test_a_literal_secret_written_to_a_project_file_is_named_in_a_warning_never_shown(
    store: ConfigStore, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # R-STORE-6, R-CFG-12: the library writes what it is given, and says where a secret went.
    entry = {
        "url": "https://mcp.example/mcp?key=s3cr3t-query&v=${V}",
        "headers": {"Authorization": "Bearer s3cr3t-header", "X-Trace": "${TRACE_ID}"},
    }
    with caplog.at_level(logging.WARNING, logger="wave_actors._config.store"):
        store.put("remote", entry, "project", store.read("project").version)
    [record] = caplog.records
    message = record.getMessage()
    assert "'remote'" in message and "header Authorization" in message and "url query key" in message
    assert "X-Trace" not in message and "s3cr3t" not in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="wave_actors._config.store"):
        store.put(
            "placeholders", {"command": "x", "env": {"TOKEN": "${TOKEN}"}}, "project", store.read("project").version
        )
        store.put("user-only", {"command": "x", "env": {"TOKEN": "s3cr3t"}}, "user", ABSENT_VERSION)
    assert caplog.records == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n\t"mcpServers": {\n\t\t"a": {"command": "a"}\n\t}\n}\n', '\n\t\t"b": {\n\t\t\t"command": "b"\n\t\t}\n'),
        ('{"mcpServers": {"a": {"command": "a"}}}', '"b": {"command": "b"}}}'),
        ('{"mcpServers":{"a":{"command":"a"}}}', '"b":{"command":"b"}}}'),
        (
            '{\r\n  "mcpServers": {\r\n    "a": {"command": "a"}\r\n  }\r\n}\r\n',
            '\r\n    "b": {\r\n      "command": "b"\r\n',
        ),
        ('{\n  "other": 1\n}', '"other": 1,\n  "mcpServers": {\n    "b": {\n      "command": "b"\n    }\n  }\n}'),
    ],
    ids=["tabs", "one-line", "compact", "crlf", "no-servers-key"],
)
def test_new_entries_are_written_in_the_file_style(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / ".mcp.json").write_bytes(text.encode())
    store = ConfigStore(tmp_path)
    store.put("b", {"command": "b"}, "project", store.read("project").version)
    written = (tmp_path / ".mcp.json").read_bytes().decode()
    assert expected in written
    assert load_config(tmp_path).servers.keys() >= {"b"}


def test_a_byte_order_mark_and_the_alias_key_are_kept(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_bytes('\ufeff{"mcp_servers": {"a": {"command": "a"}}}\n'.encode())
    store = ConfigStore(tmp_path)
    store.put("b", {"command": "b"}, "project", store.read("project").version)
    assert (tmp_path / ".mcp.json").read_bytes() == (
        '\ufeff{"mcp_servers": {"a": {"command": "a"}, "b": {"command": "b"}}}\n'.encode()
    )


# Every failure leaves the file byte-identical and names the file and the cause.


def _expect_refusal(
    store: ConfigStore, file: Path, edit: Callable[[str], object], *causes: str, error: type[Exception] = ConfigError
) -> None:
    before = file.read_bytes() if file.exists() else None
    listing = sorted(os.listdir(file.parent)) if file.parent.exists() else None
    version = store.read("project").version
    with pytest.raises(error) as raised:
        edit(version)
    message = str(raised.value)
    assert str(file.name) in message
    for cause in causes:
        assert cause in message
    assert (file.read_bytes() if file.exists() else None) == before
    if listing is not None:
        assert sorted(os.listdir(file.parent)) == listing  # no temporary file left either


def test_removing_an_unknown_server_is_refused(store: ConfigStore, project: Path) -> None:
    _expect_refusal(store, project / ".mcp.json", lambda v: store.remove("nope", "project", v), "'nope'", "files")


def test_removing_from_a_missing_file_is_refused(store: ConfigStore, home: Path) -> None:
    with pytest.raises(ConfigError, match=r"mcp\.json does not exist"):
        store.remove("files", "user", ABSENT_VERSION)
    assert not (home / "mcp.json").exists()


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b'{"mcpServers": {"a": ', "not valid JSON"),
        (b"[1, 2]", "top level is not a JSON object"),
        (b'{"mcpServers": ["a"]}', "not an object of {name: entry}"),
        (b"\xff\xfe binary", "not UTF-8"),
    ],
    ids=["truncated", "array", "servers-list", "binary"],
)
def test_a_file_that_is_not_a_configuration_is_never_rewritten(tmp_path: Path, content: bytes, cause: str) -> None:
    file = tmp_path / ".mcp.json"
    file.write_bytes(content)
    store = ConfigStore(tmp_path)
    from wave_actors._config.store import _version  # pyright: ignore[reportPrivateUsage]

    version = _version(content)
    for edit in (
        lambda: store.remove("a", "project", version),
        lambda: store.put("b", {"command": "b"}, "project", version),
        lambda: store.import_servers({"b": {"command": "b"}}, "project", version),
    ):
        with pytest.raises(ConfigError, match="fix it by hand") as raised:
            edit()
        assert cause in str(raised.value) and ".mcp.json" in str(raised.value)
        assert file.read_bytes() == content
    assert os.listdir(tmp_path) == [".mcp.json"]


def test_a_directory_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").mkdir()
    store = ConfigStore(tmp_path)
    with pytest.raises(ConfigError, match=r"\.mcp\.json.*a directory"):
        store.put("b", {"command": "b"}, "project", ABSENT_VERSION)
    assert (tmp_path / ".mcp.json").is_dir()


@pytest.mark.parametrize(
    ("entry", "cause"),
    [
        ({"command": "x", "timeout": 5}, "unsupported field(s) 'timeout'"),
        ({"url": "https://x.example/mcp", "args": ["a"]}, "does not use 'args'"),
        ({"command": "x", "tool_timeout_ms": 0}, "tool_timeout_ms"),
        ({"command": "x", "url": "https://x"}, "both"),
        ({}, 'needs "command"'),
        ({"command": "x", "env": {"TOKEN": 5}}, "env['TOKEN']"),
        ({"command": "x", "tool_overrides": {"t": {"readonly": True}}}, "readonly"),
        ({"command": float("nan")}, "not JSON"),
    ],
    ids=["unknown-field", "foreign-field", "timeout", "ambiguous", "empty", "env-type", "override", "nan"],
)
def test_an_invalid_entry_is_refused_before_anything_is_written(
    store: ConfigStore, project: Path, entry: dict[str, Any], cause: str
) -> None:
    # R-STORE-3: the loader's rules, and nothing it would ignore with a warning.
    _expect_refusal(store, project / ".mcp.json", lambda v: store.put("bad", entry, "project", v), "'bad'", cause)


def test_a_secret_in_an_invalid_entry_is_not_repeated_in_the_error(store: ConfigStore) -> None:
    with pytest.raises(ConfigError) as raised:
        store.put("bad", {"command": "x", "env": {"TOKEN": ["hunter2"]}}, "project", store.read("project").version)
    assert "hunter2" not in str(raised.value)


def test_an_edit_of_a_changed_file_is_refused_with_config_changed(store: ConfigStore, project: Path) -> None:
    # R-STORE-4.
    stale = store.read("project").version
    (project / ".mcp.json").write_text(ORIGINAL.replace("dark", "light"), encoding="utf-8")
    _expect_refusal(
        store,
        project / ".mcp.json",
        lambda _: store.remove("files", "project", stale),
        "changed on disk",
        "reload",
        error=ConfigChanged,
    )


def test_a_file_created_since_it_was_read_missing_is_a_change(store: ConfigStore, home: Path) -> None:
    home.mkdir()
    (home / "mcp.json").write_text('{"mcpServers": {}}')
    with pytest.raises(ConfigChanged):
        store.put("a", {"command": "a"}, "user", ABSENT_VERSION)
    assert (home / "mcp.json").read_text() == '{"mcpServers": {}}'


@pytest.mark.parametrize("scope", ["plugin", "constructor", Source.PLUGIN, "global"])
def test_plugin_and_constructor_entries_are_read_only(store: ConfigStore, project: Path, scope: Source | str) -> None:
    # R-STORE-2.
    before = (project / ".mcp.json").read_bytes()
    for edit in (
        lambda: store.remove("files", scope, "any"),
        lambda: store.put("files", {"command": "x"}, scope, "any"),
        lambda: store.import_servers({"x": {"command": "x"}}, scope, "any"),
        lambda: store.read(scope),
    ):
        with pytest.raises(ConfigError, match=r"read-only|unknown configuration scope"):
            edit()
    assert (project / ".mcp.json").read_bytes() == before


_DROP_PRIVILEGES = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _run_unprivileged(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter for which file permissions apply, even when the suite runs as root."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        prefix = _DROP_PRIVILEGES
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.parametrize("locked", ["file", "directory"])
def test_permission_denied_leaves_the_file_byte_identical(project: Path, locked: str) -> None:
    file = project / ".mcp.json"
    before = file.read_bytes()
    os.chmod(file if locked == "file" else project, 0o555 if locked == "directory" else 0o444)
    try:
        completed = _run_unprivileged(
            f"""
            from wave_actors import ConfigError, ConfigStore
            store = ConfigStore({str(project)!r})
            try:
                store.remove("files", "project", store.read("project").version)
            except ConfigError as error:
                print(error)
            else:
                print("written")
            """
        )
    finally:
        os.chmod(project, 0o755)
        os.chmod(file, 0o644)
    assert completed.returncode == 0, completed.stderr
    assert "Permission denied" in completed.stdout and str(file) in completed.stdout
    assert file.read_bytes() == before
    assert os.listdir(project) == [".mcp.json"]


def test_a_failed_write_leaves_no_temporary_file(
    store: ConfigStore, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    _expect_refusal(
        store, project / ".mcp.json", lambda v: store.remove("files", "project", v), "No space left on device"
    )


# Import.


def test_import_adds_every_pasted_server_at_once(store: ConfigStore, home: Path) -> None:
    pasted = """{"mcp_servers": {
        "docs": {"url": "https://docs.example/mcp", "transport": "http", "headers": {"X-Key": "${DOCS_KEY}"}},
        "local": {"command": "node", "args": ["/abs/server.js"], "env": {"PROJECT_ID": "demo"}, "tool_timeout_ms": 120000}
    }}"""
    written = store.import_servers(pasted, "user", ABSENT_VERSION)
    assert list(written.servers) == ["docs", "local"]
    stored = json.loads((home / "mcp.json").read_text())["mcpServers"]
    assert stored["docs"]["headers"] == {"X-Key": "${DOCS_KEY}"}
    assert set(load_config(home.parent, home=home, environ={}).servers) == {"docs", "local"}


@pytest.mark.parametrize(
    ("document", "cause"),
    [
        ({"mcpServers": {"new": {"command": "n"}, "files": {"command": "f"}}}, "has 'files' already"),
        ({"new": {"command": "n"}, "odd": {"command": "o", "sampling": {}}}, "unsupported field(s) 'sampling'"),
        ({"new": {"command": "n"}, "bad": "python3 -m bad"}, "'bad' must be a JSON object"),
        ({"command": "n", "args": []}, "one entry without its name"),
        ({"mcpServers": {}}, "non-empty"),
        ({"mcpServers": {"a": {"command": "a"}}, "mcp_servers": {}}, "keep one"),
        ('{"a": {', "not valid JSON"),
    ],
    ids=["existing-name", "unsupported-field", "not-an-object", "bare-entry", "empty", "both-keys", "bad-json"],
)
def test_import_is_all_or_nothing(store: ConfigStore, project: Path, document: Any, cause: str) -> None:
    file = project / ".mcp.json"
    before = file.read_bytes()
    with pytest.raises(ConfigError, match="nothing imported") as raised:
        store.import_servers(document, "project", store.read("project").version)
    assert cause in str(raised.value)
    assert file.read_bytes() == before


# Concurrency.

_EDITOR = """
import sys
from wave_actors import ConfigChanged, ConfigStore
store = ConfigStore(sys.argv[1])
version = store.read("project").version
print("ready", flush=True)
sys.stdin.readline()  # "go": every editor holds the same version now
try:
    store.put(sys.argv[2], {"command": sys.argv[2]}, "project", version)
except ConfigChanged:
    print("changed")
else:
    print("won")
"""


def test_of_concurrent_editors_exactly_one_wins(project: Path, tmp_path: Path) -> None:
    # R-STORE-4 across processes: all read the same version, all edit at once.
    editors = [
        subprocess.Popen(
            [sys.executable, "-c", _EDITOR, str(project), f"editor{index}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for index in range(4)
    ]
    try:
        for editor in editors:
            assert editor.stdout is not None and editor.stdout.readline() == "ready\n"
        for editor in editors:  # every editor holds the same version now: all go at once
            assert editor.stdin is not None
            editor.stdin.write("go\n")
            editor.stdin.flush()
        outcomes = [editor.communicate(timeout=30)[0].strip() for editor in editors]
    finally:
        for editor in editors:
            editor.kill()
            editor.wait()
    assert sorted(outcomes) == ["changed", "changed", "changed", "won"]
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert len([name for name in servers if name.startswith("editor")]) == 1


# Round trips (Hypothesis).

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_entries = st.fixed_dictionaries(
    {"command": st.text(min_size=1, max_size=10), "args": st.lists(st.text(max_size=6), max_size=3)}
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    others=st.dictionaries(st.text(max_size=8).filter(lambda k: k not in ("mcpServers", "mcp_servers")), _json_values),
    servers=st.dictionaries(_names, _entries, min_size=1, max_size=4),
    new=_names,
    entry=_entries,
    indent=st.sampled_from([None, 0, 1, 2, 4, "\t"]),
)
def test_adding_then_removing_a_server_gives_back_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    others: dict[str, Any],
    servers: dict[str, Any],
    new: str,
    entry: dict[str, Any],
    indent: int | str | None,
) -> None:
    # Unknown keys and other entries survive a round trip untouched, whatever the file's formatting.
    workdir = tmp_path_factory.mktemp("roundtrip")
    servers.pop(new, None)
    document = {**others, "mcpServers": servers}
    original = json.dumps(document, indent=indent, ensure_ascii=False).encode("utf-8")
    (workdir / ".mcp.json").write_bytes(original)
    store = ConfigStore(workdir)
    added = store.put(new, entry, "project", store.read("project").version)
    assert json.loads((workdir / ".mcp.json").read_bytes()) == {**others, "mcpServers": {**servers, new: entry}}
    assert list(json.loads((workdir / ".mcp.json").read_bytes())) == list(document)
    store.remove(new, "project", added.version)
    assert (workdir / ".mcp.json").read_bytes() == original


def test_loaded_configuration_names_both_files_absolutely_whether_or_not_they_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a settings page opens or creates; the same paths the store edits.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "project").mkdir()
    loaded = load_config("project", home="home")
    assert loaded.project_file == str(tmp_path.resolve() / "project" / ".mcp.json")
    assert loaded.user_file == str(tmp_path / "home" / "mcp.json")
    store = ConfigStore("project", home="home")
    assert (str(store.path("user")), str(store.path("project"))) == (loaded.user_file, loaded.project_file)
