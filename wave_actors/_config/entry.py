"""One configuration entry, from raw JSON to a :class:`ServerConfig` (R-CFG-2, R-CFG-3, R-CFG-5..8).

The steps, in order:

1. type-check the fields (:mod:`wave_actors._config.converter`);
2. decide the transport: ``type`` (or its synonym ``transport``, the user
   guide's spelling) as written (``streamable-http`` is read as ``http``),
   else ``stdio`` when there is a ``command`` and ``http`` when there is a
   ``url`` -- never ``sse`` by guess (R-CFG-2). An unknown ``type`` is kept as
   written, without a diagnostic: it fails when dialed (R-CFG-3). ``type`` and
   ``transport`` both given and meaning different transports reject the entry
   with a diagnostic naming both values;
3. check that the fields fit the transport;
4. expand ``${VAR}`` in file sources (R-CFG-5);
5. resolve ``cwd`` and compute the fingerprint (R-CFG-8).

Decisions where the specification is silent:

* Unknown fields are ignored with a warning (a typo such as ``"timeout"``
  for ``"tool_timeout_ms"`` would otherwise go unnoticed); the entry still loads.
  The warning suggests the field that was probably meant (``"comand"``: did you
  mean ``"command"``?), and when the entry is skipped for lacking that field
  (no ``command`` nor ``url``), the error that skips it says so too: the error
  is what a reader looks for, the warning may not be read.
* ``command`` *and* ``url`` without ``type`` is ambiguous and is rejected
  rather than guessed. With a known ``type``, fields of the other kind
  (``url`` on a stdio server, ``args`` on an http one) are dropped with a
  warning so that they cannot change the fingerprint; with an unknown type
  everything is kept.
* Expansion applies to the project and user files only. Constructor entries
  are literal (R-CFG-5) and so are plugin entries: a plugin ships its
  configuration, it should not pick up whatever the user's shell exports.
* A relative ``cwd`` is resolved against the workdir, for every source: a
  host serving many workdirs has no meaningful "current directory" of its own.
  ``cwd`` is not ``${VAR}``-expanded (R-CFG-5 does not list it).
* Diagnostics never show the values of ``env``, ``headers`` or ``url``, not
  even when they have the wrong type: ``"headers": "Authorization: Bearer ..."``
  is "a string" (R-CFG-12).
* ``oauth`` (R-AUTH-1) is a remote field, dropped with a warning on a stdio
  entry. Its URLs must be absolute ``http(s)`` URLs (an ``http`` redirect URI
  only on a loopback host), its scopes single words, and its grant one of
  the two the library drives; a ``client_secret`` needs a ``client_id``, and
  ``client_credentials`` needs a ``client_id`` with a ``client_secret`` or a
  ``private_key``. Every string in it is ``${VAR}``-expanded in file
  sources, like ``headers``; it is part of the fingerprint only when present,
  so entries without one keep theirs.
* ``shutdown`` (R-KILL-9) is a stdio field: an http or sse server has no
  process to stop, so there it is dropped with a warning like ``args``. It is
  not part of the fingerprint, so changing it never restarts a server: a
  running server keeps the graces it was connected with until its next
  connect or reconnect. An unknown setting inside it is ignored with a warning.

Overlays (R-CFG-1's exception): a *constructor* entry whose fields are
``tool_timeout_ms`` and, optionally, ``enabled`` and ``tool_overrides``, and
nothing else, is not a server of its own. :func:`parse_overlay` validates it
like any entry and :meth:`Overlay.apply` sets those fields on the same-named
entry of a lower source, whose connection definition, source, origin and
fingerprint are kept; :attr:`ServerConfig.constructor_overrides` lists what the
overlay set. The loader decides what to overlay (:mod:`wave_actors._config.loader`).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TypeGuard, cast
from urllib.parse import urlsplit

import attrs

from wave_actors._config.converter import (
    ENTRY_FIELDS,
    OAUTH_FIELDS,
    SHUTDOWN_FIELDS,
    EntryInvalid,
    RawEntry,
    RawOAuth,
    describe_value,
    structure_strictly,
)
from wave_actors._config.expand import expand_variables
from wave_actors._config.fingerprint import connection_fingerprint
from wave_actors._config.model import (
    Diagnostic,
    OAuthGrant,
    OAuthSettings,
    ServerConfig,
    Severity,
    ShutdownGraces,
    Source,
    ToolOverride,
    TransportType,
)
from wave_actors._config.redact import redact_url
from wave_actors._config.sources import resolve_workdir
from wave_actors._errors import ConfigError

__all__ = [
    "EXPANDED_SOURCES",
    "OVERLAY_FIELDS",
    "Overlay",
    "ParsedEntry",
    "ParsedOverlay",
    "is_overlay",
    "parse_entry",
    "parse_overlay",
    "server_config",
]

logger = logging.getLogger(__name__)

EXPANDED_SOURCES: Final = frozenset({Source.PROJECT, Source.USER})
"""Sources whose entries get ``${VAR}`` expansion (R-CFG-5); the others are literal."""

_TYPE_ALIASES: Final = {"streamable-http": TransportType.HTTP.value}
_STDIO_FIELDS: Final = ("command", "args", "env", "cwd", "shutdown")
_REMOTE_FIELDS: Final = ("url", "headers", "oauth")
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})
_OVERRIDE_FIELDS: Final = frozenset(field.name for field in attrs.fields(ToolOverride))
_SUGGESTIONS: Final = {
    "timeout": "tool_timeout_ms",
    "disabled": "enabled",
    "cmd": "command",
    "arguments": "args",
    "environment": "env",
    "uri": "url",
    "endpoint": "url",
}
_SKIPPED: Final = "; the entry was skipped"

OVERLAY_FIELDS: Final = frozenset({"tool_timeout_ms", "enabled", "tool_overrides"})
"""The fields a constructor overlay may hold; ``tool_timeout_ms`` is the one it must hold (R-CFG-1)."""


@attrs.frozen
class ParsedEntry:
    """What became of one entry.

    :param config: the loaded entry, or ``None`` when it was rejected.
    :param diagnostics: why it was rejected (errors), or what may not be as
        meant (warnings); a loaded entry may have warnings.
    """

    config: ServerConfig | None
    diagnostics: tuple[Diagnostic, ...] = ()


@attrs.frozen
class Overlay:
    """What a constructor entry holding only ``tool_timeout_ms`` (and maybe
    ``enabled``, ``tool_overrides``) changes on the same-named lower entry (R-CFG-1).

    :param tool_timeout_ms: always set by an overlay.
    :param enabled: ``None`` when the overlay does not say.
    :param tool_overrides: ``None`` when the overlay does not say.
    """

    tool_timeout_ms: int
    enabled: bool | None = None
    tool_overrides: Mapping[str, ToolOverride] | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The names of the fields this overlay sets, in alphabetical order."""
        given = {"enabled": self.enabled, "tool_overrides": self.tool_overrides}
        return tuple(sorted(["tool_timeout_ms", *(name for name, value in given.items() if value is not None)]))

    def apply(self, config: ServerConfig) -> ServerConfig:
        """``config`` with this overlay's fields; connection, source, origin and fingerprint unchanged.

        :param config: the lower source's entry of the same name.
        """
        return attrs.evolve(
            config,
            tool_timeout_ms=self.tool_timeout_ms,
            enabled=config.enabled if self.enabled is None else self.enabled,
            tool_overrides=config.tool_overrides if self.tool_overrides is None else self.tool_overrides,
            constructor_overrides=self.fields,
        )


