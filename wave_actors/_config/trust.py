"""Project trust: which ``.mcp.json`` entries may load in ``approved`` mode, and why (R-CFG-10).

A project file comes with the repository, so whoever wrote the repository
chose its commands. In ``approved`` mode a project entry loads only when the
user's home holds an approval of that name *at that fingerprint* (R-CFG-8):
the approvals record, :mod:`wave_actors._config.approvals`. Nothing inside
the workdir can create, widen or forge one; checking whether git tracks a
file is a heuristic, and every heuristic has had a hole. Approvals come from
two explicit user actions:

* **approving names** (``wave-actors approve NAME``,
  :meth:`TrustStore.approve <wave_actors.TrustStore.approve>`): each is
  recorded with the entry's fingerprint as it is now;
* **trusting the folder** (``wave-actors trust DIR``,
  :meth:`TrustStore.trust <wave_actors.TrustStore.trust>`): from then on the
  folder's own ``<workdir>/.wave/settings.local.json``, the user's wish list,
  counts::

    {"mcp_json": {"enabled": ["docs"], "enable_all": false, "disabled": ["shell"]}}

  When it enables a name that has no approval yet, the fingerprint seen then
  is recorded (by the load that sees it first, or by the trust itself), and
  binds from then on.

The verdict on one entry (:class:`ApprovalState`):

1. ``disabled`` always wins, wherever it is written: the settings file's
   ``disabled`` (trusted or not: switching a server off is always safe), or a
   revocation in the record. A settings file that cannot be read (malformed,
   a FIFO, too big) loads no project entry at all: when in doubt, do not run
   the repository's commands.
2. An approval at the entry's fingerprint: ``approved``. At another
   fingerprint: ``changed since approval``, not loaded, with a warning naming
   the fields that changed (never their values, R-CFG-12), until approved again.
3. No approval, but the settings file of a trusted folder enables the name:
   ``approved``, and the fingerprint is recorded now. Its ``approved`` map,
   ``{name: fingerprint}`` (an older form), enables a name only at that
   fingerprint.
4. Otherwise ``pending``: not loaded. If an untrusted folder's settings file
   enables it, the diagnostic says so ("this folder is not trusted; run
   ``wave-actors trust DIR``"): the file is a wish, never an approval.

Whether git tracks the settings file is no longer a gate; in a trusted
folder, a committed settings file gets a warning (whoever can push to the
repository chooses which of its servers run there). In ``all`` mode (the
default) neither file is read.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Literal, cast

import attrs

from wave_actors._config.approvals import (
    Approval,
    ProjectRecord,
    approvals_file,
    edit_project_record,
    read_project_record,
)
from wave_actors._config.converter import CONVERTER, EntryInvalid, describe_value, structure_strictly
from wave_actors._config.entry import parse_entry
from wave_actors._config.model import Diagnostic, ServerConfig, Severity, Source
from wave_actors._config.sources import SourceFile, UnreadableFile, parse_json_document, read_file_bytes
from wave_actors._config.vcs import git_tracking
from wave_actors._errors import ConfigError
from wave_actors._frozen import freeze_mapping

__all__ = [
    "SETTINGS_FILE",
    "TRUST_MODES",
    "ApprovalState",
    "ProjectTrust",
    "ProjectWish",
    "ServerTrust",
    "TrustInputs",
    "TrustMode",
    "Verdict",
    "judge_project",
    "read_trust_inputs",
    "record_first_approvals",
    "settings_file",
]

TrustMode = Literal["all", "approved"]
"""``all``: every project entry loads. ``approved``: only those the user approved (R-CFG-10)."""

TRUST_MODES: Final[tuple[TrustMode, ...]] = ("all", "approved")

SETTINGS_FILE: Final = Path(".wave") / "settings.local.json"
"""The user's wish list for a project's servers, relative to the workdir (R-CFG-10)."""

_SECTION: Final = "mcp_json"


def settings_file(workdir: Path | str) -> Path:
    """``<workdir>/.wave/settings.local.json`` (R-CFG-10)."""
    return Path(workdir) / SETTINGS_FILE


def _command_hint(*words: str) -> str:
    """A ``wave-actors`` command line to suggest, each word quoted for a POSIX shell."""
    return "`" + " ".join(["wave-actors", *(shlex.quote(word) for word in words)]) + "`"


class ApprovalState(str, enum.Enum):
    """What ``approved`` trust mode does with a project entry (R-CFG-10)."""

    APPROVED = "approved"
    """Approved at its current fingerprint: it loads."""

    CHANGED = "changed"
    """Approved at another fingerprint: changed since approval, it does not load until approved again."""

    PENDING = "pending"
    """Not approved: it does not load."""

    DISABLED = "disabled"
    """Disabled in the settings file, or revoked: it does not load, whatever else says."""


@attrs.frozen
class ProjectWish:
    """The ``mcp_json`` section of ``<workdir>/.wave/settings.local.json``: the user's wish list (R-CFG-10).

    :param enabled: names wished for one by one.
    :param enable_all: every name not in :attr:`disabled` is wished for.
    :param disabled: names never loaded, whatever else says.
    :param approved: an older form: names wished for at one fingerprint each.
    """

    enabled: tuple[str, ...] = ()
    enable_all: bool = False
    disabled: tuple[str, ...] = ()
    approved: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping)

    def wishes(self, name: str) -> bool:
        """Whether the file enables ``name`` (``disabled`` aside)."""
        return self.enable_all or name in self.enabled or name in self.approved

    @property
    def wishes_any(self) -> bool:
        """Whether the file enables anything at all."""
        return self.enable_all or bool(self.enabled) or bool(self.approved)


# Built at import, not in whichever worker thread first loads a configuration.
CONVERTER.get_structure_hook(ProjectWish)


@attrs.frozen
class ServerTrust:
    """One project entry's standing in ``approved`` trust mode (R-CFG-10).

    :param name: the server's name in ``.mcp.json``.
    :param state: whether it loads, and if not, why not.
    :param reason: the same, for a person, with what to do about it.
    :param fingerprint: the entry's fingerprint now (R-CFG-8); ``None`` when
        the entry is invalid.
    :param approved_fingerprint: the fingerprint the user approved; ``None``
        when there is no approval (or it is yet to be recorded for a trusted
        folder's wish).
    :param changed_fields: for :attr:`ApprovalState.CHANGED`, the fields that
        differ from the approved entry (``"command"``, ``"env API_TOKEN"``, ...);
        never their values.
    :param config: the entry as it would load (expanded); ``None`` when invalid.
    :param enabled_in_settings: the folder's settings file enables it (and does
        not disable it): trusting the folder approves it, if nothing else does.
    """

    name: str
    state: ApprovalState
    reason: str
    fingerprint: str | None = None
    approved_fingerprint: str | None = None
    changed_fields: tuple[str, ...] = ()
    config: ServerConfig | None = None
    enabled_in_settings: bool = False


@attrs.frozen
class ProjectTrust:
    """A project's trust: whether the folder is trusted, and the standing of each of its entries (R-CFG-10).

    :param workdir: the resolved project directory.
    :param trusted: the user trusts the folder, so its settings file may approve servers.
    :param approvals_file: the record in the user's home that holds approvals.
    :param settings_file: the folder's wish list, ``<workdir>/.wave/settings.local.json``.
    :param servers: every entry of ``<workdir>/.mcp.json``, in the file's order.
    :param unused_approvals: approved or revoked names the project file does not have (now).
    :param diagnostics: what was wrong with the files read, and why each invalid entry is invalid.
    """

    workdir: str
    trusted: bool
    approvals_file: str
    settings_file: str
    servers: tuple[ServerTrust, ...] = ()
    unused_approvals: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    def server(self, name: str) -> ServerTrust:
        """The standing of the entry ``name``.

        :raises KeyError: the project file has no such entry.
        """
        for server in self.servers:
            if server.name == name:
                return server
        raise KeyError(name)


@attrs.frozen
class Verdict:
    """What becomes of one project entry in ``approved`` mode.

    :param state: loads (:attr:`ApprovalState.APPROVED`) or not.
    :param reason: for the diagnostic.
    :param approved_fingerprint: what the record approved, if anything.
    :param changed_fields: what changed since, for :attr:`ApprovalState.CHANGED`.
    :param first_seen: a trusted folder's wish with no approval yet: record it now.
    """

    state: ApprovalState
    reason: str
    approved_fingerprint: str | None = None
    changed_fields: tuple[str, ...] = ()
    first_seen: bool = False


@attrs.frozen
class TrustInputs:
    """What ``approved`` mode reads for one workdir: the wish list and the user's record (R-CFG-10).

    :param workdir: the resolved project directory.
    :param home: the host's home, where the record is.
    :param wish: the settings file's section; ``None`` when the file is unusable.
    :param record: what the user decided about the workdir.
    :param diagnostics: the settings file unusable, the record unusable, an
        untrusted folder's wishes, a committed settings file.
    """

    workdir: Path
    home: Path
    wish: ProjectWish | None
    record: ProjectRecord
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def settings_path(self) -> Path:
        """``<workdir>/.wave/settings.local.json``."""
        return settings_file(self.workdir)

    @property
    def record_path(self) -> Path:
        """``<home>/project-trust.json``."""
        return approvals_file(self.home)

    def before_parsing(self, name: str) -> Verdict | None:
        """The verdict on ``name`` when the entry need not be read for it, or ``None`` when it must be.

        An entry that cannot load is neither validated nor expanded: untrusted
        content is not judged.
        """
        if self.wish is None:
            reason = f"{self.settings_path} is unusable, so no project server loads until it is fixed"
            return Verdict(ApprovalState.PENDING, reason)
        if name in self.wish.disabled:
            return Verdict(
                ApprovalState.DISABLED,
                f'it is listed in "{_SECTION}.disabled" of {self.settings_path}; take it out of that list to let it load',
            )
        if name in self.record.revoked:
            hint = _command_hint("approve", name, "--workdir", str(self.workdir))
            return Verdict(ApprovalState.DISABLED, f"it was revoked in {self.record_path}; {hint} approves it again")
        if name in self.record.approved or (self.record.trusted and self.wish.wishes(name)):
            return None
        if self.wish.wishes(name):
            hint = _command_hint("trust", str(self.workdir))
            reason = (
                f"it is enabled in {self.settings_path}, but this folder is not trusted, so that file approves "
                f"nothing; run {hint} to let it"
            )
            return Verdict(ApprovalState.PENDING, reason)
        hint = _command_hint("approve", name, "--workdir", str(self.workdir))
        return Verdict(ApprovalState.PENDING, f"it is not approved; review it, then run {hint}")

    def verdict(self, name: str, config: ServerConfig | None) -> Verdict:
        """The verdict on ``name``, loaded as ``config`` (``None``: the entry is invalid)."""
        refused = self.before_parsing(name)
        if refused is not None:
            return refused
        approval = self.record.approved.get(name)
        hint = _command_hint("approve", name, "--workdir", str(self.workdir))
        if approval is not None:
            if config is not None and approval.fingerprint == config.fingerprint:
                return Verdict(
                    ApprovalState.APPROVED, f"approved at fingerprint {approval.fingerprint}", approval.fingerprint
                )
            if config is None:
                reason = f"changed since approval: not loaded (the entry is invalid now); fix it, then run {hint}"
                return Verdict(ApprovalState.CHANGED, reason, approval.fingerprint)
            changed = approval.changes(config)
            reason = (
                f"changed since approval: not loaded ({', '.join(changed)} changed); review the entry, then run {hint}"
            )
            return Verdict(ApprovalState.CHANGED, reason, approval.fingerprint, changed)
        assert self.wish is not None  # before_parsing refused otherwise
        listed = self.wish.approved.get(name)
        if config is not None and listed is not None and listed != config.fingerprint:
            reason = (
                f"changed since approval: not loaded ({self.settings_path} enables it at fingerprint {listed}, "
                f"now {config.fingerprint}); review the entry, then run {hint}"
            )
            return Verdict(ApprovalState.CHANGED, reason, listed)
        return Verdict(
            ApprovalState.APPROVED,
            f"enabled in {self.settings_path} of this trusted folder; its fingerprint is recorded as it loads",
            first_seen=True,
        )


# Reading.


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


def _wish_of(document: object) -> ProjectWish:
    section = _section_of(document)
    if section is None:
        return ProjectWish()
    fields = {str(key): value for key, value in section.items()}
    try:
        return structure_strictly(fields, ProjectWish)
    except EntryInvalid as invalid:
        problem = invalid.problems[0]
        raise _Malformed(f"{_SECTION}.{problem.path}: {problem.message}", f"{_SECTION}.{problem.path}") from None


def _read_wish(workdir: Path) -> tuple[ProjectWish | None, tuple[Diagnostic, ...]]:
    """The settings file's wish list; ``None`` (with an error diagnostic) when it is unusable."""
    path = settings_file(workdir)

    def refused(reason: str, field: str | None = None) -> tuple[None, tuple[Diagnostic, ...]]:
        message = f"{reason}; no project server is approved"
        return None, (Diagnostic(Severity.ERROR, Source.PROJECT, str(path), message, field=field),)

    try:
        return _wish_of(parse_json_document(read_file_bytes(path))), ()
    except FileNotFoundError:
        return ProjectWish(), ()
    except UnreadableFile as error:
        return refused(str(error))
    except _Malformed as error:
        return refused(error.reason, error.field)


