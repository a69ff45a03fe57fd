"""``wave-actors trust``, ``untrust``, ``approve`` and ``revoke``: the user's decisions about a project (R-CFG-10, R-CLI).

Each records through :class:`~wave_actors._config.trust_store.TrustStore` in
the approvals record of ``--home`` (never in the project):

* ``trust [DIR]`` lets the folder's ``.wave/settings.local.json`` approve the
  servers it enables; ``untrust [DIR]`` forgets every decision about it;
* ``approve NAME...`` approves project servers at their current fingerprint;
  ``revoke NAME...`` revokes them.

``trust`` and ``approve`` first show what would run (each server's command,
its arguments, the *names* of its variables and headers, a URL with its
secrets masked, R-CFG-12) and ask; ``--yes`` answers for scripts, and
``--json`` needs it. :func:`trust_document` is the JSON form of a project's
trust, which ``servers --json`` shows too, and :func:`trust_block` its text
form. Exit codes: 0 recorded; 1 declined, an entry changed while it was
reviewed, or the record could not be written; 2 bad arguments, an unknown
server, an invalid entry or an unusable record file. What is recorded is
what was shown: an entry that changed between the review and the answer is
refused (:class:`~wave_actors.ConfigChanged`), not approved unseen. No runtime is imported: deciding dials nothing.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from wave_actors._cli.arguments import CommandParser, edited_options, home, workdir
from wave_actors._cli.edit import edit_failed
from wave_actors._config import ApprovalState, ConfigError, ProjectTrust, ServerTrust, TrustStore, redact_url
from wave_actors._console import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    PROGRAM,
    fail,
    one_line,
    printable,
    table,
    write_json,
)

__all__ = ["add_trust_commands", "approve", "revoke", "trust", "trust_block", "trust_document", "untrust"]

_CODES = (
    "exit codes: 0 recorded; 1 declined at the question, an entry changed while it was reviewed, or the record "
    "could not be written; 2 bad arguments, an unknown server, an invalid entry, or an unusable approvals record"
)


def add_trust_commands(commands: Any, output: CommandParser) -> None:
    """Add the ``trust``, ``untrust``, ``approve`` and ``revoke`` subcommands to ``commands``.

    :param commands: the subparsers of the ``wave-actors`` parser.
    :param output: the ``--json`` parent parser.
    """
    home_only = CommandParser(add_help=False)
    home_only.add_argument(
        "--home",
        type=Path,
        default=None,
        help="directory of the approvals record project-trust.json (default: ~/.wave)",
    )
    answer = CommandParser(add_help=False)
    answer.add_argument("--yes", action="store_true", help="record without asking (for scripts; --json needs it)")
    trust_command = commands.add_parser(
        "trust",
        parents=[home_only, answer, output],
        help="trust a project folder: its .wave/settings.local.json may approve its servers",
        description="Trust DIR: from now on the servers its own .wave/settings.local.json enables are approved, "
        "each at the fingerprint it has when it is first seen (a later change needs approval again). Shows "
        "what that approves now and asks first. The decision is recorded in <home>/project-trust.json.",
        epilog=_CODES,
    )
    trust_command.add_argument("directory", nargs="?", type=Path, default=None, metavar="DIR")
    untrust_command = commands.add_parser(
        "untrust",
        parents=[home_only, output],
        help="forget every trust decision about a project folder",
        description="Forget DIR's trust, approvals and revocations: none of its servers is approved any more.",
        epilog=_CODES,
    )
    untrust_command.add_argument("directory", nargs="?", type=Path, default=None, metavar="DIR")
    edited = edited_options()
    approve_command = commands.add_parser(
        "approve",
        parents=[edited, answer, output],
        help="approve project servers at their current fingerprint",
        description="Approve SERVER(s) of <workdir>/.mcp.json for --trust approved: shows what each runs and "
        "asks first. An approval binds the entry as it is now: a change of its command, arguments, "
        "environment, cwd, URL or headers needs approval again.",
        epilog=_CODES,
    )
    approve_command.add_argument("servers", nargs="+", metavar="SERVER")
    revoke_command = commands.add_parser(
        "revoke",
        parents=[edited, output],
        help="revoke project servers: they do not load until approved again",
        description="Revoke SERVER(s) of <workdir>/.mcp.json: they do not load in --trust approved until "
        "approved again, whatever the folder's settings file says.",
        epilog=_CODES,
    )
    revoke_command.add_argument("servers", nargs="+", metavar="SERVER")


# Reading what the user decides about.


def _directory(arguments: argparse.Namespace) -> Path:
    path = cast(Path | None, arguments.directory) or Path.cwd()
    if not path.is_dir():
        fail(f"{path}: not a directory", EXIT_USAGE)
    return path


def _store(directory: Path, arguments: argparse.Namespace) -> TrustStore:
    try:
        return TrustStore(directory, home=home(arguments))
    except ConfigError as error:
        edit_failed(error)


def _review(server: ServerTrust) -> list[str]:
    """What ``server`` runs, for a person to judge: never a variable's or a header's value (R-CFG-12)."""
    config = server.config
    if config is None:
        return [f"{server.name}: invalid entry"]
    lines = [f"{server.name} ({config.type}), fingerprint {server.fingerprint}"]
    if config.command is not None:
        lines.append(f"  command: {shlex.quote(config.command)}")
    if config.args:
        lines.append(f"  args: {shlex.join(config.args)}")
    if config.cwd is not None:
        lines.append(f"  cwd: {config.cwd}")
    if config.env:
        lines.append(f"  env: {', '.join(config.env)} (values not shown)")
    if config.url is not None:
        lines.append(f"  url: {redact_url(config.url)}")
    if config.headers:
        lines.append(f"  headers: {', '.join(config.headers)} (values not shown)")
    if server.state is ApprovalState.CHANGED and server.changed_fields:
        lines.append(f"  changed since approval: {', '.join(server.changed_fields)}")
    return lines


def _confirmed(arguments: argparse.Namespace, reviewed: Sequence[ServerTrust], question: str, out: TextIO) -> bool:
    """Show ``reviewed`` and ask; ``--yes`` answers yes. An answer other than y or yes (or none) is no."""
    if arguments.yes:
        return True
    if arguments.json:
        fail("--json needs --yes: nothing would answer the question", EXIT_USAGE)
    for server in reviewed:
        for line in _review(server):
            out.write(printable(line) + "\n")
    out.write(f"{printable(question)} [y/N] ")
    out.flush()
    line = sys.stdin.readline()
    if not line.endswith("\n") or not sys.stdin.isatty():
        out.write("\n")  # a piped answer (or none) is not echoed: end the question's line
    return line.strip().lower() in ("y", "yes")


def _reviewed(servers: Sequence[ServerTrust]) -> dict[str, str]:
    """The fingerprints the user was shown: what a decision may record, and nothing else."""
    return {server.name: server.fingerprint for server in servers if server.fingerprint is not None}


def _declined(out: TextIO) -> int:
    out.flush()
    sys.stderr.write(f"{PROGRAM}: nothing recorded\n")
    return EXIT_FAILURE


# The forms of a project's trust.


def trust_document(trust: ProjectTrust) -> dict[str, object]:
    """A JSON-ready view of a project's trust (each entry's state; no values of variables or headers).

    :param trust: what :meth:`TrustStore.read <wave_actors.TrustStore.read>` returned.
    """
    return {
        "workdir": trust.workdir,
        "trusted": trust.trusted,
        "approvals_file": trust.approvals_file,
        "settings_file": trust.settings_file,
        "servers": [
            {
                "name": server.name,
                "state": server.state.value,
                "fingerprint": server.fingerprint,
                "approved_fingerprint": server.approved_fingerprint,
                "changed_fields": list(server.changed_fields),
                "enabled_in_settings": server.enabled_in_settings,
                "reason": server.reason,
            }
            for server in trust.servers
        ],
        "unused_approvals": list(trust.unused_approvals),
    }


def _detail(server: ServerTrust) -> str:
    if server.state is ApprovalState.APPROVED:
        return f"at {server.approved_fingerprint}" if server.approved_fingerprint else "enabled by the trusted folder"
    if server.state is ApprovalState.CHANGED:
        return f"{', '.join(server.changed_fields) or 'the entry'} changed since approval"
    if server.state is ApprovalState.PENDING and server.enabled_in_settings:
        return "enabled by the settings file; the folder is not trusted"
    return server.reason.removeprefix("it is ").removeprefix("it was ").split(";")[0]


def trust_block(trust: ProjectTrust) -> str:
    """A project's trust as text: whether the folder is trusted, and a table of its entries' states.

    :param trust: what :meth:`TrustStore.read <wave_actors.TrustStore.read>` returned.
    """
    folder = "trusted" if trust.trusted else "not trusted"
    lines = [f"project servers in --trust approved (folder {folder}; approvals in {trust.approvals_file}):"]
    rows = [[server.name, server.state.value, _detail(server)] for server in trust.servers]
    lines.append(table(["NAME", "STATE", "DETAIL"], rows, indent="  "))
    if trust.unused_approvals:
        lines.append(f"  decided, no longer in the project file: {', '.join(trust.unused_approvals)}")
    lines.extend(f"  {advice}" for advice in _what_to_do(trust))
    return printable("\n".join(lines))


def _what_to_do(trust: ProjectTrust) -> list[str]:
    """How to let the servers that do not load load: the command to run, or the settings file to edit (R-CFG-10)."""
    workdir = shlex.quote(trust.workdir)

    def named(*states: ApprovalState) -> list[str]:
        return [shlex.quote(server.name) for server in trust.servers if server.state in states and server.config]

    advice: list[str] = []
    waiting = named(ApprovalState.PENDING, ApprovalState.CHANGED)
    if waiting:
        enable = f'or list them in "mcp_json": {{"enabled": [...]}} of {trust.settings_file}'
        how = enable + (" (this folder is trusted)" if trust.trusted else f" and trust the folder ({PROGRAM} trust)")
        advice.append(f"to load them, review them, then run: {PROGRAM} approve {' '.join(waiting)} --workdir {workdir}")
        advice[-1] += f"; {how}"
    if named(ApprovalState.DISABLED):
        advice.append(
            f'a disabled server loads again once it is out of "mcp_json.disabled" of {trust.settings_file}, '
            f"or, if it was revoked, once approved again ({PROGRAM} approve NAME --workdir {workdir})"
        )
    return advice


def _report(action: str, trust: ProjectTrust, arguments: argparse.Namespace, out: TextIO, said: str) -> int:
    """The outcome on ``out`` (text, or ``--json``); what was wrong with the files read, on stderr."""
    if arguments.json:
        write_json({"action": action, **trust_document(trust)}, out)
    else:
        out.write(printable(said) + "\n")
        if trust.servers or trust.unused_approvals:
            out.write(trust_block(trust) + "\n")
    out.flush()
    for diagnostic in trust.diagnostics:
        sys.stderr.write(f"{PROGRAM}: {one_line(diagnostic)}\n")
    return EXIT_OK


# The subcommands.


def trust(arguments: argparse.Namespace, out: TextIO) -> int:
    """Trust DIR, once the user saw what its settings file approves now.

    :param arguments: the parsed command line.
    :param out: where the review, the question and the outcome go.
    :returns: :data:`~wave_actors._console.EXIT_OK`, or :data:`~wave_actors._console.EXIT_FAILURE` when declined.
    :raises CommandFailed: see the module's exit codes.
    """
    directory = _directory(arguments)
    store = _store(directory, arguments)
    try:
        current = store.read()
        wished = [
            server
            for server in current.servers
            if server.enabled_in_settings and server.state is ApprovalState.PENDING and server.config is not None
        ]
        if not arguments.yes and not arguments.json:
            enables = f"approves these {len(wished)} server(s) now" if wished else "approves no server now"
            out.write(printable(f"trusting {store.workdir}: its {current.settings_file} {enables}") + "\n")
            out.write("(and those it enables later, each as it is when first seen")
            if not wished:
                out.write(': list them there as {"mcp_json": {"enabled": ["NAME", ...]}}, or "enable_all": true')
            out.write(")\n")
        question = f"Trust {store.workdir}? Its approved servers run as you, with your environment."
        if not _confirmed(arguments, wished, question, out):
            return _declined(out)
        recorded = store.trust(fingerprints=_reviewed(wished))
    except ConfigError as error:
        edit_failed(error)
    return _report("trust", recorded, arguments, out, f"trusted {recorded.workdir}")


def untrust(arguments: argparse.Namespace, out: TextIO) -> int:
    """Forget every decision about DIR.

    :param arguments: the parsed command line.
    :param out: where the outcome goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: see the module's exit codes.
    """
    store = _store(_directory(arguments), arguments)
    try:
        recorded = store.untrust()
    except ConfigError as error:
        edit_failed(error)
    return _report("untrust", recorded, arguments, out, f"forgot every trust decision about {recorded.workdir}")


def approve(arguments: argparse.Namespace, out: TextIO) -> int:
    """Approve SERVER(s) of the project at their current fingerprint, once the user saw what each runs.

    :param arguments: the parsed command line.
    :param out: where the review, the question and the outcome go.
    :returns: :data:`~wave_actors._console.EXIT_OK`, or :data:`~wave_actors._console.EXIT_FAILURE` when declined.
    :raises CommandFailed: see the module's exit codes.
    """
    names = list(dict.fromkeys(cast(list[str], arguments.servers)))
    store = _store(workdir(arguments), arguments)
    try:
        reviewed = store.review(names)
        question = f"Approve {len(names)} server(s) of {store.workdir}? They run as you, with your environment."
        if not _confirmed(arguments, reviewed, question, out):
            return _declined(out)
        recorded = store.approve(names, fingerprints=_reviewed(reviewed))
    except ConfigError as error:
        edit_failed(error)
    said = "approved " + ", ".join(f"{name!r} at {recorded.server(name).approved_fingerprint}" for name in names)
    for name in names:
        if recorded.server(name).state is ApprovalState.DISABLED:
            sys.stderr.write(
                f"{PROGRAM}: warning: {one_line(name)} stays off: {one_line(recorded.server(name).reason)}\n"
            )
    return _report("approve", recorded, arguments, out, said)


def revoke(arguments: argparse.Namespace, out: TextIO) -> int:
    """Revoke SERVER(s) of the project.

    :param arguments: the parsed command line.
    :param out: where the outcome goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: see the module's exit codes.
    """
    names = list(dict.fromkeys(cast(list[str], arguments.servers)))
    store = _store(workdir(arguments), arguments)
    try:
        recorded = store.revoke(names)
    except ConfigError as error:
        edit_failed(error)
    return _report("revoke", recorded, arguments, out, "revoked " + ", ".join(repr(name) for name in names))