@attrs.frozen
class ParsedOverlay:
    """What became of one overlay entry.

    :param overlay: the overlay, or ``None`` when it was rejected.
    :param diagnostics: why it was rejected, or what was ignored.
    """

    overlay: Overlay | None
    diagnostics: tuple[Diagnostic, ...] = ()


class _Rejected(Exception):
    """The entry cannot be loaded; the error diagnostics are already recorded."""


@attrs.define
class _Report:
    """Collects one entry's diagnostics."""

    name: str
    source: Source
    origin: str
    diagnostics: list[Diagnostic] = attrs.field(factory=list[Diagnostic])

    def warn(self, message: str, field: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(Severity.WARNING, self.source, self.origin, message, self.name, field))

    def error(self, message: str, field: str | None = None) -> None:
        self.diagnostics.append(
            Diagnostic(Severity.ERROR, self.source, self.origin, message + _SKIPPED, self.name, field)
        )

    def reject(self, message: str, field: str | None = None) -> _Rejected:
        self.error(message, field)
        return _Rejected()


def parse_entry(
    name: str,
    entry: object,
    *,
    source: Source,
    origin: str,
    workdir: Path,
    environ: Mapping[str, str],
) -> ParsedEntry:
    """Validate, expand and fingerprint one entry; never raises for its content (R-CFG-4).

    :param name: the server's name (the entry's key).
    :param entry: the entry as parsed from JSON or given by the host.
    :param source: decides whether ``${VAR}`` is expanded (:data:`EXPANDED_SOURCES`).
    :param origin: the file path or plugin name, for diagnostics and the record.
    :param workdir: the *resolved* project directory (see
        :func:`~wave_actors._config.sources.resolve_workdir`).
    :param environ: the variables ``${VAR}`` expands from.
    """
    report = _Report(name, source, origin)
    try:
        config = _parse(name, entry, source, origin, workdir, environ, report)
    except _Rejected:
        return ParsedEntry(None, tuple(report.diagnostics))
    return ParsedEntry(config, tuple(report.diagnostics))


