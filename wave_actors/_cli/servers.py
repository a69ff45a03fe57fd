"""``wave-actors servers``: the merged configuration, its diagnostics and the cached tools, dialing nothing (R-CLI).

Every server is shown as a new session would show it before its first dial:
its entry (source, type, enabled, origin), ``disconnected`` or ``disabled``,
its login (``needs login``, ``logged in (expires ...)``: from the records
under ``<home>/oauth``, never the credential store or a token, R-AUTH-3),
the tools the snapshot cache recorded at its last connect (R-CACHE-2), and
the warnings of that listing: the tools it skipped as invalid (R-TOOL-9).
Then each project entry's standing in ``--trust approved`` (R-CFG-10):
approved, changed since approval, pending or disabled, whatever mode the
listing itself loaded in. Last, what protects against the death of the
commands that dial (R-KILL-7): their host's watchdog, the parent-death
signal, subreaper mode, and whether each server family runs in a cgroup of
its own (R-KILL-10; probed by making and removing a directory in this
process's cgroup, nothing is started).

This command must start fast and spawn nothing, so it imports no MCP SDK
code: it reads the configuration and the cache, and asks the catalog
(:func:`~wave_actors._catalog.statuses_before_dialing`) for the statuses,
none of which touch the SDK (``trio`` comes with the package's own import,
which costs a fraction of the SDK's). A test runs the command and checks
that no MCP SDK module was imported and no process started.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs

from wave_actors._auth import LoginState, LoginStatus
from wave_actors._cli.arguments import home, trust, workdir
from wave_actors._cli.trust import trust_block, trust_document
from wave_actors._config import (
    Diagnostic,
    LoadedConfig,
    ProjectTrust,
    ServerConfig,
    TransportType,
    TrustStore,
    load_config,
)
from wave_actors._console import EXIT_OK, printable, table, write_json

if TYPE_CHECKING:
    from wave_actors._status import ServerStatus

__all__ = ["servers"]


def _diagnostic_document(diagnostic: Diagnostic) -> dict[str, object]:
    return {
        "severity": diagnostic.severity.value,
        "source": diagnostic.source.value,
        "origin": diagnostic.origin,
        "server": diagnostic.server,
        "field": diagnostic.field,
        "message": diagnostic.message,
    }


def _configured_state(config: ServerConfig) -> str:
    return "disconnected" if config.enabled else "disabled"


def _logins(configs: Sequence[ServerConfig], home_directory: Path | None) -> dict[str, LoginStatus]:
    """Each remote server's login, from the records under ``<home>/oauth``: no keyring, no token (R-AUTH-3)."""
    from wave_actors._auth import Credentials

    # The records are the same whichever store keeps the secrets, and reading them never touches the store.
    records = Credentials(home_directory, "file")
    remote = (TransportType.HTTP.value, TransportType.SSE.value)
    return {
        config.name: records.status_blocking(config.name, config.url if config.type in remote else None)
        for config in configs
    }


def _login_document(status: LoginStatus) -> dict[str, object] | None:
    if status.state is LoginState.NONE:
        return None
    return {
        "state": status.state.value,
        "reason": status.reason,
        "expires_at": status.expires_at,
        "refreshable": status.refreshable,
        "scope": status.scope,
    }


def _statuses_before_dialing(loaded: LoadedConfig, home_directory: Path | None) -> dict[str, ServerStatus]:
    """Every server as a new session shows it: disconnected, with the tools of the snapshot cache (R-CACHE-2)."""
    from wave_actors._cache import cache_directory, read_cache
    from wave_actors._catalog import statuses_before_dialing

    keys = [(config.name, config.fingerprint) for config in loaded.servers.values()]
    cache = read_cache(cache_directory(home_directory), workdir=loaded.workdir, keys=keys)
    return {status.name: status for status in statuses_before_dialing(loaded.servers.values(), cache)}


def _cached_document(status: ServerStatus) -> dict[str, object]:
    connection = status.connection
    return {
        "tools": [tool.name for tool in status.tools],
        "tools_cached": status.tools_cached,
        "last_connected": status.last_connected,
        "connection": None if connection is None else {**attrs.asdict(connection), "display": connection.display},
        "warnings": list(status.warnings),
    }


def _cached_tools_block(statuses: Sequence[ServerStatus]) -> str:
    lines = ["cached tools (listed at the server's last connect; not connected now):"]
    for status in statuses:
        if status.tools_cached:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.last_connected or 0))
            names = ", ".join(tool.tool for tool in status.tools) or "no tools"
            lines.append(f"  {status.name} ({len(status.tools)} at {when}): {names}")
    return "\n".join(lines) if len(lines) > 1 else ""