def read_trust_inputs(home: Path, workdir: Path) -> TrustInputs:
    """Read the wish list and the user's record of ``workdir``; never raises (R-CFG-4, R-CFG-10).

    In a trusted folder whose settings file enables anything, git is asked
    whether it tracks that file (:mod:`wave_actors._config.vcs`): a warning,
    never a gate.

    :param home: the host's home directory.
    :param workdir: the resolved project directory.
    """
    wish, diagnostics = _read_wish(workdir)
    record, problems = read_project_record(home, workdir)
    found = [*diagnostics, *problems]
    path = str(settings_file(workdir))
    if wish is not None and wish.wishes_any and not record.trusted:
        hint = _command_hint("trust", str(workdir))
        message = (
            f"this folder is not trusted, so the servers this file enables are not approved; run {hint} "
            f"if you trust it, or approve servers one by one ({_command_hint('approve', 'NAME')})"
        )
        found.append(Diagnostic(Severity.WARNING, Source.PROJECT, path, message))
    elif wish is not None and wish.wishes_any and git_tracking(workdir, settings_file(workdir)).tracked:
        message = (
            "this file is committed to the repository: whoever can push to it chooses which of its servers run in "
            "this trusted folder; keep it out of git ('git rm --cached', then list it in .gitignore)"
        )
        found.append(Diagnostic(Severity.WARNING, Source.PROJECT, path, message))
    return TrustInputs(workdir, home, wish, record, tuple(found))


