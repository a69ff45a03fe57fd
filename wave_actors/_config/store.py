"""Editing the user and project configuration files safely (R-STORE-1..4).

:class:`ConfigStore` reads ``<home>/mcp.json`` (the user file) or
``<workdir>/.mcp.json`` (the project file) with a version, and changes one of
them: :meth:`~ConfigStore.put` adds or replaces an entry,
:meth:`~ConfigStore.remove` removes one, :meth:`~ConfigStore.import_servers`
adds several from a pasted ``mcpServers`` / ``mcp_servers`` object. Every edit

* takes the version the caller read and refuses, with :class:`ConfigChanged`,
  when the file changed since (R-STORE-4). A missing file has a version too,
  so adding the first server creates the file, and a file created meanwhile
  is a change;
* validates what it adds with the loader's own rules
  (:func:`~wave_actors._config.entry.parse_entry`) before anything is written,
  and refuses what the loader would warn about and ignore: an unknown field, a
  field of the other transport (R-STORE-3). Values are stored as given:
  ``${VAR}`` placeholders stay placeholders, they are never expanded on write;
* rewrites the file atomically (:mod:`wave_actors._config.atomic`), keeping
  every other entry, every other top-level key and their order, and the
  file's style where it can tell: indentation (spaces or tabs, how many),
  line endings, a final newline, a byte-order mark (R-STORE-1). The edit is
  spliced into the file's text by :mod:`wave_actors._config.splice`;
* holds an exclusive lock on the file's directory from reading the version to
  renaming the new file, so of two editors holding the same version exactly
  one wins. Locking the directory creates no lock file in a project;
* on any failure (permission denied, a missing file to remove from, a file
  that is not a JSON object, an invalid entry, a changed version) raises a
  :class:`~wave_actors.ConfigError` that names the file and the cause, and
  leaves the file byte-identical.

Constructor and plugin entries are not in these files and are refused as
read-only (R-STORE-2). The store does not touch running sessions: they see an
edit when they are reconfigured (``Session.reconfigure()``, R-STORE-5).

A symbolic link to the file is followed: the file it points to is rewritten
and the link stays. A project file, though, is edited only when its real path
lies inside the workdir: a repository's ``.mcp.json`` linked to the user's
own file (or to any file outside the project) is refused, so that editing
"the project" never rewrites something else (R-STORE-6). A new user file is
readable by its owner only (it may hold tokens); a new project file gets the
permissions of any new file of the process (its umask decides: 0644 under the
usual 022, 0600 under 077); a rewritten file keeps its permission bits and
owner. A project file is shared with everyone who has the repository: an
entry written there with a literal secret (an ``env`` or header value, a URL
password or query value that is not a ``${VAR}`` placeholder) is written, and
a warning names where (never the value); ``wave-actors add`` refuses it
without ``--force``.

Everything here is synchronous file I/O: a host on an event loop calls it in a
worker thread (``await trio.to_thread.run_sync(store.remove, name, scope, version)``).
This module owns the public edit API (versions, validation, locking, writing);
:class:`ConfigStore`, :class:`ConfigFile` and :class:`ConfigChanged` are
exported by :mod:`wave_actors`, and the ``wave-actors add`` / ``remove``
commands (:mod:`wave_actors._cli.edit`) edit through it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, cast, final

import attrs

from wave_actors._config.atomic import exclusive_lock, remove_stale_temporaries, replace_atomically
from wave_actors._config.converter import ENTRY_FIELDS
from wave_actors._config.entry import parse_entry
from wave_actors._config.model import Severity, Source
from wave_actors._config.redact import literal_secrets
from wave_actors._config.sources import (
    SERVERS_KEY,
    SERVERS_KEY_ALIAS,
    UnreadableFile,
    default_home,
    parse_json_document,
    project_file,
    read_file_bytes,
    resolve_workdir,
    user_file,
)
from wave_actors._config.splice import SplicedDocument
from wave_actors._errors import ConfigError
from wave_actors._frozen import freeze_mapping

__all__ = ["ABSENT_VERSION", "ConfigChanged", "ConfigFile", "ConfigStore"]

ABSENT_VERSION: Final = "absent"
"""The version of a file that does not exist (R-STORE-4)."""

_EDITABLE: Final = (Source.USER, Source.PROJECT)
# None: what the process's umask leaves of 0o666, as for any file it creates.
_NEW_FILE_MODES: Final[dict[Source, int | None]] = {Source.USER: 0o600, Source.PROJECT: None}
_LOCK_TIMEOUT: Final = 10.0

logger = logging.getLogger(__name__)


class ConfigChanged(ConfigError):
    """The file changed on disk since the caller read it: reload it, then edit again (R-STORE-4)."""


@attrs.frozen
class ConfigFile:
    """A user or project configuration file, as read for editing (R-STORE-4).

    :param scope: :attr:`Source.USER <wave_actors.Source.USER>` or
        :attr:`Source.PROJECT <wave_actors.Source.PROJECT>`.
    :param path: the file's absolute path, whether or not it exists.
    :param exists: whether the file exists.
    :param version: a hash of its content (:data:`ABSENT_VERSION` when it does
        not exist); pass it back with the next edit.
    :param servers: the entries as written, in the file's order: raw JSON,
        ``${VAR}`` placeholders unexpanded, not validated.
    """

    scope: Source
    path: Path
    exists: bool
    version: str
    servers: Mapping[str, object] = attrs.field(factory=dict[str, object], converter=freeze_mapping)


class _LiteralVariables(Mapping[str, str]):
    """Every ``${VAR}`` "is set" to itself: validation expands nothing and warns of no unset variable."""

    def __getitem__(self, name: str) -> str:
        return f"${{{name}}}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


_LITERAL: Final = _LiteralVariables()


def _version(data: bytes | None) -> str:
    return ABSENT_VERSION if data is None else hashlib.sha256(data).hexdigest()[:32]


def _editable(scope: Source | str) -> Source:
    try:
        source = Source(scope)
    except ValueError:
        raise ConfigError(f"unknown configuration scope {scope!r}; use 'user' or 'project'") from None
    if source not in _EDITABLE:
        raise ConfigError(
            f"{source.value} entries are read-only: they are not in a configuration file "
            f"({'the host passes them' if source is Source.CONSTRUCTOR else 'they come with their plugin'}); "
            "edit the user or the project file instead"
        )
    return source


@final
class ConfigStore:
    """Reads and edits the user and project configuration files of one workdir (R-STORE-1..4).

    Every method is synchronous file I/O; see the module documentation for
    the guarantees of an edit.

    :param workdir: the project directory (its ``.mcp.json`` is the project file).
    :param home: the directory of the user file ``mcp.json``; default ``~/.wave``.
    :param lock_timeout: seconds an edit waits for another editor of the same file.
    """

    def __init__(self, workdir: Path | str, *, home: Path | str | None = None, lock_timeout: float = _LOCK_TIMEOUT):
        self._workdir = resolve_workdir(workdir)
        self._home = Path(os.path.abspath(default_home() if home is None else Path(home).expanduser()))
        self._lock_timeout = lock_timeout

    def path(self, scope: Source | str) -> Path:
        """The absolute path of the user or project file, whether or not it exists.

        :param scope: ``Source.USER`` / ``"user"`` or ``Source.PROJECT`` / ``"project"``.
        :raises ConfigError: for any other scope (R-STORE-2).
        """
        return user_file(self._home) if _editable(scope) is Source.USER else project_file(self._workdir)

    def read(self, scope: Source | str) -> ConfigFile:
        """The file's entries and version; a missing file has none and :data:`ABSENT_VERSION`.

        :param scope: the user or the project file.
        :raises ConfigError: the file cannot be read, is not JSON, or is not
            an object with an object of servers; or the scope is read-only.
        """
        source = _editable(scope)
        path = self.path(source)
        data = self._read(path)
        return self._file(source, path, data, SplicedDocument(data, path))

    def put(self, name: str, entry: Mapping[str, Any], scope: Source | str, expected_version: str) -> ConfigFile:
        """Add ``name``, or replace its entry, in the user or project file (R-STORE-3).

        :param name: the server's name.
        :param entry: the entry as it should appear under ``mcpServers``;
            validated as the loader would, stored literally.
        :param scope: the user or the project file.
        :param expected_version: the version read (:attr:`ConfigFile.version`).
        :returns: the file as written.
        :raises ConfigChanged: the file changed since it was read.
        :raises ConfigError: the entry is invalid, the scope read-only, or the
            file cannot be read or written; the file is unchanged.
        """
        source = _editable(scope)
        path = self.path(source)
        checked = self._checked_entry(name, entry, source, path)

        def change(document: SplicedDocument) -> None:
            document.set(name, checked)

        written = self._edit(source, expected_version, change)
        self._warn_of_literal_secrets(source, path, {name: checked})
        return written

    def remove(self, name: str, scope: Source | str, expected_version: str) -> ConfigFile:
        """Remove ``name`` from the user or project file (R-STORE-1).

        :param name: the server's name.
        :param scope: the user or the project file; plugin and constructor
            entries are read-only (R-STORE-2).
        :param expected_version: the version read (:attr:`ConfigFile.version`).
        :returns: the file as written.
        :raises ConfigChanged: the file changed since it was read.
        :raises ConfigError: the file does not exist or has no such server, the
            scope is read-only, or the file cannot be read or written; the file
            is unchanged.
        """
        source = _editable(scope)
        path = self.path(source)

        def change(document: SplicedDocument) -> None:
            if name not in document.servers:
                listed = ", ".join(repr(known) for known in document.servers) or "none"
                raise ConfigError(f"cannot remove {name!r}: {path} has no such server (it has: {listed})")
            document.remove(name)

        return self._edit(source, expected_version, change, must_exist=f"cannot remove {name!r}")

    def import_servers(
        self, document: Mapping[str, Any] | str, scope: Source | str, expected_version: str
    ) -> ConfigFile:
        """Add every server of a pasted document at once, or none (R-STORE-3).

        :param document: ``{"mcpServers": {name: entry}}``, ``{"mcp_servers": {...}}``
            or the ``{name: entry}`` object itself, parsed or as JSON text.
            Values are stored literally, ``${VAR}`` placeholders included.
        :param scope: the user or the project file.
        :param expected_version: the version read (:attr:`ConfigFile.version`).
        :returns: the file as written.
        :raises ConfigChanged: the file changed since it was read.
        :raises ConfigError: the document is not such an object or is empty, a
            name exists in the file already, an entry is invalid or has a
            field the loader does not support, the scope is read-only, or the
            file cannot be read or written. Nothing is written then.
        """
        source = _editable(scope)
        path = self.path(source)
        imported = self._imported(document)
        problems: list[str] = []
        checked: dict[str, object] = {}
        for name, entry in imported.items():
            try:
                if not isinstance(entry, Mapping):
                    raise ConfigError(f"the entry of {name!r} must be a JSON object")
                checked[name] = self._checked_entry(name, cast(Mapping[str, Any], entry), source, path)
            except ConfigError as error:
                problems.append(str(error))
        if problems:
            raise ConfigError("nothing imported: " + "; ".join(problems))

        def change(current: SplicedDocument) -> None:
            taken = [name for name in checked if name in current.servers]
            if taken:
                names = ", ".join(repr(name) for name in taken)
                raise ConfigError(f"nothing imported: {path} has {names} already; remove or rename first")
            for name, entry in checked.items():
                current.set(name, entry)

        written = self._edit(source, expected_version, change)
        self._warn_of_literal_secrets(source, path, checked)
        return written

    # Helpers.

    @staticmethod
    def _warn_of_literal_secrets(source: Source, path: Path, entries: Mapping[str, object]) -> None:
        """Say where a project file now holds a secret as written (names only, R-CFG-12, R-STORE-6)."""
        if source is not Source.PROJECT:
            return
        for name, entry in entries.items():
            found = literal_secrets(cast(Mapping[str, object], entry)) if isinstance(entry, Mapping) else []
            if found:
                logger.warning(
                    "%s: server %r holds literal values (%s); a project file is shared with everyone who has the "
                    "repository: prefer ${VAR} placeholders",
                    path,
                    name,
                    ", ".join(found),
                )

    def _inside_the_project(self, path: Path, target: Path) -> None:
        """Refuse a project file whose real path lies outside the workdir (R-STORE-6)."""
        if not target.is_relative_to(self._workdir):
            raise ConfigError(
                f"cannot edit {path}: it is a link to {target}, outside the project {self._workdir}; "
                "edit that file itself (the user file with --scope user), or replace the link with a file"
            )

    def _read(self, path: Path) -> bytes | None:
        try:
            return read_file_bytes(path)
        except FileNotFoundError:
            return None
        except UnreadableFile as error:
            raise ConfigError(f"cannot edit {path}: it {error}") from None

    def _file(self, source: Source, path: Path, data: bytes | None, document: SplicedDocument) -> ConfigFile:
        servers = MappingProxyType(dict(document.servers))
        return ConfigFile(source, path, data is not None, _version(data), servers)

    def _checked_entry(self, name: str, entry: Mapping[str, Any], source: Source, path: Path) -> object:
        """``entry`` as plain JSON, once the loader's rules accept it without a warning (R-STORE-3)."""
        where = f"server {name!r} for {path}"
        if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"cannot add a server without a name to {path}")
        if not isinstance(entry, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{where}: an entry must be a JSON object, got {type(entry).__name__}")
        try:
            plain = json.loads(json.dumps(entry, allow_nan=False))
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{where}: the entry is not JSON ({error})") from None
        unknown = [key for key in plain if key not in ENTRY_FIELDS]
        if unknown:
            supported = ", ".join(sorted(ENTRY_FIELDS))
            raise ConfigError(
                f"{where}: unsupported field(s) {', '.join(repr(key) for key in unknown)} (supported: {supported})"
            )
        parsed = parse_entry(name, plain, source=source, origin=str(path), workdir=self._workdir, environ=_LITERAL)
        problems = [
            (f"field {diagnostic.field!r}: " if diagnostic.field else "")
            + diagnostic.message.removesuffix("; the entry was skipped")
            for diagnostic in parsed.diagnostics
            if diagnostic.severity is not Severity.INFO
        ]
        if parsed.config is None or problems:
            raise ConfigError(f"{where}: " + "; ".join(problems or ["invalid entry"]))
        return plain

    def _imported(self, document: Mapping[str, Any] | str) -> dict[str, object]:
        if isinstance(document, str):
            try:
                document = cast(Mapping[str, Any], parse_json_document(document.encode("utf-8", "surrogatepass")))
            except UnreadableFile as error:
                raise ConfigError(f"nothing imported: the document is {error}") from None
        if not isinstance(document, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f'nothing imported: expected an object like {{"{SERVERS_KEY}": {{name: entry}}}}')
        if SERVERS_KEY in document and SERVERS_KEY_ALIAS in document:
            raise ConfigError(f'nothing imported: both "{SERVERS_KEY}" and "{SERVERS_KEY_ALIAS}" are present; keep one')
        servers: object = document
        for key in (SERVERS_KEY, SERVERS_KEY_ALIAS):
            if key in document:
                servers = document[key]
        if not isinstance(servers, Mapping) or not servers:
            raise ConfigError(f'nothing imported: expected a non-empty object of {{name: entry}} under "{SERVERS_KEY}"')
        named = cast(Mapping[object, object], servers)
        if all(isinstance(key, str) and key in ENTRY_FIELDS for key in named):
            raise ConfigError(
                'nothing imported: this looks like one entry without its name; paste {"name": {...}} instead'
            )
        return {str(name): entry for name, entry in named.items()}

    def _edit(
        self,
        source: Source,
        expected_version: str,
        change: Callable[[SplicedDocument], None],
        *,
        must_exist: str | None = None,
    ) -> ConfigFile:
        path = self.path(source)
        target = Path(os.path.realpath(path))  # a symbolic link stays a link to the rewritten file
        if source is Source.PROJECT:
            self._inside_the_project(path, target)
        try:
            if source is Source.USER:
                target.parent.mkdir(parents=True, exist_ok=True)  # adding the first user server
            with exclusive_lock(target.parent, timeout=self._lock_timeout, directory=True):
                remove_stale_temporaries(target)
                data = self._read(target)
                if _version(data) != expected_version:
                    raise ConfigChanged(f"{path} changed on disk since it was read; reload it and edit again")
                if data is None and must_exist is not None:
                    raise ConfigError(f"{must_exist}: {path} does not exist")
                document = SplicedDocument(data, path)
                change(document)
                new = document.encoded()
                mode, owner = _NEW_FILE_MODES[source], None
                if data is not None:
                    status = os.stat(target)
                    mode, owner = stat.S_IMODE(status.st_mode), (status.st_uid, status.st_gid)
                    if not os.access(target, os.W_OK):
                        raise PermissionError(13, "Permission denied")
                replace_atomically(target, new, mode=mode, owner=owner)
        except OSError as error:
            raise ConfigError(f"cannot write {path}: {error.strerror or error}; it was left unchanged") from error
        return self._file(source, path, new, document)
