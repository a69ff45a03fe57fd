"""Loading the merged configuration of one workdir (R-CFG-1..13).

:func:`load_config` reads every source, judges every entry on its own, then
lets precedence pick one definition per name. It never raises for what the
configuration says (R-CFG-4): a bad file or entry becomes a
:class:`~wave_actors._config.model.Diagnostic` and the rest loads.

Decisions where the specification is silent:

* Every entry of every source is validated, so a UI sees every mistake,
  including those in entries that lose to a higher source.
* A winning entry that is invalid still wins: the name is not loaded at all,
  rather than silently falling back to a lower source's (possibly quite
  different) server. The shadowed entries get a warning saying so.
* In ``approved`` trust mode an unapproved project entry is *not* a
  definition: it is neither validated nor expanded, and a user or plugin
  entry of the same name loads instead. Each gets an ``info`` diagnostic so a
  UI can say why it is missing (R-CFG-10). An entry approved at a
  fingerprint that no longer matches is no definition either, with a warning
  ("changed since approval", naming the changed fields). The verdicts are
  :mod:`wave_actors._config.trust`'s; the one write a load may make is there
  too: a trusted folder's newly enabled entry has its fingerprint recorded
  in the user's home.

Reading and merging are two steps (:func:`read_config_files`,
:func:`merge_config`), so that the sessions of one project, reloaded
together, merge their own sources over *one* reading of the files and never
disagree because a file changed between two readings (R-SCOPE-3).
* A constructor overlay (only ``tool_timeout_ms``, maybe ``enabled`` and
  ``tool_overrides``, R-CFG-1) applies to the highest-precedence lower entry
  of its name, valid or not: if that entry is invalid, the name is not
  loaded, as above. The loaded record keeps that entry's ``source``,
  ``origin`` and fingerprint, the connection's home, and names the overlaid
  fields in ``constructor_overrides``. An overlay with no lower entry (or
  only unapproved ones) overrides nothing: an error, and no server. An
  invalid overlay hides the name like any invalid winner.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, cast

import attrs

from wave_actors._config.converter import describe_value
from wave_actors._config.entry import OVERLAY_FIELDS, ParsedEntry, ParsedOverlay, is_overlay, parse_entry, parse_overlay
from wave_actors._config.merge import pick_winners
from wave_actors._config.model import Diagnostic, LoadedConfig, ServerConfig, Severity, Source
from wave_actors._config.sources import (
    SERVERS_KEY,
    SERVERS_KEY_ALIAS,
    SourceFile,
    default_home,
    project_file,
    read_source_file,
    resolve_workdir,
    servers_of_document,
    user_file,
)
from wave_actors._config.trust import (
    TRUST_MODES,
    ApprovalState,
    TrustInputs,
    TrustMode,
    read_trust_inputs,
    record_first_approvals,
)

__all__ = ["CONSTRUCTOR_ORIGIN", "ConfigFiles", "home_directory", "load_config", "merge_config", "read_config_files"]

logger = logging.getLogger(__name__)

CONSTRUCTOR_ORIGIN: Final = "constructor"
"""The origin recorded for entries passed by the host (R-CFG-1)."""


@attrs.frozen
class _Definition:
    name: str
    source: Source
    origin: str
    parsed: ParsedEntry | ParsedOverlay

    @property
    def valid(self) -> bool:
        if isinstance(self.parsed, ParsedOverlay):
            return self.parsed.overlay is not None
        return self.parsed.config is not None


def home_directory(home: Path | str | None) -> Path:
    """The absolute home directory: ``home`` with ``~`` expanded, or ``~/.wave``."""
    return Path(os.path.abspath(default_home() if home is None else Path(home).expanduser()))


@attrs.frozen
class ConfigFiles:
    """What one reading of a workdir's files found, before any session's own sources are merged over it.

    :param workdir: the resolved project directory.
    :param home: the absolute home directory.
    :param project: ``<workdir>/.mcp.json``.
    :param user: ``<home>/mcp.json``.
    :param trust: the wish list and the user's record, read for ``approved``
        mode when the project file has entries; ``None`` otherwise.
    """

    workdir: Path
    home: Path
    project: SourceFile
    user: SourceFile
    trust: TrustInputs | None = None


def read_config_files(workdir: Path, *, home: Path | str | None, trust: bool) -> ConfigFiles:
    """Read the project and user files of ``workdir`` and, for ``approved`` mode, what approves (R-CFG-10, R-CFG-11).

    Never raises for what the files say. Synchronous file I/O (and maybe a
    ``git`` run, :mod:`wave_actors._config.vcs`): call it in a worker thread.

    :param workdir: the *resolved* project directory; used as it is.
    :param home: the directory of the user file; default ``~/.wave``.
    :param trust: also read the trust inputs (when the project file has entries).
    """
    home_path = home_directory(home)
    project = read_source_file(project_file(workdir), Source.PROJECT)
    user = read_source_file(user_file(home_path), Source.USER)
    inputs = read_trust_inputs(home_path, workdir) if trust and project.entries else None
    return ConfigFiles(workdir, home_path, project, user, inputs)


def load_config(
    workdir: Path | str,
    *,
    home: Path | str | None = None,
    constructor: Mapping[str, Mapping[str, object]] | None = None,
    plugins: Iterable[tuple[str, Mapping[str, Mapping[str, object]]]] = (),
    trust: TrustMode = "all",
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Load and merge the MCP server configuration of ``workdir`` (R-CFG-1..8, R-CFG-10..12).

    Sources, highest precedence first: ``constructor``, ``<workdir>/.mcp.json``,
    ``<home>/mcp.json``, ``plugins``. For each name the highest source's entry
    wins whole, except that a constructor entry holding only ``tool_timeout_ms``
    (and maybe ``enabled``, ``tool_overrides``) sets those fields on the
    highest lower entry of its name (see :mod:`wave_actors._config.entry`).
    Missing files are fine; unreadable, oversized or malformed ones, and
    invalid entries, are skipped and reported in :attr:`LoadedConfig.diagnostics`.

    Synchronous, without global state: it reads files and may run ``git``
    (:mod:`wave_actors._config.vcs`), so an event loop should call it in a
    worker thread (``trio.to_thread.run_sync``). The file size limit is what
    keeps such a thread from holding the GIL long enough to stall the loop.
    In ``approved`` mode it may write one file: the user's approvals record,
    when a trusted folder enables an entry not approved yet (R-CFG-10).

    :param workdir: the project directory; resolved (absolute, no symlinks)
        and part of every fingerprint (R-CFG-8).
    :param home: the directory of the user file and of the approvals record;
        default ``~/.wave``.
    :param constructor: entries given by the host; literal, no ``${VAR}``
        expansion (R-CFG-5).
    :param plugins: ``(plugin name, servers)`` pairs, in priority order
        among themselves; literal, no ``${VAR}`` expansion. ``servers`` is
        ``{name: entry}``, or a plugin file's ``{"mcpServers": {name: entry}}``
        as it is (``mcp_servers`` too; other keys ignored, as in a file).
    :param trust: ``"approved"`` loads a project entry only when the approvals
        record in ``home`` approves it at its current fingerprint (R-CFG-10).
    :param environ: variables for ``${VAR}`` in the project and user files;
        default :data:`os.environ`.
    :raises ValueError: for an unknown ``trust`` mode (a programming error,
        not a configuration one).
    """
    if trust not in TRUST_MODES:
        raise ValueError(f"trust must be one of {TRUST_MODES}, got {trust!r}")
    files = read_config_files(resolve_workdir(workdir), home=home, trust=trust == "approved")
    return merge_config(files, constructor=constructor, plugins=plugins, trust=trust, environ=environ)


