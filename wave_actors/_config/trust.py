"""Project trust: which ``.mcp.json`` entries may load in ``approved`` mode (R-CFG-10).

A project file comes with the repository, so whoever wrote the repository
chose its commands. In ``approved`` mode a project entry loads only when the
user named it in the uncommitted ``<workdir>/.wave/settings.local.json``::

    {"mcp_json": {"enabled": ["docs"], "enable_all": false, "disabled": ["shell"]}}

``disabled`` always wins; ``enable_all`` approves every name not disabled.
A missing file, or a file without ``mcp_json``, approves nothing. A malformed
file is reported and also approves nothing: when in doubt, do not run the
repository's commands. Other keys of the settings file belong to the host and
are ignored. In ``all`` mode (the default) the settings file is not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, cast

import attrs

from wave_actors._config.converter import EntryInvalid, describe_value, structure_strictly
from wave_actors._config.model import Diagnostic, Severity, Source
from wave_actors._config.sources import UnreadableFile, read_json_document

__all__ = ["SETTINGS_FILE", "TRUST_MODES", "ProjectApproval", "TrustMode", "read_project_approval", "settings_file"]

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
    """

    enabled: tuple[str, ...] = ()
    enable_all: bool = False
    disabled: tuple[str, ...] = ()

    def refusal(self, name: str) -> str | None:
        """Why the project entry ``name`` may not load, or ``None`` if it may."""
        if name in self.disabled:
            return f'it is listed in "{_SECTION}.disabled"'
        if self.enable_all or name in self.enabled:
            return None
        return f'it is not approved; add it to "{_SECTION}.enabled" to load it'


def read_project_approval(workdir: Path) -> tuple[ProjectApproval, tuple[Diagnostic, ...]]:
    """Read the approvals of ``workdir``; never raises (R-CFG-4, R-CFG-10).

    :param workdir: the resolved project directory.
    :returns: the approvals (none when missing or malformed) and, when the
        file is malformed, an error diagnostic saying why nothing is approved.
    """
    path = settings_file(workdir)
    origin = str(path)

    def malformed(reason: str, field: str | None = None) -> tuple[ProjectApproval, tuple[Diagnostic, ...]]:
        message = f"{reason}; no project server is approved"
        return ProjectApproval(), (Diagnostic(Severity.ERROR, Source.PROJECT, origin, message, field=field),)

    try:
        document = read_json_document(path)
    except FileNotFoundError:
        return ProjectApproval(), ()
    except UnreadableFile as error:
        return malformed(str(error))
    if not isinstance(document, Mapping):
        return malformed(f"the top level must be a JSON object, got {describe_value(document)}")
    section = cast(Mapping[object, object], document).get(_SECTION)
    if section is None:
        return ProjectApproval(), ()
    if not isinstance(section, Mapping):
        return malformed(f'"{_SECTION}" must be an object, got {describe_value(section)}', _SECTION)
    fields = {str(key): value for key, value in cast(Mapping[object, object], section).items()}
    try:
        return structure_strictly(fields, ProjectApproval), ()
    except EntryInvalid as invalid:
        problem = invalid.problems[0]
        return malformed(f"{_SECTION}.{problem.path}: {problem.message}", f"{_SECTION}.{problem.path}")
