"""The approvals record: which project servers the user approved, kept in the user's home (R-CFG-10).

A project's ``.mcp.json`` comes with the repository, so whoever wrote the
repository chose its commands. Whether they may run is the user's decision,
and it is recorded where nothing inside a project can write:
``<home>/project-trust.json`` (:func:`approvals_file`), keyed by the resolved
workdir::

    {
      "version": 1,
      "projects": {
        "/home/me/src/app": {
          "trusted": true,
          "trusted_at": 1760000000.0,
          "approved": {
            "docs": {
              "fingerprint": "1daac43bdf002ce1",
              "salt": "9c1e...",
              "fields": {"type": "...", "command": "...", "args": "...", "cwd": "...", "url": "..."},
              "env": {"API_TOKEN": "..."},
              "headers": {},
              "approved_at": 1760000000.0,
              "by": "approve"
            }
          },
          "revoked": ["shell"]
        }
      }
    }

* ``trusted``: the user trusts the folder, so the servers its own
  ``.wave/settings.local.json`` enables count as approved
  (:mod:`wave_actors._config.trust`).
* ``approved``: one :class:`Approval` per server name, bound to the entry's
  fingerprint (R-CFG-8). Next to it, a salted digest of each connection field
  (:func:`~wave_actors._config.fingerprint.connection_fields`), one per
  variable and header *name*, so that a changed entry can be reported by the
  fields that changed, never by their values (R-CFG-12). The salt is random
  per approval, so equal values do not give equal digests across records.
* ``revoked``: names the user revoked; they do not load until approved again,
  whatever the folder's settings say.

The file is the user's: it is written only by :func:`edit_project_record`,
atomically (:mod:`wave_actors._config.atomic`), under an exclusive lock on
``project-trust.json.lock`` next to it, always with mode 0600. A file that is
not usable (not JSON, the wrong shape, owned by another user, writable by
group or others) approves nothing: :func:`read_project_record` reports it
and returns an empty record, and an edit refuses to touch it. Unknown
top-level keys are kept by an edit.

Everything here is synchronous file I/O, safe in a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Literal, cast

import attrs

from wave_actors._config.atomic import exclusive_lock, remove_stale_temporaries, replace_atomically
from wave_actors._config.converter import describe_value
from wave_actors._config.fingerprint import connection_fields
from wave_actors._config.model import Diagnostic, ServerConfig, Severity, Source
from wave_actors._config.sources import UnreadableFile, parse_json_document, read_file_bytes
from wave_actors._errors import ConfigError
from wave_actors._frozen import freeze_mapping

__all__ = [
    "APPROVALS_FILE_NAME",
    "Approval",
    "ApprovedBy",
    "ProjectRecord",
    "approvals_file",
    "edit_project_record",
    "read_project_record",
]

APPROVALS_FILE_NAME: Final = "project-trust.json"
"""The approvals record, in the host's home directory (R-CFG-10)."""

FORMAT_VERSION: Final = 1

MAX_RECORD_BYTES: Final = 4 * 1024 * 1024
"""The largest approvals record read: some thousands of approvals."""

LOCK_TIMEOUT: Final = 10.0
"""Seconds an edit waits for another writer of the record."""

_MODE: Final = 0o600
_DIGEST_LENGTH: Final = 16
_SCALAR_FIELDS: Final = ("type", "command", "args", "cwd", "url", "oauth")

ApprovedBy = Literal["approve", "trusted folder"]
"""How an approval came to be: an explicit ``approve``, or the settings of a folder the user trusts."""


def approvals_file(home: Path) -> Path:
    """``<home>/project-trust.json`` (R-CFG-10)."""
    return home / APPROVALS_FILE_NAME


def _digest(salt: str, value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{salt}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_LENGTH]


