"""Fuzzing the loader: whatever the files and entries hold, load_config returns (R-CFG-4, R-CFG-11).

Random JSON-ish documents, deep nesting, huge numbers, wrong types, broken
text and bytes go into the project file, the user file and the trust settings
file, and random entries go to the constructor and the plugins. Loading never
raises; a file that cannot be used is an error diagnostic naming it; every
loaded server is a well-formed record, and everything can be printed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, cast

from hypothesis import given, settings, strategies as st

from wave_actors._config import LoadedConfig, ServerConfig, Severity, load_config
from wave_actors._config.converter import ENTRY_FIELDS
from wave_actors._config.sources import MAX_FILE_BYTES, MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH

FIELD_NAMES = sorted(ENTRY_FIELDS | {"timeout", "disabled", "x"})
names = st.text(max_size=6)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["stdio", "http", "sse", "streamable-http", "${HOME}", "${NOPE:-x}", "", "\ud800"]),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(names, children, max_size=3),
    max_leaves=8,
)
plausible: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(["stdio", "http", "sse", "streamable-http", "auto"]),
    "transport": st.sampled_from(["stdio", "http", "sse", "streamable-http"]),
    "command": st.text(max_size=8),
    "args": st.lists(st.text(max_size=6), max_size=3),
    "env": st.dictionaries(names, st.text(max_size=6), max_size=2),
    "url": st.sampled_from(["http://x", "https://x/mcp?k=v", ""]),
    "headers": st.dictionaries(names, st.text(max_size=6), max_size=2),
    "tool_timeout_ms": st.integers(-5, 4_000_000),
    "enabled": st.booleans(),
    "tool_overrides": st.dictionaries(names, st.fixed_dictionaries({}, optional={"read_only": values}), max_size=2),
}
field_values = st.sampled_from(FIELD_NAMES).flatmap(
    lambda field: st.tuples(st.just(field), plausible[field] | values if field in plausible else values)
)
entries = st.one_of(st.lists(field_values, max_size=6).map(dict), values)
servers = st.dictionaries(names, entries, max_size=4)
documents: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries({}, optional={"mcpServers": servers | values, "mcp_servers": servers | values, "x": values}),
    values,
    st.fixed_dictionaries(
        {},
        optional={
            "mcp_json": st.fixed_dictionaries(
                {},
                optional={
                    "enabled": st.lists(names, max_size=3) | values,
                    "enable_all": st.booleans() | values,
                    "disabled": st.lists(names, max_size=3) | values,
                    "approved": st.dictionaries(names, st.text(max_size=16), max_size=2) | values,
                },
            )
        },
    ),
)


def nested(depth: int, open_: str, close: str, core: str = "0") -> str:
    return open_ * depth + core + close * depth


hostile_texts = st.one_of(
    st.integers(1, 150_000).map(lambda depth: '{"mcpServers": {"s": ' + nested(depth, "[", "]") + "}}"),
    st.integers(1, 150_000).map(lambda depth: nested(depth, '{"a": ', "}")),
    st.integers(1, 150_000).map(lambda depth: "[" * depth),
    st.integers(1, 6_000).map(
        lambda digits: '{"mcpServers": {"s": {"command": "x", "tool_timeout_ms": ' + "7" * digits + "}}}"
    ),
    st.integers(1, 6_000).map(lambda digits: '{"x": 1.' + "5" * digits + "e" + "9" * min(digits, 400) + "}"),
    st.sampled_from(['{"x": NaN}', '{"x": Infinity}', "-Infinity", '{"a": "\\ud800"}', '"\\', "\ufeff{}"]),
)


def as_text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=True)


file_contents = st.one_of(
    st.none(),  # no file
    documents.map(as_text),
    documents.map(as_text).flatmap(lambda text: st.integers(0, len(text)).map(lambda cut: text[:cut])),
    hostile_texts,
    st.binary(max_size=64),
)


def parsed(content: str | bytes | None) -> tuple[bool, object]:
    """Whether a file with this content is meant to load, and what it holds: a loose oracle built
    on Python's json and the documented limits (1 MiB, 64 levels, 100 digits, no NaN)."""
    if content is None:
        return False, None
    try:
        text = content.decode("utf-8-sig") if isinstance(content, bytes) else content.removeprefix("\ufeff")
        document = json.loads(text, parse_constant=lambda name: 1 / 0)
    except (ValueError, RecursionError, ZeroDivisionError):
        return False, None
    return depth(document) <= MAX_NESTING_DEPTH and len(text) <= MAX_FILE_BYTES, document


