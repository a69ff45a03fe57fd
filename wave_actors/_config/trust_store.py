"""Trusting a project and approving its servers: the user's decisions, recorded in the user's home (R-CFG-10).

:class:`TrustStore` is the public edit API over the approvals record
(:mod:`wave_actors._config.approvals`) for one workdir, the way
:class:`~wave_actors.ConfigStore` is over the configuration files:

* :meth:`~TrustStore.read`: the folder's trust and every project entry's
  standing (:class:`~wave_actors.ProjectTrust`), what a settings page shows;
* :meth:`~TrustStore.trust` / :meth:`~TrustStore.untrust`: let the folder's
  ``.wave/settings.local.json`` approve the servers it enables, or forget
  every decision about the folder;
* :meth:`~TrustStore.review` / :meth:`~TrustStore.approve` /
  :meth:`~TrustStore.revoke`: show what names would be approved as, approve
  them at their current fingerprint, or revoke them.

What is recorded is what the user was shown: :meth:`~TrustStore.approve` and
:meth:`~TrustStore.trust` take the reviewed fingerprints and refuse, with
:class:`~wave_actors.ConfigChanged`, an entry that changed (or appeared)
between the review and the answer.

Every edit is an explicit user action; it is written atomically, under the
record's lock, owner-only (0600). Running sessions see it when they reload
(``await host.reconcile(workdir)``, or by themselves in a host opened with
``watch_config=True``). The ``wave-actors trust``, ``untrust``, ``approve``
and ``revoke`` commands (:mod:`wave_actors._cli.trust`) edit through it.

Everything here is synchronous file I/O: a host on an event loop calls it in
a worker thread (``await trio.to_thread.run_sync(store.approve, ["docs"])``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import final

import attrs

from wave_actors._config.approvals import (
    LOCK_TIMEOUT,
    Approval,
    ProjectRecord,
    approvals_file,
    edit_project_record,
)
from wave_actors._config.loader import home_directory
from wave_actors._config.model import ServerConfig, Severity, Source
from wave_actors._config.sources import SourceFile, project_file, read_source_file, resolve_existing_workdir
from wave_actors._config.store import ConfigChanged
from wave_actors._config.trust import ApprovalState, ProjectTrust, ServerTrust, judge_project, read_trust_inputs
from wave_actors._errors import ConfigError

__all__ = ["TrustStore"]


@final
class TrustStore:
    """The user's trust decisions about one project directory, kept in the user's home (R-CFG-10).

    :param workdir: the project directory; resolved (absolute, no symlinks)
        now: the record is keyed by that path.
    :param home: the directory holding the approvals record ``project-trust.json``;
        default ``~/.wave``. Use the host's ``home``.
    :param environ: the variables ``${VAR}`` expands from, which fingerprints
        cover; default :data:`os.environ`. Use the environment the host loads
        its configuration with.
    :param lock_timeout: seconds an edit waits for another writer of the record.
    :raises ConfigError: ``workdir`` does not exist or is not a directory.
    """

    def __init__(
        self,
        workdir: Path | str,
        *,
        home: Path | str | None = None,
        environ: Mapping[str, str] | None = None,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self._workdir = resolve_existing_workdir(workdir)
        self._home = home_directory(home)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._lock_timeout = lock_timeout

    @property
    def workdir(self) -> Path:
        """The resolved project directory."""
        return self._workdir

    @property
    def path(self) -> Path:
        """The approvals record, ``<home>/project-trust.json``, whether or not it exists."""
        return approvals_file(self._home)

    def read(self) -> ProjectTrust:
        """Whether the folder is trusted, and the standing of every entry of its ``.mcp.json``.

        Writes nothing: an entry a trusted folder's settings enable, not
        recorded yet, is ``approved`` with no approved fingerprint (the next
        load records it).
        """
        return judge_project(read_trust_inputs(self._home, self._workdir), self._project(), self._environ)

    def trust(self, *, fingerprints: Mapping[str, str] | None = None) -> ProjectTrust:
        """Trust the folder: its ``.wave/settings.local.json`` approves the servers it enables, from now on.

        The entries it enables now are recorded at their current fingerprint
        (a later change needs approval again); those it enables later are
        recorded by the load that sees them first.

        :param fingerprints: the entries the user reviewed (from :meth:`read`:
            those ``enabled_in_settings`` and ``pending``), by name: when the
            file enables another entry now, or one of them changed, nothing is
            recorded.
        :returns: the project's trust, as now recorded.
        :raises ConfigChanged: what the folder enables changed since it was reviewed; review it again.
        :raises ConfigError: the record is unusable or cannot be written.
        """
        now = time.time()

        def change(record: ProjectRecord) -> ProjectRecord:
            trusted = attrs.evolve(record, trusted=True, trusted_at=record.trusted_at or now)
            inputs = attrs.evolve(read_trust_inputs(self._home, self._workdir), record=trusted)
            wished = judge_project(inputs, self._project(), self._environ)
            configs = {
                server.name: server.config
                for server in wished.servers
                if server.state is ApprovalState.APPROVED and server.approved_fingerprint is None and server.config
            }
            _check_reviewed(configs, fingerprints)
            added = {name: Approval.of(config, by="trusted folder", now=now) for name, config in configs.items()}
            return attrs.evolve(trusted, approved={**trusted.approved, **added})

        self._edit(change)
        return self.read()

    def untrust(self) -> ProjectTrust:
        """Forget every decision about the folder: its trust, its approvals, its revocations.

        :returns: the project's trust, now that nothing is approved.
        :raises ConfigError: the record is unusable or cannot be written.
        """
        self._edit(lambda _: ProjectRecord())
        return self.read()

    def review(self, names: Collection[str]) -> tuple[ServerTrust, ...]:
        """The project entries ``names`` as :meth:`approve` would record them now: what to show the user first.

        Each :attr:`ServerTrust.config <wave_actors.ServerTrust.config>` is
        what runs; pass the reviewed fingerprints back to :meth:`approve`, so
        that an entry changed meanwhile is refused rather than approved unseen.

        :param names: entries of ``<workdir>/.mcp.json``; each must be valid.
        :raises ConfigError: a name is not a valid entry of the project file,
            or the project file cannot be read.
        """
        current = self.read()
        unreadable = [
            problem
            for problem in current.diagnostics
            if problem.severity is Severity.ERROR and problem.origin == self._origin and problem.server is None
        ]
        if unreadable:
            raise ConfigError(f"cannot approve: {unreadable[0]}")
        reviewed: list[ServerTrust] = []
        for name in dict.fromkeys(names):
            try:
                server = current.server(name)
            except KeyError:
                known = ", ".join(repr(server.name) for server in current.servers) or "none"
                raise ConfigError(
                    f"cannot approve {name!r}: {self._origin} has no such server (it has: {known})"
                ) from None
            if server.config is None:
                why = [str(problem) for problem in current.diagnostics if problem.server == name]
                said = f" ({'; '.join(why)})" if why else ""
                raise ConfigError(f"cannot approve {name!r}: its entry in {self._origin} is invalid{said}")
            reviewed.append(server)
        return tuple(reviewed)

    def approve(self, names: Collection[str], *, fingerprints: Mapping[str, str] | None = None) -> ProjectTrust:
        """Approve project servers at their current fingerprint (R-CFG-8); a revocation of them ends.

        A name listed in the settings file's ``disabled`` stays disabled:
        ``disabled`` always wins (the result says so).

        :param names: entries of ``<workdir>/.mcp.json``; each must be valid.
        :param fingerprints: the fingerprints the user reviewed (:meth:`review`),
            by name: an entry whose fingerprint is another one now is refused.
        :returns: the project's trust, as now recorded.
        :raises ConfigChanged: an entry changed since it was reviewed; review it again.
        :raises ConfigError: a name is not a valid entry of the project file,
            the project file cannot be read, or the record is unusable or
            cannot be written. Nothing is recorded then.
        """
        configs = {server.name: server.config for server in self.review(names) if server.config is not None}
        _check_reviewed(configs, fingerprints)
        now = time.time()

        def change(record: ProjectRecord) -> ProjectRecord:
            approved = {name: Approval.of(config, by="approve", now=now) for name, config in configs.items()}
            revoked = tuple(name for name in record.revoked if name not in approved)
            return attrs.evolve(record, approved={**record.approved, **approved}, revoked=revoked)

        self._edit(change)
        return self.read()

    def revoke(self, names: Collection[str]) -> ProjectTrust:
        """Revoke project servers: they do not load until approved again, whatever the folder's settings say.

        :param names: entries of ``<workdir>/.mcp.json``, or names approved before.
        :returns: the project's trust, as now recorded.
        :raises ConfigError: a name is neither in the project file nor
            approved, or the record is unusable or cannot be written.
        """
        current = self.read()
        known = {server.name for server in current.servers} | set(current.unused_approvals)
        for name in names:
            if name not in known:
                listed = ", ".join(repr(known_name) for known_name in sorted(known)) or "none"
                unreadable = [
                    str(problem)
                    for problem in current.diagnostics
                    if problem.severity is Severity.ERROR and problem.origin == self._origin and problem.server is None
                ]
                said = f"; {unreadable[0]}" if unreadable else ""
                raise ConfigError(f"cannot revoke {name!r}: no such server in {self._origin} (known: {listed}){said}")

        def change(record: ProjectRecord) -> ProjectRecord:
            approved = {name: approval for name, approval in record.approved.items() if name not in names}
            revoked = (*record.revoked, *(name for name in dict.fromkeys(names) if name not in record.revoked))
            return attrs.evolve(record, approved=approved, revoked=revoked)

        self._edit(change)
        return self.read()

    # Helpers.

    @property
    def _origin(self) -> str:
        return str(project_file(self._workdir))

    def _project(self) -> SourceFile:
        return read_source_file(project_file(self._workdir), Source.PROJECT)

    def _edit(self, change: Callable[[ProjectRecord], ProjectRecord]) -> None:
        edit_project_record(self._home, self._workdir, change, lock_timeout=self._lock_timeout)


def _check_reviewed(configs: Mapping[str, ServerConfig], fingerprints: Mapping[str, str] | None) -> None:
    """Refuse to record what the user did not see: an entry whose fingerprint is not the one reviewed."""
    if fingerprints is None:
        return
    unseen = sorted(name for name, config in configs.items() if fingerprints.get(name) != config.fingerprint)
    if unseen:
        raise ConfigChanged(
            f"{', '.join(repr(name) for name in unseen)} changed since it was reviewed (or was not shown); "
            "review again before approving"
        )