@attrs.frozen
class Approval:
    """One approved server: the fingerprint it was approved at, and a digest of each of its connection fields.

    :param fingerprint: the entry's fingerprint when it was approved (R-CFG-8).
    :param salt: random, per approval; every digest is salted with it.
    :param fields: the digest of ``type``, ``command``, ``args``, ``cwd`` and ``url``, and of ``oauth`` when set.
    :param env: the digest of each variable's value, by name.
    :param headers: the digest of each header's value, by name.
    :param approved_at: when, in seconds since the epoch.
    :param by: an explicit approval, or the settings of a trusted folder.
    """

    fingerprint: str
    salt: str
    fields: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping)
    env: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping)
    headers: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping)
    approved_at: float = 0.0
    by: ApprovedBy = "approve"

    @classmethod
    def of(cls, config: ServerConfig, *, by: ApprovedBy, now: float | None = None) -> Approval:
        """The approval of ``config`` as it is now.

        :param config: the loaded project entry.
        :param by: how it is approved.
        :param now: the time to record (default: now).
        """
        salt = secrets.token_hex(8)
        fields, env, headers = _field_digests(config, salt)
        return cls(config.fingerprint, salt, fields, env, headers, time.time() if now is None else now, by)

    def changes(self, config: ServerConfig) -> tuple[str, ...]:
        """What differs between the approved entry and ``config``, by field and variable or header name.

        Never a value (R-CFG-12): ``("command", "env API_TOKEN", "headers X-Key (added)")``.
        Empty when the fingerprints are equal.

        :param config: the entry as loaded now.
        """
        if config.fingerprint == self.fingerprint:
            return ()
        fields, env, headers = _field_digests(config, self.salt)
        changed = [name for name in _SCALAR_FIELDS if fields.get(name) != self.fields.get(name)]
        for label, now, then in (("env", env, self.env), ("headers", headers, self.headers)):
            for name in sorted({*now, *then}):
                if name not in then:
                    changed.append(f"{label} {name} (added)")
                elif name not in now:
                    changed.append(f"{label} {name} (removed)")
                elif now[name] != then[name]:
                    changed.append(f"{label} {name}")
        return tuple(changed) or ("workdir",)


