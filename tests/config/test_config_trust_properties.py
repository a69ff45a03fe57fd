"""Property: an approval binds what an entry starts or dials, and nothing else (R-CFG-10, R-CFG-8).

Any change to ``command``, ``args``, an ``env`` value, a ``${VAR}`` expansion,
``cwd``, ``url`` or ``headers`` makes an approved entry "changed since
approval"; a change to ``enabled``, ``tool_timeout_ms`` or ``tool_overrides``
does not.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings, strategies as st

from wave_actors._config import ApprovalState, TrustStore, load_config

text = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=6)
names = st.text(st.characters(codec="ascii", categories=["Lu"]), min_size=1, max_size=4)
VARIABLE = "WAVE_VALUE"

stdio_entries = st.fixed_dictionaries(
    {
        "command": text,
        "args": st.lists(text, max_size=3),
        "env": st.dictionaries(names, text, max_size=3),
        "cwd": st.sampled_from(["/srv", "rel", "/tmp"]),
    }
)
remote_entries = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["http", "sse"]),
        "url": text.map(lambda host: f"https://{host}.example/mcp"),
        "headers": st.dictionaries(names, text, max_size=3),
    }
)

Entry = dict[str, Any]
Change = Callable[[Entry, dict[str, str], str], None]


def _set(field: str) -> Change:
    def change(entry: Entry, _: dict[str, str], value: str) -> None:
        entry[field] = entry.get(field, "") + value if field != "cwd" else f"/other/{value}"

    return change


def _append_arg(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["args"] = [*entry["args"], value]


def _change_first_arg(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["args"] = [entry["args"][0] + value, *entry["args"][1:]] if entry["args"] else [value]


def _env_value(entry: Entry, _: dict[str, str], value: str) -> None:
    env = dict(entry["env"])
    first = next(iter(env), "NEW")
    env[first] = env.get(first, "") + value
    entry["env"] = env


def _add_env(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["env"] = {**entry["env"], f"ADDED_{value}": value}


def _header_value(entry: Entry, _: dict[str, str], value: str) -> None:
    headers = dict(entry["headers"])
    first = next(iter(headers), "X-New")
    headers[first] = headers.get(first, "") + value
    entry["headers"] = headers


def _expansion(entry: Entry, environ: dict[str, str], value: str) -> None:
    environ[VARIABLE] += value  # the file is unchanged; what ${WAVE_VALUE} expands to is not


STDIO_INVALIDATING: dict[str, Change] = {
    "command": _set("command"),
    "args appended": _append_arg,
    "args changed": _change_first_arg,
    "env value": _env_value,
    "env added": _add_env,
    "cwd": _set("cwd"),
    "expansion": _expansion,
}
REMOTE_INVALIDATING: dict[str, Change] = {
    "url": _set("url"),
    "header value": _header_value,
    "expansion": _expansion,
}


def _enabled(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["enabled"] = not entry.get("enabled", True)


def _timeout(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["tool_timeout_ms"] = 1000 + len(value)


def _overrides(entry: Entry, _: dict[str, str], value: str) -> None:
    entry["tool_overrides"] = {value: {"read_only": True}}


KEEPING: dict[str, Change] = {"enabled": _enabled, "tool_timeout_ms": _timeout, "tool_overrides": _overrides}


def with_expansion(entry: Entry) -> Entry:
    """Put ``${WAVE_VALUE}`` where expansion happens: the command's last argument, or the URL's path."""
    if "url" in entry:
        return {**entry, "url": entry["url"] + "/${WAVE_VALUE}"}
    return {**entry, "args": [*entry["args"], "--value=${WAVE_VALUE}"]}


def still_approved(entry: Entry, change: Change, value: str) -> tuple[bool, ApprovalState]:
    """Approve ``entry``, apply ``change``, and tell whether ``approved`` mode loads it and its state."""
    with tempfile.TemporaryDirectory() as directory:
        workdir, home = Path(directory) / "project", Path(directory) / "home"
        workdir.mkdir()
        project = workdir / ".mcp.json"
        environ = {VARIABLE: "v"}
        project.write_text(json.dumps({"mcpServers": {"s": entry}}), encoding="utf-8")
        TrustStore(workdir, home=home, environ=dict(environ)).approve(["s"])
        changed = json.loads(json.dumps(entry))
        change(changed, environ, value)
        project.write_text(json.dumps({"mcpServers": {"s": changed}}), encoding="utf-8")
        loaded = load_config(workdir, home=home, trust="approved", environ=environ)
        state = TrustStore(workdir, home=home, environ=environ).read().server("s").state
        return "s" in loaded.servers, state


@settings(max_examples=60, deadline=None)
@given(stdio_entries.map(with_expansion), st.sampled_from(sorted(STDIO_INVALIDATING)), text)
def test_r_cfg_10_any_change_to_what_a_stdio_entry_starts_invalidates_its_approval(
    entry: Entry, change: str, value: str
) -> None:
    """R-CFG-10: command, args, env values, ${VAR} expansions and cwd are bound by the approval."""
    assert still_approved(entry, STDIO_INVALIDATING[change], value) == (False, ApprovalState.CHANGED)


@settings(max_examples=40, deadline=None)
@given(remote_entries.map(with_expansion), st.sampled_from(sorted(REMOTE_INVALIDATING)), text)
def test_r_cfg_10_any_change_to_what_a_remote_entry_dials_invalidates_its_approval(
    entry: Entry, change: str, value: str
) -> None:
    """R-CFG-10: url, header values and ${VAR} expansions are bound by the approval."""
    assert still_approved(entry, REMOTE_INVALIDATING[change], value) == (False, ApprovalState.CHANGED)


@settings(max_examples=40, deadline=None)
@given(st.one_of(stdio_entries, remote_entries).map(with_expansion), st.sampled_from(sorted(KEEPING)), text)
def test_r_cfg_10_enabled_timeout_and_overrides_do_not_invalidate_an_approval(
    entry: Entry, change: str, value: str
) -> None:
    """R-CFG-10: settings that change how a server is used, not what runs, keep the approval."""
    assert still_approved(entry, KEEPING[change], value) == (True, ApprovalState.APPROVED)