def record_first_approvals(
    inputs: TrustInputs, configs: Mapping[str, ServerConfig]
) -> tuple[set[str], tuple[Diagnostic, ...]]:
    """Record the fingerprints of a trusted folder's newly wished-for entries, as they are now (R-CFG-10).

    Under the record's lock, each is recorded only if the folder is still
    trusted and the name has no approval and no revocation by then.

    :param inputs: what the load read.
    :param configs: the entries to record, by name.
    :returns: the names approved at their current fingerprint once the edit
        is done, and an error diagnostic when the record could not be written
        (then none is).
    """
    if not configs:
        return set(), ()

    def change(record: ProjectRecord) -> ProjectRecord:
        if not record.trusted:
            return record
        added = {
            name: Approval.of(config, by="trusted folder")
            for name, config in configs.items()
            if name not in record.approved and name not in record.revoked
        }
        return attrs.evolve(record, approved={**record.approved, **added}) if added else record

    try:
        record = edit_project_record(inputs.home, inputs.workdir, change)
    except ConfigError as error:
        message = f"{error}; the servers this trusted folder enables were not loaded ({', '.join(sorted(configs))})"
        return set(), (Diagnostic(Severity.ERROR, Source.USER, str(inputs.record_path), message),)
    approved = {
        name
        for name, config in configs.items()
        if (approval := record.approved.get(name)) is not None and approval.fingerprint == config.fingerprint
    }
    return approved, ()


