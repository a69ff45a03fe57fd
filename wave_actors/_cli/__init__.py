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
    wave-actors serve [--stdio | --http HOST:PORT]
                                     one MCP server fronting the project's servers,
                                     for MCP clients in any language
    wave-actors add SERVER [--scope user|project] -- COMMAND ARGS...
    wave-actors add SERVER [--scope user|project] --url URL
                                     add a server to the user or project file
    wave-actors remove SERVER [--scope user|project]
                                     remove a server from its file
    wave-actors trust [DIR]          let the folder's .wave/settings.local.json
                                     approve its servers; untrust [DIR] forgets
    wave-actors approve SERVER...    approve project servers at their fingerprint;
                                     revoke SERVER... revokes them
    wave-actors login SERVER [--manual]
                                     log in to a remote server that requires OAuth
    wave-actors logout SERVER        remove its login, in every process of the machine

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
server in the configuration), and 128 + N when signal N stopped it (130 for
Ctrl-C, 143 for SIGTERM: :data:`~wave_actors._console.EXIT_SIGNAL_BASE`), for
every subcommand. Errors go to stderr as one line naming the server, file or
field, and with ``--json`` also to stdout as one JSON object
(:func:`~wave_actors._console.report_failure`); nothing a configuration file
or a server says can make the command print a traceback instead.

