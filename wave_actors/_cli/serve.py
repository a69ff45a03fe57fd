"""``wave-actors serve``: one MCP server fronting the project's servers (R-SERVE-1, R-SERVE-2).

The command parses and checks its options here, before anything starts, and
hands the run to :mod:`wave_actors._serve`, which is imported (with ``trio``
and the MCP SDK's server) only once a run is due. Every mistake on the command
line is an exit 2 with one line that names the option.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO, cast

from wave_actors._cli.arguments import CommandParser, configured_options, home, seconds, trust, workdir
from wave_actors._console import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from wave_actors._serve.http import HttpOptions

__all__ = ["add_serve_command", "serve"]


def add_serve_command(commands: argparse._SubParsersAction[CommandParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    """Add ``serve`` to the command's subcommands.

    :param commands: the parser's subcommands.
    """
    command = commands.add_parser(
        "serve",
        parents=[configured_options()],
        help="serve the project's MCP servers to any MCP client, over stdio or streamable HTTP",
        description="Run one MCP server that fronts the project's servers. Each client connection is a session; "
        "clients of one project share one process per server; a client that goes away takes its session with it.",
    )
    transport = command.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="serve the one client on stdin and stdout (the default)"
    )
    transport.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=None,
        help="serve streamable HTTP at http://HOST:PORT/mcp (port 0: one the system picks, printed on stderr)",
    )
    command.add_argument(
        "--mode",
        choices=("working-set", "full"),
        default="working-set",
        help="what clients see: the gateway tools mcp_call and mcp_describe with the working set as the "
        "server's instructions (working-set, the library's default), or every tool by its mcp__server__tool name",
    )
    command.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="with --http: require 'Authorization: Bearer TOKEN', TOKEN being this file's content (stripped)",
    )
    command.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --http: a browser Origin to accept besides loopback ones (e.g. https://app.example); repeatable",
    )
    command.add_argument(
        "--session-idle",
        type=seconds,
        default=1800.0,
        metavar="SECONDS",
        help="with --http: end an MCP session after this long with no request (default 1800)",
    )
    command.add_argument(
        "--project-idle",
        type=seconds,
        default=300.0,
        metavar="SECONDS",
        help="keep a server no session uses this long before reclaiming it (default 300; 0 keeps it until exit)",
    )


def _http_options(arguments: argparse.Namespace) -> HttpOptions:
    from wave_actors._serve.http import HttpOptions, parse_address, read_token

    address = cast(str, arguments.http)
    try:
        host, port = parse_address(address)
    except ValueError as error:
        fail(f"--http {address}: {error}", EXIT_USAGE)
    token_file = cast(Path | None, arguments.token_file)
    token = None
    if token_file is not None:
        try:
            token = read_token(token_file)
        except (OSError, ValueError) as error:
            fail(f"--token-file {token_file}: {error}", EXIT_USAGE)
    idle = cast(float, arguments.session_idle)
    if idle <= 0:
        fail("--session-idle must be more than 0 seconds", EXIT_USAGE)
    try:
        return HttpOptions(
            host=host,
            port=port,
            token=token,
            allowed_origins=tuple(cast(list[str], arguments.allow_origin)),
            session_idle=idle,
        )
    except ValueError as error:
        fail(error, EXIT_USAGE)


def serve(arguments: argparse.Namespace, err: TextIO) -> NoReturn:
    """Run ``serve`` until the client leaves (stdio) or a signal ends it; then end the process, every process reclaimed.

    The process exits here, with :data:`~wave_actors._console.EXIT_OK` when the
    client left and 128 + N after signal N, without the interpreter's teardown
    (:func:`_leave_at_once`).

    :param arguments: the parsed command line.
    :param err: where the HTTP address is announced.
    :raises CommandFailed: a bad option (exit 2), before anything started.
    """
    directory = workdir(arguments).resolve()
    http = _http_options(arguments) if arguments.http is not None else None
    if http is None and (arguments.token_file is not None or arguments.allow_origin):
        fail("--token-file and --allow-origin go with --http", EXIT_USAGE)

    from wave_actors._console import run_unwrapped
    from wave_actors._serve.run import ServeOptions, run_serve

    options = ServeOptions(
        workdir=directory,
        home=home(arguments),
        trust=trust(arguments),
        full=cast(str, arguments.mode) == "full",
        project_idle=cast(float, arguments.project_idle),
        http=http,
    )
    try:
        run_unwrapped(run_serve, options, err)
        code: int = EXIT_OK
    except SystemExit as ended:  # a signal, once every process was reclaimed (reclaim_on_signals)
        code = ended.code if isinstance(ended.code, int) else EXIT_FAILURE
    _leave_at_once(code)


def _leave_at_once(code: int) -> NoReturn:
    """End the process now: everything it started is reclaimed, and its client is waiting for it to exit.

    The interpreter's own teardown of the MCP SDK's modules and their models
    takes a second or more of CPU, time in which a client that closed our stdin
    (the SDK's ``stdio_client`` waits 2 s) starts signalling a process that has
    nothing left to do. Only the output streams need flushing.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a client that closed its end: nothing more can reach it
    logging.shutdown()
    os._exit(code)