def _field_digests(config: ServerConfig, salt: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    fields = connection_fields(config)
    # An entry without an oauth object has no such field (R-AUTH-1): absent, as in an approval made before it.
    scalars = {name: _digest(salt, fields[name]) for name in _SCALAR_FIELDS if name in fields}
    env = {name: _digest(salt, value) for name, value in config.env.items()}
    headers = {name: _digest(salt, value) for name, value in config.headers.items()}
    return scalars, env, headers


@attrs.frozen
class ProjectRecord:
    """What the user decided about one workdir (R-CFG-10).

    :param trusted: the folder's own settings file may approve servers.
    :param trusted_at: when the folder was trusted.
    :param approved: the approved servers by name.
    :param revoked: names that do not load until approved again.
    """

    trusted: bool = False
    trusted_at: float | None = None
    approved: Mapping[str, Approval] = attrs.field(factory=dict[str, Approval], converter=freeze_mapping)
    revoked: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing is recorded: the workdir needs no place in the file."""
        return not self.trusted and not self.approved and not self.revoked


class _Unusable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Reading.


def _check_owner(path: Path) -> None:
    """Refuse a record someone else could have written: another owner, or writable by group or others."""
    if sys.platform == "win32":  # pragma: no cover - no POSIX owners
        return
    try:
        status = os.stat(path)
    except OSError as error:
        raise _Unusable(f"cannot be read ({error.strerror or error})") from None
    if status.st_uid != os.geteuid():
        raise _Unusable(f"belongs to another user (uid {status.st_uid}), so it may not approve anything")
    if stat.S_IMODE(status.st_mode) & 0o022:
        raise _Unusable(
            f"is writable by other users (mode {stat.S_IMODE(status.st_mode):o}), so it may not approve anything; "
            f"make it private with 'chmod 600 {path}'"
        )


def _read_document(path: Path) -> dict[str, object] | None:
    """The record file's document, ``None`` when it does not exist.

    :raises _Unusable: it cannot be read, is not a JSON object, or someone else could have written it.
    """
    try:
        data = read_file_bytes(path, limit=MAX_RECORD_BYTES, what="the approvals record")
    except FileNotFoundError:
        return None
    except UnreadableFile as error:
        raise _Unusable(str(error)) from None
    _check_owner(path)
    try:
        document = parse_json_document(data)
    except UnreadableFile as error:
        raise _Unusable(str(error)) from None
    if not isinstance(document, dict):
        raise _Unusable(f"the top level must be a JSON object, got {describe_value(document)}")
    document = cast(dict[str, object], document)
    version = document.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise _Unusable(f'"version" is {describe_value(version)}; this version of wave-actors reads version 1')
    return document


def _object(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _Unusable(f"{where} must be an object, got {describe_value(value)}")
    return cast(Mapping[str, object], value)


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _Unusable(f"{where} must be a string, got {describe_value(value)}")
    return value


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unusable(f"{where} must be a number, got {describe_value(value)}")
    return float(value)


def _strings(value: object, where: str) -> dict[str, str]:
    return {name: _string(item, f"{where}[{name!r}]") for name, item in _object(value, where).items()}


def _approval(value: object, where: str) -> Approval:
    fields = _object(value, where)
    by = fields.get("by", "approve")
    if by not in ("approve", "trusted folder"):
        raise _Unusable(f'{where}.by must be "approve" or "trusted folder", got {describe_value(by)}')
    return Approval(
        fingerprint=_string(fields.get("fingerprint"), f"{where}.fingerprint"),
        salt=_string(fields.get("salt"), f"{where}.salt"),
        fields=_strings(fields.get("fields", {}), f"{where}.fields"),
        env=_strings(fields.get("env", {}), f"{where}.env"),
        headers=_strings(fields.get("headers", {}), f"{where}.headers"),
        approved_at=_number(fields.get("approved_at", 0.0), f"{where}.approved_at"),
        by=by,
    )


def _project(value: object, where: str) -> ProjectRecord:
    fields = _object(value, where)
    trusted = fields.get("trusted", False)
    if not isinstance(trusted, bool):
        raise _Unusable(f"{where}.trusted must be true or false, got {describe_value(trusted)}")
    trusted_at = fields.get("trusted_at")
    revoked = fields.get("revoked", [])
    if not isinstance(revoked, list):
        raise _Unusable(f"{where}.revoked must be a list, got {describe_value(revoked)}")
    approved = _object(fields.get("approved", {}), f"{where}.approved")
    return ProjectRecord(
        trusted=trusted,
        trusted_at=None if trusted_at is None else _number(trusted_at, f"{where}.trusted_at"),
        approved={name: _approval(item, f"{where}.approved[{name!r}]") for name, item in approved.items()},
        revoked=tuple(
            _string(item, f"{where}.revoked[{index}]") for index, item in enumerate(cast(list[object], revoked))
        ),
    )


def _projects(document: Mapping[str, object] | None) -> dict[str, object]:
    if document is None:
        return {}
    return dict(_object(document.get("projects", {}), '"projects"'))


def read_project_record(home: Path, workdir: Path) -> tuple[ProjectRecord, tuple[Diagnostic, ...]]:
    """What the user decided about ``workdir``; never raises (R-CFG-4, R-CFG-10).

    :param home: the host's home directory.
    :param workdir: the resolved project directory.
    :returns: the record (empty when the file or the workdir is missing, or the
        file is unusable) and an error diagnostic when the file is unusable.
    """
    path = approvals_file(home)
    try:
        projects = _projects(_read_document(path))
        value = projects.get(str(workdir))
        return (ProjectRecord() if value is None else _project(value, f"projects[{str(workdir)!r}]")), ()
    except _Unusable as error:
        message = f"{error.reason}; no project server is approved"
        return ProjectRecord(), (Diagnostic(Severity.ERROR, Source.USER, str(path), message),)


# Writing.


def _approval_document(approval: Approval) -> dict[str, object]:
    return {
        "fingerprint": approval.fingerprint,
        "salt": approval.salt,
        "fields": dict(approval.fields),
        "env": dict(approval.env),
        "headers": dict(approval.headers),
        "approved_at": approval.approved_at,
        "by": approval.by,
    }


def _project_document(record: ProjectRecord) -> dict[str, object]:
    return {
        "trusted": record.trusted,
        "trusted_at": record.trusted_at,
        "approved": {name: _approval_document(approval) for name, approval in record.approved.items()},
        "revoked": list(record.revoked),
    }


def _encoded(document: Mapping[str, object]) -> bytes:
    try:
        return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a path or a name: kept, escaped
        return (json.dumps(document, indent=2) + "\n").encode("ascii")


def edit_project_record(
    home: Path,
    workdir: Path,
    change: Callable[[ProjectRecord], ProjectRecord],
    *,
    lock_timeout: float = LOCK_TIMEOUT,
) -> ProjectRecord:
    """Change what is recorded about ``workdir``, atomically and under the record's lock (R-CFG-10).

    :param home: the host's home directory (created, owner-only, when missing).
    :param workdir: the resolved project directory.
    :param change: given the current record of the workdir, returns the new one;
        it runs under the lock, so it sees every earlier edit.
    :param lock_timeout: seconds to wait for another writer.
    :returns: the record as written (or as it was, when ``change`` changed nothing: then nothing is written).
    :raises ConfigError: the record file is unusable (it is left alone), or it
        cannot be locked or written (it is unchanged).
    """
    path = approvals_file(home)
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        with exclusive_lock(path.with_name(path.name + ".lock"), timeout=lock_timeout):
            remove_stale_temporaries(path)
            document = _read_document(path)
            projects = _projects(document)
            key = str(workdir)
            current = projects.get(key)
            before = ProjectRecord() if current is None else _project(current, f"projects[{key!r}]")
            record = change(before)
            if record == before:
                return record  # nothing to write (another load of the same reading recorded it already)
            if record.empty:
                projects.pop(key, None)
            else:
                projects[key] = _project_document(record)
            new = {**(document or {}), "version": FORMAT_VERSION, "projects": projects}
            replace_atomically(path, _encoded(new), mode=_MODE)
    except _Unusable as error:
        raise ConfigError(f"cannot record approvals: {path}: {error.reason}; fix or remove it first") from None
    except OSError as error:
        raise ConfigError(f"cannot write {path}: {error.strerror or error}; it was left unchanged") from error
    return record