The subcommands that dial (``tools``, ``call``, ``watch``, ``working-set``,
``demo``) run under :func:`~wave_actors.reclaim_on_signals`
(:func:`~wave_actors._console.run_until_signal`): a signal cancels them and
they exit once every process they started is reclaimed. The others have
nothing to reclaim: SIGTERM and SIGHUP are made to interrupt them as Ctrl-C
does (:func:`_signals_interrupt`), so that ``finally`` blocks run and the
exit code is the same.

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
* :mod:`~wave_actors._cli.serve`: ``serve`` (its run is :mod:`wave_actors._serve`'s);
* :mod:`~wave_actors._cli.login`: ``login`` and ``logout`` (R-AUTH);
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
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any, TextIO, cast

from wave_actors._cli.arguments import CommandParser, call_seconds, configured_options, output_options, seconds
from wave_actors._cli.edit import add, add_edit_commands, remove, split_command_line
from wave_actors._cli.login import add_login_commands, login, logout
from wave_actors._cli.serve import add_serve_command, serve
from wave_actors._cli.servers import servers
from wave_actors._cli.session_commands import call, tools, watch
from wave_actors._cli.trust import add_trust_commands, approve, revoke, trust, untrust
from wave_actors._cli.working_set import working_set
from wave_actors._console import (
    PROGRAM,
    CommandFailed,
    Interrupted,
    escape_unencodable,
    one_line,
    report_failure,
    run_until_signal,
)

__all__ = ["main"]


def _parser() -> CommandParser:
    """The command's parser: every subcommand with its options (``add`` and ``remove`` from :mod:`.edit`)."""
    output = output_options()
    configured = configured_options()
    parser = CommandParser(
        prog=PROGRAM,
        description="Supervised, leak-proof MCP server connections: inspect, dial and exercise configured servers.",
        epilog="exit codes: 0 ok, 1 tool error or server failure, 2 usage or configuration error, "
        "128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM); with --json, an error is also a JSON object on stdout",
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
        "Exit 1 when the tool returns an error. On a terminal, the server's progress notifications show on "
        "one line of stderr while the call runs.",
        epilog=f'example: {PROGRAM} call time get_current_time --args \'{{"timezone": "UTC"}}\' --timeout 10',
    )
    call_command.add_argument("server", metavar="SERVER")
    call_command.add_argument("tool", metavar="TOOL")
    call_command.add_argument(
        "--args",
        dest="arguments",
        default=None,
        metavar="JSON",
        help="the tool's arguments, a JSON object (default: {}); see the tool's schema with: "
        f"{PROGRAM} tools SERVER --json",
    )
    call_command.add_argument(
        "--timeout",
        type=call_seconds,
        default=None,
        metavar="SECONDS",
        help="the call's deadline, instead of the entry's tool_timeout_ms (default 30 s); the call is cancelled "
        "on the server when it passes",
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
    add_serve_command(commands)
    add_login_commands(commands, output)
    parser.subcommands = dict(commands.choices)
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


def _hint(command: str, leftovers: list[str]) -> str:
    """What a left-over argument was probably meant as: ``call``'s JSON without ``--args``."""
    if command == "call" and any(word.lstrip().startswith(("{", "[")) for word in leftovers):
        return "; a tool's arguments go after --args, as one JSON object"
    return ""


def _demo(arguments: argparse.Namespace, out: TextIO) -> int:
    """``demo``, from :mod:`wave_actors._demo`: imported only when asked for, it starts the runtime."""
    from wave_actors._demo import run_demo

    return run_demo(out, as_json=cast(bool, arguments.json))


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        return f"{PROGRAM}: {level}{one_line(record.getMessage())}"


def _configure_logging() -> None:
    """Library warnings go to stderr, one line each; so does the signal helper's note that a signal arrived.

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
    # "SIGINT: reclaiming every server family": said at once, so that a slow reclamation is not silence.
    logging.getLogger("wave_actors._watchdog.signals").setLevel(logging.INFO)


_Command = Callable[[argparse.Namespace, TextIO], int]

# The subcommands that start servers: run by trio, stopped by a signal only once everything is reclaimed.
_DIALING: dict[str, Any] = {
    "tools": tools,
    "call": call,
    "watch": watch,
    "working-set": working_set,
    "login": login,
    "logout": logout,
}

# The others: they read and write files, and start nothing.
_LOCAL: dict[str, _Command] = {
    "servers": servers,
    "add": add,
    "remove": remove,
    "trust": trust,
    "untrust": untrust,
    "approve": approve,
    "revoke": revoke,
}


@contextlib.contextmanager
def _signals_interrupt(received: list[int]) -> Generator[None]:
    """SIGTERM and SIGHUP interrupt the block as Ctrl-C does (:class:`KeyboardInterrupt`); ``received`` says which.

    By default they end Python on the spot, with no ``finally`` run (an edit's
    temporary file left behind) and no exit code of ours. Only the main thread
    can set handlers; elsewhere (``main`` called from a thread) the defaults stay.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number: int, frame: object) -> None:
        received.append(number)
        raise KeyboardInterrupt

    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {number: signal.signal(number, interrupt) for number in wanted}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _run(arguments: argparse.Namespace, out: TextIO, received: list[int]) -> int:
    command = cast(str, arguments.command)
    if command in _DIALING:
        return cast(int, run_until_signal(_DIALING[command], arguments, out))
    if command == "demo":
        return _demo(arguments, out)  # under reclaim_on_signals too, inside run_demo
    if command == "serve":
        return serve(arguments, sys.stderr)  # its own signal handling: stdout is the protocol's
    with _signals_interrupt(received):
        return _LOCAL[command](arguments, out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``wave-actors`` command and return its exit code.

    :param argv: the arguments after the program name (default: ``sys.argv[1:]``).
    :returns: :data:`~wave_actors._console.EXIT_OK`, :data:`~wave_actors._console.EXIT_FAILURE`,
        :data:`~wave_actors._console.EXIT_USAGE`, or 128 + N when signal N stopped the command.
    """
    escape_unencodable(sys.stdout)
    escape_unencodable(sys.stderr)
    argv, command_line = split_command_line(list(sys.argv[1:] if argv is None else argv))
    as_json = "--json" in argv
    out = sys.stdout
    received: list[int] = []
    try:
        arguments = _parser().parse_command_line(argv, _hint)
        if command_line:
            arguments.command_line = [*arguments.command_line, *command_line]
        _configure_logging()
        return _run(arguments, out, received)
    except CommandFailed as error:
        return report_failure(error, out, as_json=as_json)
    except KeyboardInterrupt:
        # Ctrl-C, or SIGTERM or SIGHUP made one (_signals_interrupt), outside reclaim_on_signals's block.
        stopped = Interrupted(received[0] if received else signal.SIGINT)
        return report_failure(stopped, out, as_json=as_json)
