"""Project trust: which ``.mcp.json`` entries may load in ``approved`` mode (R-CFG-10).

A project file comes with the repository, so whoever wrote the repository
chose its commands. In ``approved`` mode a project entry loads only when the
user approved it in the uncommitted ``<workdir>/.wave/settings.local.json``::

    {
      "mcp_json": {
        "enabled": ["docs", "search"],
        "approved": {"search": "1daac43bdf002ce1"},
        "enable_all": false,
        "disabled": ["shell"]
      }
    }

* ``enabled`` approves names (the user guide's format): whatever the entry
  says, now or later.
* ``approved`` approves a name *and what it runs*: ``{name: fingerprint}``,
  the entry's :attr:`~wave_actors._config.model.ServerConfig.fingerprint`
  (R-CFG-8) at the time of approval. When the entry's fingerprint is no longer
  that one (another command, args, env, url or headers, also through a changed
  ``${VAR}``), the entry is "changed since approval" and is not loaded, with a
  warning, even if ``enabled`` or ``enable_all`` would approve it: a recorded
  fingerprint is the more precise approval. :func:`approve_servers` records
  both the name and the fingerprint.
* ``enable_all`` approves every name not in ``disabled``.
* ``disabled`` always wins.

A missing file, or a file without ``mcp_json``, approves nothing. A malformed
file is reported and also approves nothing: when in doubt, do not run the
repository's commands. The same goes for a settings file that the
repository's version control tracks (:mod:`wave_actors._config.vcs`): such a
file came with the repository, so it is ignored with an error diagnostic
saying why. Other keys of the settings file belong to the host and are ignored
(and kept by :func:`approve_servers`). In ``all`` mode (the default) the
settings file is not read.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Literal, cast

import attrs

from wave_actors._config.converter import CONVERTER, EntryInvalid, describe_value, structure_strictly
from wave_actors._config.entry import parse_entry
from wave_actors._config.model import Diagnostic, Severity, Source
from wave_actors._config.sources import (
    UnreadableFile,
    parse_json_document,
    project_file,
    read_file_bytes,
    read_source_file,
    resolve_workdir,
)
from wave_actors._config.vcs import git_tracking
from wave_actors._errors import ConfigError
from wave_actors._frozen import freeze_mapping

__all__ = [
    "SETTINGS_FILE",
    "TRUST_MODES",
    "ProjectApproval",
    "TrustMode",
    "approve_servers",
    "read_project_approval",
    "settings_file",
]

TrustMode = Literal["all", "approved"]
"""``all``: every project entry loads. ``approved``: only those the user approved (R-CFG-10)."""

TRUST_MODES: Final[tuple[TrustMode, ...]] = ("all", "approved")

SETTINGS_FILE: Final = Path(".wave") / "settings.local.json"
"""Where approvals live, relative to the workdir (R-CFG-10)."""

_SECTION: Final = "mcp_json"


def settings_file(workdir: Path | str) -> Path:
    """``<workdir>/.wave/settings.local.json`` (R-CFG-10)."""
    return Path(workdir) / SETTINGS_FILE


@attrs.frozen
class ProjectApproval:
    """The ``mcp_json`` section of the settings file (R-CFG-10).

    :param enabled: names approved one by one.
    :param enable_all: approve every name not in :attr:`disabled`.
    :param disabled: names never loaded, whatever else says.
    :param approved: names approved together with the fingerprint they had;
        a different fingerprint is not approved.
    """

    enabled: tuple[str, ...] = ()
    enable_all: bool = False
    disabled: tuple[str, ...] = ()
    approved: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping)

    def refusal(self, name: str) -> str | None:
        """Why the project entry ``name`` may not load whatever it says, or ``None`` if it may
        (subject to :meth:`change_since_approval`)."""
        if name in self.disabled:
            return f'it is listed in "{_SECTION}.disabled"'
        if self.enable_all or name in self.enabled or name in self.approved:
            return None
        return f'it is not approved; add it to "{_SECTION}.enabled" to load it'

    def change_since_approval(self, name: str, fingerprint: str) -> str | None:
        """Why the entry ``name`` with ``fingerprint`` is not the one approved, or ``None`` when it is
        (or when its approval recorded no fingerprint)."""
        recorded = self.approved.get(name)
        if recorded is None or recorded == fingerprint:
            return None
        return (
            f"changed since approval: not loaded (approved with fingerprint {recorded}, now {fingerprint}); "
            "review the entry, then approve it again"
        )


# Built at import, not in whichever worker thread first loads a configuration.
CONVERTER.get_structure_hook(ProjectApproval)


def read_project_approval(workdir: Path) -> tuple[ProjectApproval, tuple[Diagnostic, ...]]:
    """Read the approvals of ``workdir``; never raises (R-CFG-4, R-CFG-10).

    :param workdir: the resolved project directory.
    :returns: the approvals (none when missing, malformed, or tracked by
        version control) and an error diagnostic saying why nothing is approved.
    """
    path = settings_file(workdir)
    origin = str(path)

    def refused(reason: str, field: str | None = None) -> tuple[ProjectApproval, tuple[Diagnostic, ...]]:
        message = f"{reason}; no project server is approved"
        return ProjectApproval(), (Diagnostic(Severity.ERROR, Source.PROJECT, origin, message, field=field),)

    try:
        data = read_file_bytes(path)
    except FileNotFoundError:
        return ProjectApproval(), ()
    except UnreadableFile as error:
        return refused(str(error))
    tracking = git_tracking(path)
    if tracking.tracked is None:
        return refused(f"ignored: cannot tell whether version control tracks this file ({tracking.reason})")
    if tracking.tracked:
        return refused(
            "ignored: git tracks this file, so it came with the repository; approvals count only from an "
            "uncommitted file (remove it from git with 'git rm --cached' and list it in .gitignore)"
        )
    try:
        document = parse_json_document(data)
        return _approval_of(document), ()
    except _Malformed as error:
        return refused(error.reason, error.field)
    except UnreadableFile as error:
        return refused(str(error))


class _Malformed(Exception):
    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def _section_of(document: object) -> Mapping[object, object] | None:
    if not isinstance(document, Mapping):
        raise _Malformed(f"the top level must be a JSON object, got {describe_value(document)}")
    section = cast(Mapping[object, object], document).get(_SECTION)
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise _Malformed(f'"{_SECTION}" must be an object, got {describe_value(section)}', _SECTION)
    return cast(Mapping[object, object], section)


def _approval_of(document: object) -> ProjectApproval:
    section = _section_of(document)
    if section is None:
        return ProjectApproval()
    fields = {str(key): value for key, value in section.items()}
    try:
        return structure_strictly(fields, ProjectApproval)
    except EntryInvalid as invalid:
        problem = invalid.problems[0]
        raise _Malformed(f"{_SECTION}.{problem.path}: {problem.message}", f"{_SECTION}.{problem.path}") from None


def approve_servers(
    workdir: Path | str,
    names: Iterable[str],
    *,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Approve project servers by name and fingerprint in ``<workdir>/.wave/settings.local.json`` (R-CFG-10).

    Each name is added to ``mcp_json.enabled`` (if missing), recorded with its
    entry's current fingerprint in ``mcp_json.approved`` and removed from
    ``mcp_json.disabled``: approving is the user's explicit choice. Every other
    key of the file, known or not, is kept. The file is replaced atomically (a
    temporary file in the same directory, flushed to disk, then renamed over
    it), keeping the old file's permission bits; a new file is readable by its
    owner only. Two approvals at the same moment may lose one of them.

    :param workdir: the project directory.
    :param names: project servers to approve; each must be a valid entry of
        ``<workdir>/.mcp.json``.
    :param environ: variables for ``${VAR}`` expansion, which the fingerprint
        covers; default :data:`os.environ`. Use the environment the host will
        load the configuration with.
    :returns: the fingerprint recorded for each name.
    :raises ConfigError: when a name is not a valid project entry, the project
        or settings file is unreadable or malformed (it is left alone), or the
        settings file is tracked by version control (it would be ignored).
    :raises OSError: when the settings file cannot be written.
    """
    resolved = resolve_workdir(workdir)
    variables: Mapping[str, str] = os.environ if environ is None else environ
    project = read_source_file(project_file(resolved), Source.PROJECT)
    for diagnostic in project.diagnostics:
        if diagnostic.severity is Severity.ERROR:
            raise ConfigError(f"cannot approve: {diagnostic}")
    fingerprints: dict[str, str] = {}
    for name in names:
        if name not in project.entries:
            known = ", ".join(repr(known) for known in project.entries) or "none"
            raise ConfigError(f"cannot approve {name!r}: {project.origin} has no such server (it has: {known})")
        origin, entry = project.origin, project.entries[name]
        parsed = parse_entry(name, entry, source=Source.PROJECT, origin=origin, workdir=resolved, environ=variables)
        if parsed.config is None:
            problems = "; ".join(str(d) for d in parsed.diagnostics if d.severity is Severity.ERROR)
            raise ConfigError(f"cannot approve {name!r}, its entry is invalid: {problems}")
        fingerprints[name] = parsed.config.fingerprint

    path = settings_file(resolved)
    document: dict[str, object] = {}
    mode: int | None = None
    try:
        data = read_file_bytes(path)
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        pass
    except UnreadableFile as error:
        raise ConfigError(f"cannot approve: {path} {error}; fix or remove it first") from None
    else:
        tracking = git_tracking(path)
        if tracking.tracked is not False:
            raise ConfigError(f"cannot approve: {path} would be ignored ({tracking.reason}); remove it from git first")
        try:
            parsed_document = parse_json_document(data)
            _approval_of(parsed_document)  # refuse to rewrite what we could not read back
        except UnreadableFile as error:
            raise ConfigError(f"cannot approve: {path} is {error}; fix or remove it first") from None
        except _Malformed as error:
            raise ConfigError(f"cannot approve: {path}: {error.reason}; fix or remove it first") from None
        document = dict(cast(Mapping[str, object], parsed_document))

    section = dict(cast(Mapping[str, object], document.get(_SECTION) or {}))
    enabled = list(cast(list[str], section.get("enabled") or []))
    enabled += [name for name in fingerprints if name not in enabled]
    section["enabled"] = enabled
    section["approved"] = {**cast(Mapping[str, str], section.get("approved") or {}), **fingerprints}
    if "disabled" in section:
        section["disabled"] = [name for name in cast(list[str], section["disabled"]) if name not in fingerprints]
    document[_SECTION] = section
    _write_atomically(path, document, mode)
    return fingerprints


def _write_atomically(path: Path, document: Mapping[str, object], mode: int | None) -> None:
    try:
        data = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a name: keep it, escaped
        data = (json.dumps(document, indent=2) + "\n").encode("ascii")
    path.parent.mkdir(exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    # The rename is durable only once the directory is; not every platform can open one.
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