def is_overlay(entry: object) -> TypeGuard[Mapping[object, object]]:
    """Whether a constructor entry only adjusts a lower entry: ``tool_timeout_ms`` and no other
    field than ``enabled`` and ``tool_overrides`` (R-CFG-1).

    :param entry: the entry as given by the host.
    """
    if not isinstance(entry, Mapping):
        return False
    fields = set(cast(Mapping[object, object], entry))
    return "tool_timeout_ms" in fields and fields <= OVERLAY_FIELDS


def parse_overlay(name: str, entry: Mapping[object, object], *, source: Source, origin: str) -> ParsedOverlay:
    """Validate an entry for which :func:`is_overlay` holds; never raises for its content (R-CFG-1, R-CFG-7).

    :param name: the server's name.
    :param entry: the overlay's fields.
    :param source: where it was given (the constructor).
    :param origin: for the diagnostics.
    """
    report = _Report(name, source, origin)
    _warn_unknown_fields(entry, report)
    try:
        raw = structure_strictly({str(key): value for key, value in entry.items()}, RawEntry)
    except EntryInvalid as invalid:
        for problem in invalid.problems:
            report.error(problem.message, problem.path)
        return ParsedOverlay(None, tuple(report.diagnostics))
    overlay = Overlay(
        raw.tool_timeout_ms,
        enabled=raw.enabled if "enabled" in entry else None,
        tool_overrides=raw.tool_overrides,  # null counts as not given, as for any entry
    )
    return ParsedOverlay(overlay, tuple(report.diagnostics))


def server_config(
    name: str,
    entry: Mapping[str, object],
    *,
    source: Source,
    origin: str,
    workdir: Path | str,
    environ: Mapping[str, str] | None = None,
) -> ServerConfig:
    """Build one entry, or say exactly why it cannot be built (R-CFG-2..8).

    For hosts that add or replace a single entry (R-STORE-3, validation before
    write) and for constructor entries. The rules are those of
    :func:`~wave_actors._config.load_config`; warnings (an unset ``${VAR}``, an
    ignored field) do not fail the entry and are logged.

    :param name: the server's name.
    :param entry: the entry, as it would appear under ``mcpServers``.
    :param source: where it will live; ``PROJECT`` and ``USER`` get ``${VAR}``
        expansion, the others are literal (R-CFG-5).
    :param origin: the file path, plugin name or ``"constructor"``.
    :param workdir: the project directory; part of the fingerprint (R-CFG-8).
    :param environ: variables for expansion; default :data:`os.environ`.
    :raises ConfigError: naming the server, origin, field and value of every
        problem that prevents loading the entry.
    """
    parsed = parse_entry(
        name,
        entry,
        source=source,
        origin=origin,
        workdir=resolve_workdir(workdir),
        environ=os.environ if environ is None else environ,
    )
    for diagnostic in parsed.diagnostics:
        if diagnostic.severity is not Severity.ERROR:
            logger.warning("%s", diagnostic)
    if parsed.config is None:
        errors = [
            (f"field {d.field!r}: " if d.field else "") + d.message.removesuffix(_SKIPPED)
            for d in parsed.diagnostics
            if d.severity is Severity.ERROR
        ]
        raise ConfigError(f"invalid MCP server entry {name!r} in {origin}: " + "; ".join(errors))
    return parsed.config


