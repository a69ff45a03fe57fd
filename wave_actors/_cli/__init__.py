"""The ``wave-actors`` command: look at, dial and exercise configured MCP servers (R-CLI).

Subcommands::

    wave-actors servers              the merged configuration; dials nothing
    wave-actors tools SERVER         connect one server and list its tools
    wave-actors call SERVER TOOL --args JSON
                                     connect one server and call one tool
    wave-actors watch                connect every configured server, redraw a
                                     live status table until interrupted
    wave-actors working-set          connect every enabled server, print the
                                     working-set section and what each load mode costs
    wave-actors demo                 a self-contained walkthrough on bundled servers
    wave-actors add SERVER [--scope user|project] -- COMMAND ARGS...
    wave-actors add SERVER [--scope user|project] --url URL
                                     add a server to the user or project file
    wave-actors remove SERVER [--scope user|project]
                                     remove a server from its file
    wave-actors trust [DIR]          let the folder's .wave/settings.local.json
                                     approve its servers; untrust [DIR] forgets
    wave-actors approve SERVER...    approve project servers at their fingerprint;
                                     revoke SERVER... revokes them

``wave-actors --version`` prints the installed version. Every subcommand takes ``--json``; those that read configuration take
``--workdir`` (default: the current directory), ``--home`` (default:
``~/.wave``) and ``--trust`` (default: ``all``, as the library's); ``add`` and
``remove`` take the first two and edit through
:class:`~wave_actors._config.store.ConfigStore` (R-STORE); ``trust``,
``untrust``, ``approve`` and ``revoke`` record the user's decisions in the
approvals record of ``--home`` through
:class:`~wave_actors._config.trust_store.TrustStore` (R-CFG-10). Exit codes:
:data:`~wave_actors._console.EXIT_OK`, :data:`~wave_actors._console.EXIT_FAILURE`
(a tool error, a dial or transport failure),
:data:`~wave_actors._console.EXIT_USAGE` (bad arguments, unknown or unusable
server in the configuration). Errors go to stderr as one line naming the
server, file or field; nothing a configuration file or a server says can make
the command print a traceback instead.

This module owns :func:`main` (the ``wave-actors`` entry point in
``pyproject.toml``, and ``python -m wave_actors``), the parser and the
dispatch. The parser is the standard library's :mod:`argparse`: a few
subcommands with a handful of options need no dependency, and ``--help``
comes for free. Each subcommand lives with its family:

* :mod:`~wave_actors._cli.arguments`: the shared options (``--json``,
  ``--workdir``, ``--home``, ``--trust``) and ``call``'s ``--args``;
* :mod:`~wave_actors._cli.servers`: ``servers``;
* :mod:`~wave_actors._cli.session_commands`: ``tools``, ``call``, ``watch``;
* :mod:`~wave_actors._cli.working_set`: ``working-set``;
* :mod:`~wave_actors._cli.edit`: ``add`` and ``remove``;
* :mod:`~wave_actors._cli.trust`: ``trust``, ``untrust``, ``approve`` and ``revoke``;
* :mod:`wave_actors._demo`: ``demo``; and :mod:`wave_actors._console` what they
  all print through (exit codes, one-line errors, tables, JSON).

``servers`` must start fast and dial nothing, so no module of this package
imports ``trio`` or ``mcp`` at module level; the subcommands that dial import
the runtime inside their own functions, and the MCP SDK is imported, in a
thread of its own, once their host opens. (Importing the ``wave_actors`` package itself still imports
``trio`` through its public re-exports: about 0.2 s.)
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, TextIO, cast

from wave_actors._cli.arguments import CommandParser, configured_options, output_options, seconds
from wave_actors._cli.edit import add, add_edit_commands, remove, split_command_line
from wave_actors._cli.servers import servers
from wave_actors._cli.session_commands import call, tools, watch
from wave_actors._cli.trust import add_trust_commands, approve, revoke, trust, untrust
from wave_actors._cli.working_set import working_set
from wave_actors._console import (
    EXIT_FAILURE,
    EXIT_OK,
    PROGRAM,
    CommandFailed,
    escape_unencodable,
    one_line,
    run_unwrapped,
)

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    """The command's parser: every subcommand with its options (``add`` and ``remove`` from :mod:`.edit`)."""
    output = output_options()
    configured = configured_options()
    parser = CommandParser(
        prog=PROGRAM,
        description="Supervised, leak-proof MCP server connections: inspect, dial and exercise configured servers.",
        epilog="exit codes: 0 ok, 1 tool error or server failure, 2 usage or configuration error",
    )
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    commands.add_parser(
        "servers",
        parents=[configured, output],
        help="list the merged configuration and its diagnostics; dials nothing",
        description="List the merged configuration (constructor > project > user > plugins) and the "
        "problems found loading it. Nothing is dialed.",
    )
    tools_command = commands.add_parser(
        "tools",
        parents=[configured, output],
        help="connect SERVER and list its tools",
        description="Connect SERVER and list its tools.",
    )
    tools_command.add_argument("server", metavar="SERVER")
    call_command = commands.add_parser(
        "call",
        parents=[configured, output],
        help="connect SERVER and call TOOL",
        description="Connect SERVER and call TOOL (its name on the server, or the model-visible mcp__server__tool). "
        "Exit 1 when the tool returns an error.",
    )
    call_command.add_argument("server", metavar="SERVER")
    call_command.add_argument("tool", metavar="TOOL")
    call_command.add_argument(
        "--args", dest="arguments", default="{}", metavar="JSON", help="the arguments, a JSON object"
    )
    watch_command = commands.add_parser(
        "watch",
        parents=[configured, output],
        help="connect every configured server and show a live status table",
        description="Connect every enabled server in one session and redraw a status table on every change, "
        "until interrupted (Ctrl-C reclaims every process) or --duration ends.",
    )
    watch_command.add_argument("--duration", type=seconds, default=None, metavar="SECONDS", help="stop after this long")
    commands.add_parser(
        "working-set",
        parents=[configured, output],
        help="connect every enabled server; print the working-set section and the bytes of each load mode",
        description="Connect every enabled server in one session, print the section a model is shown in "
        "working-set mode, and compare what a turn declares in each load mode (bytes). Every process is "
        "reclaimed before the command returns; servers that fail are listed as unavailable (exit 0).",
    )
    commands.add_parser(
        "demo",
        parents=[output],
        help="a self-contained walkthrough on bundled servers",
        description="Run a host with two sessions on the bundled fault server and the MCP SDK's reference "
        "server: lazy dial, calls, disconnect, crash and reconnect, destroy, and zero processes left. "
        "Reads no configuration.",
    )
    add_edit_commands(commands, output)
    add_trust_commands(commands, output)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("wave-actors")
        except PackageNotFoundError:
            installed = "(not installed: run from a source tree)"
        sys.stdout.write(f"{PROGRAM} {installed}\n")
        parser.exit(0)