def judge_project(inputs: TrustInputs, project: SourceFile, environ: Mapping[str, str]) -> ProjectTrust:
    """Every entry of the project file with its standing, as ``approved`` mode would judge it now (R-CFG-10).

    Reads nothing and writes nothing: a trusted folder's wish that has no
    approval yet is :attr:`ApprovalState.APPROVED` with no approved
    fingerprint (the next load records it).

    :param inputs: the wish list and the record.
    :param project: the project file as read.
    :param environ: the variables ``${VAR}`` expands from.
    """
    servers: list[ServerTrust] = []
    skipped: list[Diagnostic] = []  # why an invalid entry cannot be approved
    for name, entry in project.entries.items():
        parsed = parse_entry(
            name, entry, source=Source.PROJECT, origin=project.origin, workdir=inputs.workdir, environ=environ
        )
        config = parsed.config
        if config is None:
            skipped.extend(problem for problem in parsed.diagnostics if problem.severity is Severity.ERROR)
        verdict = inputs.verdict(name, config)
        wish = inputs.wish
        servers.append(
            ServerTrust(
                name,
                verdict.state,
                verdict.reason,
                None if config is None else config.fingerprint,
                verdict.approved_fingerprint,
                verdict.changed_fields,
                config,
                wish is not None and wish.wishes(name) and name not in wish.disabled,
            )
        )
    decided: Iterable[str] = [*inputs.record.approved, *inputs.record.revoked]
    unused = tuple(dict.fromkeys(name for name in decided if name not in project.entries))
    return ProjectTrust(
        str(inputs.workdir),
        inputs.record.trusted,
        str(inputs.record_path),
        str(inputs.settings_path),
        tuple(servers),
        unused,
        (*project.diagnostics, *inputs.diagnostics, *skipped),
    )