def _parse(
    name: str,
    entry: object,
    source: Source,
    origin: str,
    workdir: Path,
    environ: Mapping[str, str],
    report: _Report,
) -> ServerConfig:
    if not name:
        raise report.reject("a server name must not be empty")
    if not isinstance(entry, Mapping):
        raise report.reject(f"an entry must be a JSON object, got {describe_value(entry)}")
    fields = cast(Mapping[object, object], entry)
    misspelled = _warn_unknown_fields(fields, report)
    try:
        raw = structure_strictly({str(key): value for key, value in fields.items()}, RawEntry)
    except EntryInvalid as invalid:
        for problem in invalid.problems:
            report.error(problem.message, problem.path)
        raise _Rejected() from None

    type_ = _transport_type(raw, report, misspelled)
    config = ServerConfig(
        name=name,
        source=source,
        origin=origin,
        type=type_,
        command=raw.command,
        args=raw.args or (),
        env=raw.env or {},
        cwd=raw.cwd,
        url=raw.url,
        headers=raw.headers or {},
        enabled=raw.enabled,
        description=raw.description,
        tool_timeout_ms=raw.tool_timeout_ms,
        tool_overrides=raw.tool_overrides or {},
        shutdown=ShutdownGraces()
        if raw.shutdown is None
        else ShutdownGraces(raw.shutdown.eof_ms, raw.shutdown.term_ms),
        oauth=None if raw.oauth is None else _oauth_settings(raw.oauth, report),
    )
    config = _fit_to_transport(config, report, misspelled)
    if source in EXPANDED_SOURCES:
        config = _expand(config, environ, report)
    if config.oauth is not None:
        _check_oauth(config.oauth, report)
    if config.cwd is not None:
        config = attrs.evolve(config, cwd=os.path.normpath(workdir / config.cwd))
    return attrs.evolve(config, fingerprint=connection_fingerprint(config, str(workdir)))


def _meant_field(key: str) -> str | None:
    """The entry field that ``key`` is probably a typo of, if any: ``"comand"`` -> ``"command"``."""
    written = key.lower()
    known = _SUGGESTIONS.get(written)
    if known is not None:
        return known
    swapped = [field for field in sorted(ENTRY_FIELDS) if sorted(field) == sorted(written)]  # "ulr"
    close = swapped or difflib.get_close_matches(written, sorted(ENTRY_FIELDS), n=1, cutoff=0.75)
    return close[0] if close else None


def _warn_unknown_fields(fields: Mapping[object, object], report: _Report) -> dict[str, str]:
    """Warn about each unknown field; return the fields it is probably a typo of, by the key written."""
    misspelled: dict[str, str] = {}
    for key in fields:
        if key in ENTRY_FIELDS:
            continue
        suggestion = _meant_field(str(key))
        hint = f' (did you mean "{suggestion}"?)' if suggestion else ""
        if suggestion is not None:
            misspelled[str(key)] = suggestion
        report.warn(f"unknown field {key!r} was ignored{hint}", str(key))
    oauth = fields.get("oauth")
    if isinstance(oauth, Mapping):
        for key in cast(Mapping[object, object], oauth):
            if key not in OAUTH_FIELDS:
                known = ", ".join(sorted(OAUTH_FIELDS))
                report.warn(f"unknown oauth setting {key!r} was ignored (known: {known})", "oauth")
    shutdown = fields.get("shutdown")
    if isinstance(shutdown, Mapping):
        for key in cast(Mapping[object, object], shutdown):
            if key not in SHUTDOWN_FIELDS:
                known = ", ".join(sorted(SHUTDOWN_FIELDS))
                report.warn(f"unknown shutdown setting {key!r} was ignored (known: {known})", "shutdown")
    overrides = fields.get("tool_overrides")
    if not isinstance(overrides, Mapping):
        return misspelled  # absent, or a type error the converter reports
    for tool, settings in cast(Mapping[object, object], overrides).items():
        if isinstance(settings, Mapping):
            for key in cast(Mapping[object, object], settings):
                if key not in _OVERRIDE_FIELDS:
                    known = ", ".join(sorted(_OVERRIDE_FIELDS))
                    report.warn(
                        f"unknown tool override setting {key!r} was ignored (known: {known})",
                        f"tool_overrides[{tool!r}]",
                    )
    return misspelled