def depth(document: object) -> int:
    """Nesting depth, without recursion (a long integer counts as too deep)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(document, 0)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, int) and len(str(abs(value))) > MAX_INTEGER_DIGITS:
            return MAX_NESTING_DEPTH + 1
        if isinstance(value, dict):
            stack.extend((item, level + 1) for item in value.values())  # type: ignore[misc]
        elif isinstance(value, list):
            stack.extend((item, level + 1) for item in value)  # type: ignore[misc]
        else:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
    return deepest


def has_servers(document: object) -> bool:
    if not isinstance(document, dict):
        return False
    fields = cast(dict[str, object], document)
    servers = fields.get("mcpServers", fields.get("mcp_servers"))
    return isinstance(servers, dict) and bool(cast(dict[str, object], servers))


def check_server(server: ServerConfig) -> None:
    assert isinstance(server.type, str) and server.type
    assert 1 <= server.tool_timeout_ms <= 3_600_000
    assert isinstance(server.enabled, bool)
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in server.env.items())
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in server.headers.items())
    assert len(server.fingerprint) == 16


@settings(max_examples=200, deadline=None)
@given(
    project=file_contents,
    user=file_contents,
    approvals=file_contents,
    constructor=st.dictionaries(names, entries, max_size=3),
    plugins=st.lists(st.tuples(names, servers | values), max_size=2),
    trust=st.sampled_from(["all", "approved"]),
)
def test_r_cfg_4_load_config_never_raises_and_every_bad_file_is_a_diagnostic(
    project: str | bytes | None,
    user: str | bytes | None,
    approvals: str | bytes | None,
    constructor: dict[str, Any],
    plugins: list[tuple[str, Any]],
    trust: str,
) -> None:
    """R-CFG-4/R-CFG-11: no input escapes load_config; unusable files are errors naming the file."""
    with tempfile.TemporaryDirectory() as directory:
        workdir, home = Path(directory) / "project", Path(directory) / "home"
        (workdir / ".wave").mkdir(parents=True)
        home.mkdir()
        files = {
            workdir / ".mcp.json": project,
            home / "mcp.json": user,
            workdir / ".wave" / "settings.local.json": approvals,
        }
        for path, content in files.items():
            if isinstance(content, bytes):
                path.write_bytes(content)
            elif content is not None:
                path.write_text(content, encoding="utf-8", errors="surrogatepass")
        loaded = load_config(
            workdir,
            home=home,
            constructor=constructor,
            plugins=plugins,
            trust=trust,
            environ={},  # type: ignore[arg-type]
        )
        assert isinstance(loaded, LoadedConfig)
        errors = {d.origin for d in loaded.diagnostics if d.severity is Severity.ERROR}
        project_usable, project_document = parsed(project)
        settings_read = trust == "approved" and project_usable and has_servers(project_document)
        for path, content in files.items():
            if path.name == "settings.local.json" and not settings_read:
                continue
            if content is not None and not parsed(content)[0]:
                assert str(path) in errors, (path, loaded.diagnostics)
    for server in loaded.servers.values():
        check_server(server)
    # Everything a host prints can be printed (escaped where it must be).
    for diagnostic in loaded.diagnostics:
        str(diagnostic).encode("utf-8", "backslashreplace")
    repr(loaded).encode("utf-8", "backslashreplace")