def merge_config(
    files: ConfigFiles,
    *,
    constructor: Mapping[str, Mapping[str, object]] | None,
    plugins: Iterable[tuple[str, Mapping[str, Mapping[str, object]]]],
    trust: TrustMode,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Merge one session's own sources over a reading of the files; see :func:`load_config` (R-CFG-1, R-CFG-10).

    :param files: from :func:`read_config_files`, read with ``trust=True`` for ``"approved"``.
    :raises ValueError: an unknown ``trust`` mode, or ``"approved"`` over files
        read without the trust inputs.
    """
    if trust not in TRUST_MODES:
        raise ValueError(f"trust must be one of {TRUST_MODES}, got {trust!r}")
    project, resolved = files.project, files.workdir
    inputs = files.trust if trust == "approved" else None
    if trust == "approved" and project.entries and inputs is None:
        raise ValueError("approved trust mode needs the files read with trust=True")
    variables: Mapping[str, str] = os.environ if environ is None else environ
    diagnostics: list[Diagnostic] = []
    definitions: list[_Definition] = []

    def parse(name: str, entry: object, source: Source, origin: str) -> ParsedEntry:
        return parse_entry(name, entry, source=source, origin=origin, workdir=resolved, environ=variables)

    for name, entry in (constructor or {}).items():
        if is_overlay(entry):
            parsed: ParsedEntry | ParsedOverlay = parse_overlay(
                name, entry, source=Source.CONSTRUCTOR, origin=CONSTRUCTOR_ORIGIN
            )
        else:
            parsed = parse(name, entry, Source.CONSTRUCTOR, CONSTRUCTOR_ORIGIN)
        definitions.append(_Definition(name, Source.CONSTRUCTOR, CONSTRUCTOR_ORIGIN, parsed))

    diagnostics.extend(project.diagnostics)
    if inputs is not None:
        diagnostics.extend(inputs.diagnostics)
    loading: dict[str, ParsedEntry] = {}
    first_seen: dict[str, ServerConfig] = {}

    def not_loaded(name: str, reason: str) -> None:
        message = f"not loaded: {reason} (project trust mode 'approved')"
        diagnostics.append(Diagnostic(Severity.INFO, Source.PROJECT, project.origin, message, name))

    for name, entry in project.entries.items():
        refused = inputs.before_parsing(name) if inputs is not None else None
        if refused is not None:
            not_loaded(name, refused.reason)
            continue
        parsed = parse(name, entry, Source.PROJECT, project.origin)
        if inputs is not None and parsed.config is not None:
            verdict = inputs.verdict(name, parsed.config)
            if verdict.state is not ApprovalState.APPROVED:
                # Like an unapproved entry, a changed one is no definition: a user entry of the name may load.
                diagnostics.extend(parsed.diagnostics)
                diagnostics.append(Diagnostic(Severity.WARNING, Source.PROJECT, project.origin, verdict.reason, name))
                continue
            if verdict.first_seen:
                first_seen[name] = parsed.config
        loading[name] = parsed
    if inputs is not None and first_seen:
        recorded, problems = record_first_approvals(inputs, first_seen)
        diagnostics.extend(problems)
        for name in first_seen.keys() - recorded:
            del loading[name]
            not_loaded(name, "its approval could not be recorded")
    for name, parsed in loading.items():
        definitions.append(_Definition(name, Source.PROJECT, project.origin, parsed))

    user = files.user
    diagnostics.extend(user.diagnostics)
    for name, entry in user.entries.items():
        definitions.append(_Definition(name, Source.USER, user.origin, parse(name, entry, Source.USER, user.origin)))

    for plugin, declared in plugins:
        entries, problems = _plugin_entries(plugin, declared)
        diagnostics.extend(problems)
        for name, entry in entries.items():
            definitions.append(_Definition(name, Source.PLUGIN, plugin, parse(name, entry, Source.PLUGIN, plugin)))

    by_name: dict[str, list[_Definition]] = {}
    for definition in definitions:
        diagnostics.extend(definition.parsed.diagnostics)
        by_name.setdefault(definition.name, []).append(definition)
    servers: dict[str, ServerConfig] = {}
    for name, winner in pick_winners(definitions).items():
        config, problems = _resolve(name, winner, by_name[name])
        diagnostics.extend(problems)
        if config is not None:
            servers[name] = config
    logger.debug("loaded %d MCP server(s) for %s with %d diagnostic(s)", len(servers), resolved, len(diagnostics))
    return LoadedConfig(
        str(resolved),
        MappingProxyType(servers),
        tuple(diagnostics),
        user_file=user.origin,
        project_file=project.origin,
    )


def _plugin_entries(plugin: str, declared: object) -> tuple[Mapping[str, object], tuple[Diagnostic, ...]]:
    """A plugin's ``{name: entry}``: given bare, or wrapped as a plugin's file has it (R-CFG-2).

    A plugin's ``.mcp.json`` (or its manifest) holds ``{"mcpServers": {name: entry}}``, other keys
    beside it; a host may pass that document as it is, or the object under the key. A mapping
    with a ``mcpServers`` or ``mcp_servers`` key is read as the document, exactly as a file is
    (:func:`~wave_actors._config.sources.servers_of_document`), so no server is ever named
    ``mcpServers``; any other mapping is the servers themselves.
    """
    # Hosts may pass parsed JSON as is, whatever the annotation says.
    if not isinstance(declared, Mapping):
        message = f"a plugin's servers must be an object of {{name: entry}}, got {describe_value(declared)}"
        return {}, (Diagnostic(Severity.ERROR, Source.PLUGIN, plugin, f"{message}; skipped"),)
    servers = cast(Mapping[str, object], declared)
    if SERVERS_KEY in servers or SERVERS_KEY_ALIAS in servers:
        return servers_of_document(servers, Source.PLUGIN, plugin, what="plugin")
    return servers, ()


def _resolve(name: str, winner: _Definition, mine: list[_Definition]) -> tuple[ServerConfig | None, list[Diagnostic]]:
    """The server loaded for ``name`` and what to tell about the definitions that lost.

    :param mine: every definition of ``name``.
    """
    problems: list[Diagnostic] = []
    overlay = winner.parsed.overlay if isinstance(winner.parsed, ParsedOverlay) else None
    overlaid_by = winner
    if overlay is not None:
        lower = pick_winners(definition for definition in mine if definition is not overlaid_by)
        if name not in lower:
            message = (
                f"overrides nothing: an entry holding only {', '.join(sorted(OVERLAY_FIELDS))} sets those fields "
                "on the project, user or plugin entry of the same name, and there is none; the entry was skipped"
            )
            return None, [Diagnostic(Severity.ERROR, winner.source, winner.origin, message, name)]
        winner = lower[name]
    for loser in mine:
        if loser is not winner and loser is not overlaid_by:
            problems.extend(_shadowing(loser, winner))
    config = winner.parsed.config if isinstance(winner.parsed, ParsedEntry) else None
    if config is not None and overlay is not None:
        config = overlay.apply(config)
    return config, problems


def _shadowing(loser: _Definition, winner: _Definition) -> Iterable[Diagnostic]:
    """What to tell about a definition that lost, when losing may surprise."""
    where = f"{winner.source.value} entry ({winner.origin})"
    if winner.source is loser.source:
        yield Diagnostic(
            Severity.WARNING,
            loser.source,
            loser.origin,
            f"not used: the {where} of the same name comes first",
            loser.name,
        )
    elif not winner.valid and loser.valid:
        yield Diagnostic(
            Severity.WARNING,
            loser.source,
            loser.origin,
            f"not used: the {where} of the same name takes precedence but is invalid, "
            "so no server of this name is loaded",
            loser.name,
        )