def _typo_hint(misspelled: Mapping[str, str], *fields: str) -> str:
    """``; "comand" is not a field: did you mean "command"?`` for the unknown keys meant as one of ``fields``."""
    hints = [f'"{key}" is not a field: did you mean "{meant}"?' for key, meant in misspelled.items() if meant in fields]
    return "".join(f"; {hint}" for hint in hints)


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _transport_type(raw: RawEntry, report: _Report, misspelled: Mapping[str, str]) -> str:
    written = raw.type if raw.transport is None else raw.transport
    if (
        raw.type is not None
        and raw.transport is not None
        and _TYPE_ALIASES.get(raw.type, raw.type) != _TYPE_ALIASES.get(raw.transport, raw.transport)
    ):
        raise report.reject(
            f'"type" is {_quoted(raw.type)} but "transport" is {_quoted(raw.transport)}: '
            "they are the same setting, keep one",
            "transport",
        )
    if written is not None:
        return _TYPE_ALIASES.get(written, written)
    if raw.command is not None and raw.url is not None:
        raise report.reject('both "command" and "url" are set and "type" is not: set "type" to say which is meant')
    if raw.command is not None:
        return TransportType.STDIO.value
    if raw.url is not None:
        return TransportType.HTTP.value  # never SSE by guess (R-CFG-2)
    raise report.reject(
        'needs "command" (a stdio server) or "url" (an http or sse server)' + _typo_hint(misspelled, "command", "url")
    )


def _fit_to_transport(config: ServerConfig, report: _Report, misspelled: Mapping[str, str]) -> ServerConfig:
    transport = config.transport
    if transport is None:
        return config  # unknown type: kept whole, refused at connect time (R-CFG-3)
    cleared: dict[str, object]
    if transport is TransportType.STDIO:
        required, foreign = "command", _REMOTE_FIELDS
        cleared = {"url": None, "headers": {}, "oauth": None}
    else:
        required, foreign = "url", _STDIO_FIELDS
        cleared = {"command": None, "args": (), "env": {}, "cwd": None, "shutdown": ShutdownGraces()}
    if not getattr(config, required):
        hint = _typo_hint(misspelled, required)
        raise report.reject(f'a {transport.value} server needs a non-empty "{required}"{hint}', required)
    for field in foreign:
        value = getattr(config, field)
        if value != ShutdownGraces() if field == "shutdown" else value:
            report.warn(f"a {transport.value} server does not use {field!r}; it was ignored", field)
    return attrs.evolve(config, **cleared)


def _expand(config: ServerConfig, environ: Mapping[str, str], report: _Report) -> ServerConfig:
    def expanded(text: str, path: str) -> str:
        expansion = expand_variables(text, environ)
        if expansion.missing:
            names = ", ".join(f"${{{missing}}}" for missing in expansion.missing)
            report.warn(f"{names} is not set and has no default; kept as written", path)
        return expansion.text

    return attrs.evolve(
        config,
        command=None if config.command is None else expanded(config.command, "command"),
        args=tuple(expanded(arg, f"args[{index}]") for index, arg in enumerate(config.args)),
        env={key: expanded(value, f"env[{key!r}]") for key, value in config.env.items()},
        url=None if config.url is None else expanded(config.url, "url"),
        headers={key: expanded(value, f"headers[{key!r}]") for key, value in config.headers.items()},
        oauth=None if config.oauth is None else _expand_oauth(config.oauth, expanded),
    )


def _expand_oauth(oauth: OAuthSettings, expanded: Callable[[str, str], str]) -> OAuthSettings:
    def field(value: str | None, name: str) -> str | None:
        return None if value is None else expanded(value, f"oauth.{name}")

    return attrs.evolve(
        oauth,
        redirect_uri=field(oauth.redirect_uri, "redirect_uri"),
        client_id=field(oauth.client_id, "client_id"),
        client_secret=field(oauth.client_secret, "client_secret"),
        scopes=None
        if oauth.scopes is None
        else tuple(expanded(scope, f"oauth.scopes[{index}]") for index, scope in enumerate(oauth.scopes)),
        client_metadata_url=field(oauth.client_metadata_url, "client_metadata_url"),
        private_key=field(oauth.private_key, "private_key"),
        issuer=field(oauth.issuer, "issuer"),
    )


