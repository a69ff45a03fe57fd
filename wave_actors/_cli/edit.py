"""``wave-actors add`` and ``remove``: edit the user or project file, the way ``claude mcp add/remove`` does (R-STORE, R-CLI).

``add SERVER -- COMMAND ARGS...`` or ``add SERVER --url URL`` builds an entry
from its options and writes it with :meth:`ConfigStore.put
<wave_actors._config.store.ConfigStore.put>`; ``remove SERVER`` finds the
file that defines it and calls :meth:`ConfigStore.remove
<wave_actors._config.store.ConfigStore.remove>`. The store validates,
locks, keeps the file's formatting and writes atomically; this module turns
its refusals into exit codes: 1 when the file could not be written or changed
meanwhile, 2 for a request that cannot be done.

:func:`add_edit_commands` declares both subcommands on the command's parser;
:func:`split_command_line` takes the server's command line after ``--`` off
the arguments first (argparse cannot). Their caller is
:func:`wave_actors._cli.main`. No runtime is imported: editing a file dials
nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO, cast

from wave_actors._cli.arguments import CommandParser, edited_options, home, workdir
from wave_actors._config import ConfigError
from wave_actors._config.redact import literal_secrets
from wave_actors._config.store import ConfigChanged, ConfigFile, ConfigStore
from wave_actors._console import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, PROGRAM, fail, printable, write_json

__all__ = ["add", "add_edit_commands", "edit_failed", "remove", "split_command_line"]


def add_edit_commands(commands: Any, output: CommandParser) -> None:
    """Add the ``add`` and ``remove`` subcommands to ``commands``.

    :param commands: the subparsers of the ``wave-actors`` parser.
    :param output: the ``--json`` parent parser.
    """
    edited = edited_options()
    edits = "exit codes: 0 done; 1 the file could not be written or changed meanwhile; 2 bad arguments, an "
    edits += "invalid entry, an unknown or existing name, a literal secret for the project file without --force, "
    edits += "a project file that links outside the workdir, or a file that is not valid configuration JSON"
    add = commands.add_parser(
        "add",
        parents=[edited, output],
        help="add a server to the user or project file",
        description="Add SERVER to the user file (<home>/mcp.json, the default) or the project file "
        "(<workdir>/.mcp.json): a stdio server is the command after --, a remote one is --url. The entry is "
        "validated like the loader does before anything is written; values are stored as given, ${VAR} "
        "included. Running sessions see the change when they are reconfigured.",
        epilog=f"example: {PROGRAM} add files --scope project -e ROOT=/srv -- python3 -m files_server; {edits}",
    )
    add.add_argument("server", metavar="SERVER")
    add.add_argument(
        "command_line", nargs="*", metavar="COMMAND [ARGS ...]", help="the stdio server to start, after --"
    )
    add.add_argument("--scope", choices=("user", "project"), default="user", help="which file (default: user)")
    add.add_argument("--url", default=None, help="the endpoint of an http or sse server")
    add.add_argument("-t", "--transport", choices=("stdio", "http", "sse"), default=None, help="the transport type")
    add.add_argument(
        "-e", "--env", action="append", default=[], metavar="NAME=VALUE", help="a variable for a stdio server"
    )
    add.add_argument(
        "-H", "--header", action="append", default=[], metavar="NAME: VALUE", help="a header for a remote server"
    )
    add.add_argument("--cwd", default=None, help="a stdio server's working directory")
    add.add_argument("--tool-timeout-ms", type=int, default=None, metavar="MS", help="each call's deadline")
    add.add_argument("--disabled", action="store_true", help='add it with "enabled": false')
    add.add_argument("--replace", action="store_true", help="replace an entry of the same name in that file")
    add.add_argument(
        "--force",
        action="store_true",
        help="write literal env, header or URL secrets into the project file anyway (it is shared with the "
        "repository; ${VAR} placeholders keep them out of it)",
    )
    remove = commands.add_parser(
        "remove",
        parents=[edited, output],
        help="remove a server from the user or project file",
        description="Remove SERVER from the file that defines it; with --scope, from that file. Other entries, "
        "other keys and the file's formatting are kept. Running sessions see the change when they are "
        "reconfigured.",
        epilog=edits,
    )
    remove.add_argument("server", metavar="SERVER")
    remove.add_argument(
        "--scope",
        choices=("user", "project"),
        default=None,
        help="which file (default: the one that defines SERVER; if both do, say which)",
    )


def split_command_line(argv: list[str]) -> tuple[list[str], list[str]]:
    """``add``'s arguments before ``--``, and the server's command line after it.

    :param argv: the arguments after the program name.

    argparse cannot give a positional that follows options everything after
    ``--`` (the positional is matched, empty, before the options), so the
    command line is taken off first.
    """
    if argv[:1] == ["add"] and "--" in argv:
        split = argv.index("--")
        return argv[:split], argv[split + 1 :]
    return argv, []


def _store(arguments: argparse.Namespace) -> ConfigStore:
    return ConfigStore(workdir(arguments), home=home(arguments))


def edit_failed(error: ConfigError) -> NoReturn:
    """A refused edit (of a configuration file, or of the approvals record): exit 1 when the file could not be
    written or changed meanwhile, else 2.

    :param error: why it was refused.
    :raises CommandFailed: always.
    """
    failed = isinstance(error, ConfigChanged) or isinstance(error.__cause__, OSError)
    fail(error, EXIT_FAILURE if failed else EXIT_USAGE)


def _edit_document(action: str, name: str, written: ConfigFile, out: TextIO, as_json: bool) -> int:
    where = f"{written.path} ({written.scope.value} file)"
    if as_json:
        document = {
            "action": action,
            "server": name,
            "scope": written.scope.value,
            "file": str(written.path),
            "version": written.version,
        }
        write_json(document, out)
    else:
        out.write(f"{action} server {printable(repr(name))}: {printable(where)}\n")
    return EXIT_OK


def _pairs(values: Sequence[str], separator: str, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for number, value in enumerate(values, 1):
        key, found, rest = value.partition(separator)
        if not found or not key.strip():
            example = "NAME=VALUE" if separator == "=" else "'NAME: VALUE'"
            # The value is not shown: it may be a token given without its name.
            fail(f"{option} number {number}: expected {example}", EXIT_USAGE)
        pairs[key.strip()] = rest if separator == "=" else rest.strip()
    return pairs


def _refuse_literal_secrets(entry: dict[str, object]) -> None:
    """Exit 2 when ``entry`` would put a secret, as written, into the project file (R-STORE-6, R-CFG-12)."""
    found = literal_secrets(entry)
    if found:
        fail(
            f"refusing to write literal values ({', '.join(found)}) into the project file: it is shared with "
            "everyone who has the repository. Give them as ${VAR} placeholders (-e NAME='${NAME}', "
            "-H 'Authorization: Bearer ${TOKEN}'), set in the environment of whoever runs the server, "
            "or add --force",
            EXIT_USAGE,
        )


def add(arguments: argparse.Namespace, out: TextIO) -> int:
    """Add SERVER to the user or project file, or with ``--replace`` replace its entry there.

    :param arguments: the parsed command line.
    :param out: where what was done is said.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: the file could not be written or changed meanwhile
        (exit 1); bad arguments, an invalid entry, an existing name, a file
        that is not valid configuration JSON, or a literal secret for the
        project file without ``--force`` (exit 2).
    """
    name = cast(str, arguments.server)
    command_line = cast(list[str], arguments.command_line)
    url = cast(str | None, arguments.url)
    if bool(command_line) == (url is not None):
        fail("give either the command of a stdio server after -- or --url for a remote one", EXIT_USAGE)
    entry: dict[str, object] = {}
    if arguments.transport is not None:
        entry["type"] = arguments.transport
    if command_line:
        entry["command"] = command_line[0]
        if command_line[1:]:
            entry["args"] = command_line[1:]
    else:
        entry["url"] = url
    if arguments.env:
        entry["env"] = _pairs(cast(list[str], arguments.env), "=", "--env")
    if arguments.header:
        entry["headers"] = _pairs(cast(list[str], arguments.header), ":", "--header")
    if arguments.cwd is not None:
        entry["cwd"] = arguments.cwd
    if arguments.tool_timeout_ms is not None:
        entry["tool_timeout_ms"] = arguments.tool_timeout_ms
    if arguments.disabled:
        entry["enabled"] = False
    if arguments.scope == "project" and not arguments.force:
        _refuse_literal_secrets(entry)
    store = _store(arguments)
    try:
        current = store.read(arguments.scope)
        if name in current.servers and not arguments.replace:
            fail(
                f"server {name!r} exists already in {current.path}; add --replace to replace it, "
                f"or remove it first ({PROGRAM} remove {name} --scope {arguments.scope})",
                EXIT_USAGE,
            )
        written = store.put(name, entry, arguments.scope, current.version)
    except ConfigError as error:
        edit_failed(error)
    action = "replaced" if name in current.servers else "added"
    return _edit_document(action, name, written, out, cast(bool, arguments.json))


def remove(arguments: argparse.Namespace, out: TextIO) -> int:
    """Remove SERVER from the file that defines it (or the one ``--scope`` names).

    :param arguments: the parsed command line.
    :param out: where what was done is said.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: the file could not be written or changed meanwhile
        (exit 1); an unknown name, a name in both files without ``--scope``,
        or a file that is not valid configuration JSON (exit 2).
    """
    name = cast(str, arguments.server)
    store = _store(arguments)
    try:
        scopes = [cast(str, arguments.scope)] if arguments.scope is not None else ["project", "user"]
        defining = [read for read in (store.read(scope) for scope in scopes) if name in read.servers]
        if not defining:
            files = " or ".join(str(store.path(scope)) for scope in scopes)
            fail(f"no server {name!r} in {files}", EXIT_USAGE)
        if len(defining) > 1:
            fail(
                f"server {name!r} is in both {defining[0].path} and {defining[1].path}; say which with "
                "--scope project or --scope user",
                EXIT_USAGE,
            )
        [read] = defining
        written = store.remove(name, read.scope, read.version)
    except ConfigError as error:
        edit_failed(error)
    return _edit_document("removed", name, written, out, cast(bool, arguments.json))
