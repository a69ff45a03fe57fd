"""Where configuration lives and how a configuration file is read (R-CFG-1, R-CFG-2, R-CFG-4).

A file source is a JSON object whose ``mcpServers`` (or ``mcp_servers``) key
holds ``{name: entry}``. Reading a file never raises: a missing file is an
empty source, and a file that cannot be read, is not JSON, or has the wrong
shape becomes one error :class:`~wave_actors._config.model.Diagnostic` and no
entries. Each entry is judged later, on its own (:mod:`wave_actors._config.entry`).

Decisions where the specification is silent:

* Other top-level keys are allowed and ignored (a file may carry settings for
  other tools, and R-STORE-1 preserves them), so ``{}`` or ``{"x": 1}`` is
  simply a source without servers.
* If both ``mcpServers`` and ``mcp_servers`` are present, ``mcpServers`` is
  used and a warning says ``mcp_servers`` was ignored: one file, one list of
  servers, no silent merging of two.
* Files are read as UTF-8; a leading byte-order mark is tolerated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final, cast

import attrs

from wave_actors._config.converter import describe_value
from wave_actors._config.model import Diagnostic, Severity, Source

__all__ = [
    "PROJECT_FILE_NAME",
    "SERVERS_KEY",
    "SERVERS_KEY_ALIAS",
    "USER_FILE_NAME",
    "SourceFile",
    "UnreadableFile",
    "default_home",
    "project_file",
    "read_json_document",
    "read_source_file",
    "resolve_workdir",
    "servers_of_document",
    "user_file",
]

SERVERS_KEY: Final = "mcpServers"
"""The top-level key holding the servers (R-CFG-2)."""

SERVERS_KEY_ALIAS: Final = "mcp_servers"
"""Also accepted when :data:`SERVERS_KEY` is absent (R-CFG-2)."""

PROJECT_FILE_NAME: Final = ".mcp.json"
"""The project file, directly in the workdir (R-CFG-1)."""

USER_FILE_NAME: Final = "mcp.json"
"""The user file, in the wave home directory (R-CFG-1)."""


def default_home() -> Path:
    """``~/.wave``, the home of the user file and caches (R-CFG-1)."""
    return Path("~/.wave").expanduser()


def resolve_workdir(workdir: Path | str) -> Path:
    """The absolute, symlink-free form of ``workdir``: the one fingerprints use (R-CFG-8)."""
    return Path(workdir).expanduser().resolve()


def project_file(workdir: Path | str) -> Path:
    """``<workdir>/.mcp.json`` (R-CFG-1)."""
    return Path(workdir) / PROJECT_FILE_NAME


def user_file(home: Path | str) -> Path:
    """``<home>/mcp.json``; ``home`` is usually :func:`default_home` (R-CFG-1)."""
    return Path(home) / USER_FILE_NAME


@attrs.frozen
class SourceFile:
    """The raw entries of one file source, not yet validated.

    :param source: ``PROJECT`` or ``USER``.
    :param origin: the file's path, as diagnostics name it.
    :param entries: ``{name: entry}`` exactly as parsed; empty when the file
        is missing or was rejected.
    :param diagnostics: why the file was rejected, or what in it was ignored.
    """

    source: Source
    origin: str
    entries: Mapping[str, object] = attrs.field(factory=dict[str, object])
    diagnostics: tuple[Diagnostic, ...] = ()


class UnreadableFile(Exception):
    """A JSON file exists but cannot be used; the message says why, for a person."""


def read_json_document(path: Path) -> object:
    """Parse a JSON file, turning every failure into a reason a person can act on.

    :param path: the file.
    :returns: the parsed document.
    :raises FileNotFoundError: when there is no such file (often not an error).
    :raises UnreadableFile: when it cannot be read, is not UTF-8 or not JSON.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableFile(
            f"not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})"
        ) from error


def read_source_file(path: Path, source: Source) -> SourceFile:
    """Read one configuration file; never raises (R-CFG-4).

    :param path: the file; a missing file yields an empty source and no diagnostic.
    :param source: which source the file is.
    """
    origin = str(path)
    try:
        document = read_json_document(path)
    except FileNotFoundError:
        return SourceFile(source, origin)
    except UnreadableFile as error:
        message = f"{error}; the file was skipped"
        return SourceFile(source, origin, diagnostics=(Diagnostic(Severity.ERROR, source, origin, message),))
    entries, diagnostics = servers_of_document(document, source, origin)
    return SourceFile(source, origin, entries, diagnostics)


def servers_of_document(
    document: object, source: Source, origin: str
) -> tuple[Mapping[str, object], tuple[Diagnostic, ...]]:
    """Find the ``{name: entry}`` object in a parsed configuration document (R-CFG-2, R-CFG-4).

    :param document: the parsed JSON.
    :param source: for the diagnostics.
    :param origin: for the diagnostics.
    :returns: the entries (empty when the shape is wrong) and what was wrong.
    """
    if not isinstance(document, Mapping):
        return {}, (
            Diagnostic(
                Severity.ERROR,
                source,
                origin,
                f'the top level must be a JSON object like {{"{SERVERS_KEY}": {{...}}}}, '
                f"got {describe_value(document)}; the file was skipped",
            ),
        )
    diagnostics: list[Diagnostic] = []
    key = SERVERS_KEY if SERVERS_KEY in document else SERVERS_KEY_ALIAS
    if SERVERS_KEY in document and SERVERS_KEY_ALIAS in document:
        diagnostics.append(
            Diagnostic(
                Severity.WARNING,
                source,
                origin,
                f'both "{SERVERS_KEY}" and "{SERVERS_KEY_ALIAS}" are present; '
                f'only "{SERVERS_KEY}" is used, "{SERVERS_KEY_ALIAS}" was ignored',
                field=SERVERS_KEY_ALIAS,
            )
        )
    if key not in document:
        return {}, tuple(diagnostics)
    servers = cast(Mapping[object, object], document)[key]
    if not isinstance(servers, Mapping):
        diagnostics.append(
            Diagnostic(
                Severity.ERROR,
                source,
                origin,
                f'"{key}" must be an object of {{name: entry}}, got {describe_value(servers)}; the file was skipped',
                field=key,
            )
        )
        return {}, tuple(diagnostics)
    entries = {str(name): entry for name, entry in cast(Mapping[object, object], servers).items()}
    return entries, tuple(diagnostics)