def _oauth_settings(raw: RawOAuth, report: _Report) -> OAuthSettings:
    """The ``oauth`` object's fields, its grant read; what they mean is checked after expansion (R-AUTH-1)."""
    grant = OAuthGrant.AUTHORIZATION_CODE
    if raw.grant_type is not None:
        try:
            grant = OAuthGrant(raw.grant_type)
        except ValueError:
            known = " or ".join(repr(each.value) for each in OAuthGrant)
            raise report.reject(
                f"grant_type is {_quoted(raw.grant_type)}; expected {known}", "oauth.grant_type"
            ) from None
    return OAuthSettings(
        redirect_uri=raw.redirect_uri,
        client_id=raw.client_id,
        client_secret=raw.client_secret,
        scopes=raw.scopes,
        client_metadata_url=raw.client_metadata_url,
        grant=grant,
        private_key=raw.private_key,
        issuer=raw.issuer,
    )


def _check_oauth(oauth: OAuthSettings, report: _Report) -> None:
    """Reject an ``oauth`` object that cannot work, naming the field; secrets are never shown (R-AUTH-1, R-CFG-12)."""
    if oauth.redirect_uri is not None:
        problem = _url_problem(oauth.redirect_uri, https_only=False)
        scheme, host = _scheme_host(oauth.redirect_uri)
        if problem is None and scheme == "http" and host not in _LOOPBACK_HOSTS:
            problem = "an http redirect URI must be on a loopback host (127.0.0.1, [::1] or localhost); use https"
        if problem is not None:
            raise report.reject(f"{problem}: {_quoted(redact_url(oauth.redirect_uri))}", "oauth.redirect_uri")
    if oauth.client_metadata_url is not None:
        problem = _url_problem(oauth.client_metadata_url, https_only=True)
        if problem is None and urlsplit(oauth.client_metadata_url).path in ("", "/"):
            problem = "a client metadata URL needs a path"
        if problem is not None:
            raise report.reject(
                f"{problem}: {_quoted(redact_url(oauth.client_metadata_url))}", "oauth.client_metadata_url"
            )
    if oauth.issuer is not None and (problem := _url_problem(oauth.issuer, https_only=False)) is not None:
        raise report.reject(f"{problem}: {_quoted(redact_url(oauth.issuer))}", "oauth.issuer")
    if oauth.client_id is not None and not oauth.client_id.strip():
        raise report.reject("client_id must not be empty", "oauth.client_id")
    if oauth.scopes is not None:
        if not oauth.scopes:
            raise report.reject(
                "scopes is an empty list; leave it out to ask for what the server suggests", "oauth.scopes"
            )
        for index, scope in enumerate(oauth.scopes):
            if not scope or any(character.isspace() for character in scope):
                raise report.reject(
                    f"a scope is one word without spaces, got {_quoted(scope)}", f"oauth.scopes[{index}]"
                )
    if oauth.client_secret is not None and oauth.client_id is None:
        raise report.reject(
            "client_secret is set without client_id: say which client it is the secret of", "oauth.client_secret"
        )
    if oauth.grant is OAuthGrant.CLIENT_CREDENTIALS:
        if oauth.client_id is None or (oauth.client_secret is None) == (oauth.private_key is None):
            raise report.reject(
                "client_credentials needs client_id and one of client_secret or private_key", "oauth.grant_type"
            )
        for unused in ("redirect_uri", "client_metadata_url"):
            if getattr(oauth, unused) is not None:
                report.warn(f"client_credentials does not use {unused}; it was ignored", f"oauth.{unused}")
    elif oauth.private_key is not None:
        raise report.reject(
            'private_key signs a machine client\'s assertion: it needs "grant_type": "client_credentials"',
            "oauth.private_key",
        )


def _scheme_host(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower()


def _url_problem(url: str, *, https_only: bool) -> str | None:
    """Why ``url`` is not an absolute ``http(s)`` URL (``https`` only, if so asked), or ``None``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        return "not a valid URL"
    schemes = ("https",) if https_only else ("http", "https")
    if parts.scheme.lower() not in schemes or not parts.hostname:
        return f"expected an absolute {' or '.join(schemes)} URL"
    if parts.fragment:
        return "a URL here must not have a fragment"
    return None