def _warnings_block(statuses: Sequence[ServerStatus]) -> str:
    lines = ["warnings (tools the server's last listing skipped as invalid):"]
    lines.extend(f"  {status.name}: {warning}" for status in statuses for warning in status.warnings)
    return "\n".join(lines) if len(lines) > 1 else ""


def _host_death_document() -> dict[str, bool]:
    """The host-death defences the commands that dial run with: a Host's defaults (R-KILL-7).

    Read from the platform without starting anything: ``servers`` itself runs no host.
    """
    from wave_actors._watchdog.guard import default_protection

    protection = default_protection()
    return {
        "watchdog": protection.watchdog,
        "parent_death_signal": protection.parent_death_signal,
        "subreaper": protection.subreaper,
        "cgroups": protection.cgroups,
    }


def _descriptors_document() -> dict[str, int | None]:
    """This process's file descriptors: what a dialing command could hold, and the limit (``ulimit -n``)."""
    from wave_actors._family.descriptors import STDIO_SERVER_DESCRIPTORS, file_descriptors

    usage = file_descriptors()
    return {
        "in_use": usage.in_use,
        "soft_limit": usage.soft_limit,
        "hard_limit": usage.hard_limit,
        "per_stdio_server": STDIO_SERVER_DESCRIPTORS,
        "stdio_servers_left": usage.stdio_servers_left,
    }


def _descriptors_line(document: dict[str, int | None]) -> str:
    def shown(value: int | None) -> str:
        return "unlimited" if value is None else f"{value:,}"

    return (
        f"file descriptors: {shown(document['in_use'])} in use, limit {shown(document['soft_limit'])} "
        f"(`ulimit -n`; hard {shown(document['hard_limit'])}); room for {shown(document['stdio_servers_left'])} "
        f"more stdio servers at {document['per_stdio_server']} each"
    )


def _host_death_line(document: dict[str, bool]) -> str:
    labels = {
        "watchdog": "watchdog",
        "parent_death_signal": "parent-death signal",
        "subreaper": "subreaper",
        "cgroups": "a cgroup per server",
    }
    words = ", ".join(f"{labels[name]} {'on' if on else 'off'}" for name, on in document.items())
    return f"if the command dies (tools, call, watch, working-set): {words}"


def servers(arguments: argparse.Namespace, out: TextIO) -> int:
    """List the merged configuration (a table, or ``--json``) and its diagnostics; dial nothing.

    :param arguments: the parsed command line.
    :param out: where the listing goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: ``--workdir`` is not a directory (exit 2).
    """
    loaded: LoadedConfig = load_config(workdir(arguments), home=home(arguments), trust=trust(arguments))
    configs = [loaded.servers[name] for name in sorted(loaded.servers)]
    statuses = _statuses_before_dialing(loaded, home(arguments))
    logins = _logins(configs, home(arguments))
    project: ProjectTrust = TrustStore(loaded.workdir, home=home(arguments)).read()
    if arguments.json:
        write_json(
            {
                "workdir": loaded.workdir,
                "servers": [
                    {
                        "name": config.name,
                        "source": config.source.value,
                        "origin": config.origin,
                        "type": config.type,
                        "enabled": config.enabled,
                        "state": _configured_state(config),
                        "tool_timeout_ms": config.tool_timeout_ms,
                        "fingerprint": config.fingerprint,
                        "login": _login_document(logins[config.name]),
                        **_cached_document(statuses[config.name]),
                    }
                    for config in configs
                ],
                "diagnostics": [_diagnostic_document(diagnostic) for diagnostic in loaded.diagnostics],
                "project_trust": trust_document(project),
                "host_death": _host_death_document(),
                "file_descriptors": _descriptors_document(),
            },
            out,
        )
        return EXIT_OK
    if configs:
        rows = [
            [
                config.name,
                config.source.value,
                config.type,
                "yes" if config.enabled else "no",
                _configured_state(config),
                logins[config.name].display or "-",
                config.origin,
            ]
            for config in configs
        ]
        out.write(table(["NAME", "SOURCE", "TYPE", "ENABLED", "STATE", "LOGIN", "ORIGIN"], rows) + "\n")
        listed = [statuses[config.name] for config in configs]
        for block in (_cached_tools_block(listed), _warnings_block(listed)):
            if block:
                out.write(f"\n{printable(block)}\n")
    else:
        out.write(f"no MCP servers configured for {printable(loaded.workdir)}\n")
    if project.servers or project.unused_approvals:
        out.write(f"\n{trust_block(project)}\n")
    if loaded.diagnostics:
        out.write("\ndiagnostics:\n")
        for diagnostic in loaded.diagnostics:
            out.write(f"  {printable(str(diagnostic))}\n")
    out.write(f"\n{_host_death_line(_host_death_document())}\n")
    out.write(f"{_descriptors_line(_descriptors_document())}\n")
    return EXIT_OK