def _demo(arguments: argparse.Namespace, out: TextIO) -> int:
    """``demo``, from :mod:`wave_actors._demo`: imported only when asked for, it starts the runtime."""
    from wave_actors._demo import run_demo

    return run_demo(out, as_json=cast(bool, arguments.json))


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{PROGRAM}: {record.levelname.lower()}: {one_line(record.getMessage())}"


def _configure_logging() -> None:
    """Library warnings go to stderr, one line each.

    Configuration diagnostics are not logged here: ``servers`` lists them,
    ``watch`` prints them, and ``tools`` / ``call`` name the ones about their
    server (the session would otherwise log every diagnostic of every file).
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("wave_actors._parameters").setLevel(logging.ERROR)  # where a session logs its diagnostics


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``wave-actors`` command and return its exit code.

    :param argv: the arguments after the program name (default: ``sys.argv[1:]``).
    :returns: :data:`~wave_actors._console.EXIT_OK`, :data:`~wave_actors._console.EXIT_FAILURE` or
        :data:`~wave_actors._console.EXIT_USAGE`.
    """
    escape_unencodable(sys.stdout)
    escape_unencodable(sys.stderr)
    argv, command_line = split_command_line(list(sys.argv[1:] if argv is None else argv))
    arguments = _parser().parse_args(argv)
    if command_line:
        arguments.command_line = [*arguments.command_line, *command_line]
    _configure_logging()
    out = sys.stdout
    command = cast(str, arguments.command)
    try:
        if command == "servers":
            return servers(arguments, out)
        if command == "tools":
            return cast(int, run_unwrapped(tools, arguments, out))
        if command == "call":
            return cast(int, run_unwrapped(call, arguments, out))
        if command == "watch":
            return cast(int, run_unwrapped(watch, arguments, out))
        if command == "working-set":
            return cast(int, run_unwrapped(working_set, arguments, out))
        if command == "add":
            return add(arguments, out)
        if command == "remove":
            return remove(arguments, out)
        if command == "trust":
            return trust(arguments, out)
        if command == "untrust":
            return untrust(arguments, out)
        if command == "approve":
            return approve(arguments, out)
        if command == "revoke":
            return revoke(arguments, out)
        return _demo(arguments, out)
    except CommandFailed as error:
        out.flush()
        sys.stderr.write(f"{PROGRAM}: error: {error}\n")
        return error.code
    except KeyboardInterrupt:
        out.flush()
        sys.stderr.write(f"{PROGRAM}: interrupted; every server process was reclaimed\n")
        return EXIT_OK if command == "watch" else EXIT_FAILURE
