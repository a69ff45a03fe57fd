"""Loading the merged configuration of one workdir (R-CFG-1..12).

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
  UI can say why it is missing (R-CFG-10). An entry approved with a
  fingerprint that no longer matches is no definition either, with a warning
  ("changed since approval").
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
from wave_actors._config.sources import default_home, project_file, read_source_file, resolve_workdir, user_file
from wave_actors._config.trust import TRUST_MODES, TrustMode, read_project_approval

__all__ = ["CONSTRUCTOR_ORIGIN", "load_config"]

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

    :param workdir: the project directory; resolved (absolute, no symlinks)
        and part of every fingerprint (R-CFG-8).
    :param home: the directory of the user file; default ``~/.wave``.
    :param constructor: entries given by the host; literal, no ``${VAR}``
        expansion (R-CFG-5).
    :param plugins: ``(plugin name, {name: entry})`` pairs, in priority order
        among themselves; literal, no ``${VAR}`` expansion.
    :param trust: ``"approved"`` loads project entries only when approved in
        ``<workdir>/.wave/settings.local.json`` (R-CFG-10).
    :param environ: variables for ``${VAR}`` in the project and user files;
        default :data:`os.environ`.
    :raises ValueError: for an unknown ``trust`` mode (a programming error,
        not a configuration one).
    """
    if trust not in TRUST_MODES:
        raise ValueError(f"trust must be one of {TRUST_MODES}, got {trust!r}")
    resolved = resolve_workdir(workdir)
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

    project = read_source_file(project_file(resolved), Source.PROJECT)
    diagnostics.extend(project.diagnostics)
    approval = None
    if trust == "approved" and project.entries:
        approval, problems = read_project_approval(resolved)
        diagnostics.extend(problems)
    for name, entry in project.entries.items():
        refusal = approval.refusal(name) if approval is not None else None
        if refusal is not None:
            message = f"not loaded: {refusal} (project trust mode 'approved')"
            diagnostics.append(Diagnostic(Severity.INFO, Source.PROJECT, project.origin, message, name))
            continue
        parsed = parse(name, entry, Source.PROJECT, project.origin)
        change = None
        if approval is not None and parsed.config is not None:
            change = approval.change_since_approval(name, parsed.config.fingerprint)
        if change is not None:
            # Like an unapproved entry, a changed one is no definition: a user entry of the name may load.
            diagnostics.extend(parsed.diagnostics)
            diagnostics.append(Diagnostic(Severity.WARNING, Source.PROJECT, project.origin, change, name))
            continue
        definitions.append(_Definition(name, Source.PROJECT, project.origin, parsed))

    user_path = Path(os.path.abspath(user_file(default_home() if home is None else Path(home).expanduser())))
    user = read_source_file(user_path, Source.USER)
    diagnostics.extend(user.diagnostics)
    for name, entry in user.entries.items():
        definitions.append(_Definition(name, Source.USER, user.origin, parse(name, entry, Source.USER, user.origin)))

    for plugin, declared in plugins:
        # Hosts may pass parsed JSON as is, whatever the annotation says.
        if not isinstance(declared, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            message = f"a plugin's servers must be an object of {{name: entry}}, got {describe_value(declared)}"
            diagnostics.append(Diagnostic(Severity.ERROR, Source.PLUGIN, plugin, f"{message}; skipped"))
            continue
        for name, entry in cast(Mapping[str, object], declared).items():
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
        user_file=str(user_path),
        project_file=str(project_file(resolved)),
    )


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
