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

Every subcommand takes ``--json``; those that read configuration take
``--workdir`` (default: the current directory), ``--home`` (default:
``~/.wave``) and ``--trust`` (default: ``all``, as the library's); ``add`` and
``remove`` take the first two and edit through
:class:`~wave_actors._config.store.ConfigStore` (R-STORE). Exit codes:
:data:`~wave_actors._console.EXIT_OK`, :data:`~wave_actors._console.EXIT_FAILURE`
(a tool error, a dial or transport failure),
:data:`~wave_actors._console.EXIT_USAGE` (bad arguments, unknown or unusable
server in the configuration). Errors go to stderr as one line naming the
server, file or field; nothing a configuration file or a server says can make
the command print a traceback instead.

The parser is the standard library's :mod:`argparse`: five subcommands with a
handful of options need no dependency, and ``--help`` comes for free.

``servers`` must start fast and dial nothing, so this module imports only
:mod:`wave_actors._config` (neither ``trio`` nor ``mcp``) at module level; the
subcommands that dial import the runtime inside their own functions, and the
MCP SDK is imported by the first dial. (Importing the ``wave_actors`` package
itself still imports ``trio`` through its public re-exports: about 0.2 s.)

``demo`` lives in :mod:`wave_actors._demo`; what both print through (exit
codes, one-line errors, tables, JSON) in :mod:`wave_actors._console`.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn, TextIO, cast, get_args

import attrs

from wave_actors._config import (
    ConfigError,
    Diagnostic,
    LoadedConfig,
    ServerConfig,
    TransportType,
    TrustMode,
    load_config,
)
from wave_actors._config.store import ConfigChanged, ConfigFile, ConfigStore
from wave_actors._console import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    escape_unencodable,
    fail,
    json_text,
    one_line,
    printable,
    run_unwrapped,
    status_table,
    table,
)

if TYPE_CHECKING:
    import mcp_types

    from wave_actors._session import Session
    from wave_actors._status import ServerStatus, SessionSnapshot

__all__ = ["main"]

_PROGRAM: Final = "wave-actors"

# JSON nests without limit, the MCP SDK's serializer does not: it gives up near 255 levels, and then
# only after the server was dialed, with an error that blames the answer. Tool arguments are shallow.
_MAX_ARGUMENT_DEPTH: Final = 200


def _write_json(document: object, out: TextIO) -> None:
    out.write(json_text(document, out) + "\n")


def _diagnostic_document(diagnostic: Diagnostic) -> dict[str, object]:
    return {
        "severity": diagnostic.severity.value,
        "source": diagnostic.source.value,
        "origin": diagnostic.origin,
        "server": diagnostic.server,
        "field": diagnostic.field,
        "message": diagnostic.message,
    }


def status_document(status: ServerStatus) -> dict[str, object]:
    """A JSON-ready view of one server's status (tools by name; no schemas)."""
    return {
        "name": status.name,
        "source": status.source.value,
        "origin": status.origin,
        "type": status.type,
        "enabled": status.enabled,
        "state": status.state.value,
        "error": status.error,
        "generation": status.generation,
        "tools": [tool.name for tool in status.tools],
        "last_connected": status.last_connected,
        "manually_disconnected": status.manually_disconnected,
    }


# Arguments.


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be zero or more")
    return value


def _parser() -> argparse.ArgumentParser:
    output = _Parser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of text")
    configured = _Parser(add_help=False)
    configured.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="project directory whose .mcp.json is read (default: current directory)",
    )
    configured.add_argument(
        "--home", type=Path, default=None, help="directory of the user file mcp.json (default: ~/.wave)"
    )
    configured.add_argument(
        "--trust",
        choices=get_args(TrustMode),
        default="all",
        help="which project (.mcp.json) entries load: 'approved' loads only those approved in "
        "<workdir>/.wave/settings.local.json; 'all' (the default, as in the library) loads every one, so the "
        "command sees what a host with default settings sees. tools, call and watch start the commands they "
        "load: use 'approved' in a repository you do not trust",
    )
    parser = _Parser(
        prog=_PROGRAM,
        description="Supervised, leak-proof MCP server connections: inspect, dial and exercise configured servers.",
        epilog="exit codes: 0 ok, 1 tool error or server failure, 2 usage or configuration error",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    commands.add_parser(
        "servers",
        parents=[configured, output],
        help="list the merged configuration and its diagnostics; dials nothing",
        description="List the merged configuration (constructor > project > user > plugins) and the "
        "problems found loading it. Nothing is dialed.",
    )
    tools = commands.add_parser(
        "tools",
        parents=[configured, output],
        help="connect SERVER and list its tools",
        description="Connect SERVER and list its tools.",
    )
    tools.add_argument("server", metavar="SERVER")
    call = commands.add_parser(
        "call",
        parents=[configured, output],
        help="connect SERVER and call TOOL",
        description="Connect SERVER and call TOOL (its name on the server, or the model-visible mcp__server__tool). "
        "Exit 1 when the tool returns an error.",
    )
    call.add_argument("server", metavar="SERVER")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("--args", dest="arguments", default="{}", metavar="JSON", help="the arguments, a JSON object")
    watch = commands.add_parser(
        "watch",
        parents=[configured, output],
        help="connect every configured server and show a live status table",
        description="Connect every enabled server in one session and redraw a status table on every change, "
        "until interrupted (Ctrl-C reclaims every process) or --duration ends.",
    )
    watch.add_argument("--duration", type=_seconds, default=None, metavar="SECONDS", help="stop after this long")
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
    _add_edit_commands(commands, output)
    return parser


def _add_edit_commands(commands: Any, output: argparse.ArgumentParser) -> None:
    """``add`` and ``remove``: edit the user or project file, the way ``claude mcp add/remove`` does (R-STORE)."""
    edited = _Parser(add_help=False)
    edited.add_argument(
        "--workdir", type=Path, default=None, help="project directory holding .mcp.json (default: current directory)"
    )
    edited.add_argument(
        "--home", type=Path, default=None, help="directory of the user file mcp.json (default: ~/.wave)"
    )
    edits = "exit codes: 0 done; 1 the file could not be written or changed meanwhile; 2 bad arguments, an "
    edits += "invalid entry, an unknown or existing name, or a file that is not valid configuration JSON"
    add = commands.add_parser(
        "add",
        parents=[edited, output],
        help="add a server to the user or project file",
        description="Add SERVER to the user file (<home>/mcp.json, the default) or the project file "
        "(<workdir>/.mcp.json): a stdio server is the command after --, a remote one is --url. The entry is "
        "validated like the loader does before anything is written; values are stored as given, ${VAR} "
        "included. Running sessions see the change when they are reconfigured.",
        epilog=f"example: {_PROGRAM} add files --scope project -e ROOT=/srv -- python3 -m files_server; {edits}",
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


def _workdir(arguments: argparse.Namespace) -> Path:
    workdir = cast(Path | None, arguments.workdir) or Path.cwd()
    if not workdir.is_dir():
        fail(f"--workdir {workdir}: not a directory", EXIT_USAGE)
    return workdir


def _home(arguments: argparse.Namespace) -> Path | None:
    home = cast(Path | None, arguments.home)
    return home.expanduser() if home is not None else None


def _trust(arguments: argparse.Namespace) -> TrustMode:
    return cast(TrustMode, arguments.trust)


# servers


def _configured_state(config: ServerConfig) -> str:
    return "disconnected" if config.enabled else "disabled"


def _statuses_before_dialing(loaded: LoadedConfig, home: Path | None) -> dict[str, ServerStatus]:
    """Every server as a new session shows it: disconnected, with the tools of the snapshot cache (R-CACHE-2)."""
    from wave_actors._actor.machine import initial_state
    from wave_actors._cache import cache_file, read_cache
    from wave_actors._catalog import build_snapshot

    cache = read_cache(cache_file(home), workdir=loaded.workdir)
    servers = [(config, initial_state(enabled=config.enabled)) for config in loaded.servers.values()]
    return {status.name: status for status in build_snapshot(0, servers, cache=cache).servers}


def _cached_document(status: ServerStatus) -> dict[str, object]:
    connection = status.connection
    return {
        "tools": [tool.name for tool in status.tools],
        "tools_cached": status.tools_cached,
        "last_connected": status.last_connected,
        "connection": None if connection is None else {**attrs.asdict(connection), "display": connection.display},
    }


def _cached_tools_block(statuses: Sequence[ServerStatus]) -> str:
    lines = ["cached tools (listed at the server's last connect; not connected now):"]
    for status in statuses:
        if status.tools_cached:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.last_connected or 0))
            names = ", ".join(tool.tool for tool in status.tools) or "no tools"
            lines.append(f"  {status.name} ({len(status.tools)} at {when}): {names}")
    return "\n".join(lines) if len(lines) > 1 else ""


def _servers(arguments: argparse.Namespace, out: TextIO) -> int:
    workdir = _workdir(arguments)
    loaded: LoadedConfig = load_config(workdir, home=_home(arguments), trust=_trust(arguments))
    configs = [loaded.servers[name] for name in sorted(loaded.servers)]
    statuses = _statuses_before_dialing(loaded, _home(arguments))
    if arguments.json:
        _write_json(
            {
                "workdir": loaded.workdir,
                "servers": [
                    {
                        "name": config.name,
                        "source": config.source.value,
                        "origin": config.origin,
                        "type": config.type,
                        "enabled": config.enabled,
                        "state": _configured_state(config),
                        "tool_timeout_ms": config.tool_timeout_ms,
                        "fingerprint": config.fingerprint,
                        **_cached_document(statuses[config.name]),
                    }
                    for config in configs
                ],
                "diagnostics": [_diagnostic_document(diagnostic) for diagnostic in loaded.diagnostics],
            },
            out,
        )
        return EXIT_OK
    if configs:
        rows = [
            [
                config.name,
                config.source.value,
                config.type,
                "yes" if config.enabled else "no",
                _configured_state(config),
                config.origin,
            ]
            for config in configs
        ]
        out.write(table(["NAME", "SOURCE", "TYPE", "ENABLED", "STATE", "ORIGIN"], rows) + "\n")
        cached = _cached_tools_block([statuses[config.name] for config in configs])
        if cached:
            out.write(f"\n{printable(cached)}\n")
    else:
        out.write(f"no MCP servers configured for {printable(loaded.workdir)}\n")
    if loaded.diagnostics:
        out.write("\ndiagnostics:\n")
        for diagnostic in loaded.diagnostics:
            out.write(f"  {printable(str(diagnostic))}\n")
    return EXIT_OK


# Sessions for tools, call and watch.


@asynccontextmanager
async def _session(arguments: argparse.Namespace) -> AsyncGenerator[Session, None]:
    from wave_actors._session import open_session

    async with open_session(workdir=_workdir(arguments), home=_home(arguments), trust=_trust(arguments)) as session:
        yield session


def _check_usable(session: Session, name: str) -> None:
    """Refuse, with exit 2, a server the configuration cannot dial."""
    names = [status.name for status in session.servers()]
    if name not in names:
        reasons = [str(diagnostic) for diagnostic in session.diagnostics if diagnostic.server == name]
        if reasons:
            fail(f"server {name!r} was not loaded: {reasons[0]}", EXIT_USAGE)
        known = ", ".join(names) or "none"
        fail(f"no server {name!r} configured for {session.workdir}; configured: {known}", EXIT_USAGE)
    status = session.server(name)
    if not status.enabled:
        fail(f"server {name!r} is disabled (enabled: false) in {status.origin}", EXIT_USAGE)
    if status.type not in {transport.value for transport in TransportType}:
        fail(
            f"server {name!r} in {status.origin}: unknown type {status.type!r}; expected stdio, http, "
            "streamable-http or sse",
            EXIT_USAGE,
        )


async def _connect(session: Session, name: str) -> ServerStatus:
    from wave_actors._errors import WaveActorsError

    _check_usable(session, name)
    for diagnostic in session.diagnostics:
        if diagnostic.server == name:
            sys.stderr.write(f"{_PROGRAM}: config {one_line(diagnostic)}\n")
    try:
        return await session.connect(name)
    except WaveActorsError as error:
        fail(error)


# tools


async def _tools(arguments: argparse.Namespace, out: TextIO) -> int:
    name = cast(str, arguments.server)
    async with _session(arguments) as session:
        status = await _connect(session, name)
    if arguments.json:
        _write_json(
            {
                "server": status.name,
                "state": status.state.value,
                "tools": [
                    {
                        "name": tool.name,
                        "tool": tool.tool,
                        "read_only": tool.read_only,
                        "description": tool.description,
                        "input_schema": dict(tool.input_schema),
                    }
                    for tool in status.tools
                ],
            },
            out,
        )
        return EXIT_OK
    if not status.tools:
        out.write(f"server {name!r} lists no tools\n")
        return EXIT_OK
    rows = [[tool.tool, tool.name, "yes" if tool.read_only else "no", tool.description] for tool in status.tools]
    out.write(table(["TOOL", "MODEL-VISIBLE NAME", "READ-ONLY", "DESCRIPTION"], rows) + "\n")
    return EXIT_OK


# call


class _Unsendable(ValueError):
    """A value of ``--args`` that parses but has no faithful JSON form to send."""


def _reject_constant(name: str) -> NoReturn:
    # json.loads accepts NaN and Infinity, which are not JSON: the SDK would send them as null.
    raise _Unsendable(f"{name} is not a JSON number (JSON has no NaN or Infinity); use null or a string")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unsendable(f"the number {text[:40]} is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if limit and digits > limit:
        raise _Unsendable(f"an integer of {digits} digits is longer than the {limit} digits allowed")
    return int(text)


def _depth(value: object) -> int:
    """How deeply ``value`` nests (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(cast(dict[str, object], item).values())
        elif isinstance(item, list):
            children = list(cast(list[object], item))
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _parse_arguments_json(text: str) -> dict[str, object]:
    too_deep = f"--args nests deeper than the {_MAX_ARGUMENT_DEPTH} levels a tool call can carry"
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except json.JSONDecodeError as error:
        fail(f"--args is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}", EXIT_USAGE)
    except _Unsendable as error:
        fail(f"--args: {error}", EXIT_USAGE)
    except RecursionError:
        fail(too_deep, EXIT_USAGE)
    if not isinstance(value, dict):
        fail(f'--args must be a JSON object like \'{{"text": "hi"}}\', got {type(value).__name__}', EXIT_USAGE)
    arguments = cast(dict[str, object], value)
    if _depth(arguments) > _MAX_ARGUMENT_DEPTH:
        fail(too_deep, EXIT_USAGE)
    return arguments


def _content_text(result: mcp_types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[{block.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


async def _call(arguments: argparse.Namespace, out: TextIO) -> int:
    from wave_actors._errors import WaveActorsError

    server = cast(str, arguments.server)
    tool = cast(str, arguments.tool)
    tool_arguments = _parse_arguments_json(cast(str, arguments.arguments))
    async with _session(arguments) as session:
        status = await _connect(session, server)
        matches = [info.name for info in status.tools if tool in (info.tool, info.name)]
        if not matches:
            listed = ", ".join(info.tool for info in status.tools) or "none"
            fail(f"server {server!r} has no tool {tool!r}; its tools: {listed}", EXIT_USAGE)
        try:
            result = await session.call_tool(matches[0], tool_arguments)
        except WaveActorsError as error:
            fail(error)
    if arguments.json:
        _write_json(result.model_dump(mode="json", by_alias=True, exclude_none=True), out)
    text = _content_text(result)
    if result.is_error:
        fail(f"server {server!r}, tool {tool!r} returned an error: {text or '(no message)'}")
    if not arguments.json:
        out.write(text + ("\n" if text and not text.endswith("\n") else ""))
    return EXIT_OK


# watch


def _snapshot_document(session: Session, snapshot: SessionSnapshot) -> dict[str, object]:
    return {
        "session": session.id,
        "version": snapshot.version,
        "servers": [status_document(status) for status in snapshot.servers],
    }


def _render_snapshot(session: Session, snapshot: SessionSnapshot, out: TextIO) -> None:
    clock = time.strftime("%H:%M:%S")
    workdir = printable(str(session.workdir))
    header = f"{_PROGRAM} watch: {workdir}, version {snapshot.version}, {clock} (Ctrl-C to stop)"
    body = status_table(snapshot.servers) if snapshot.servers else "no MCP servers configured"
    if out.isatty():
        out.write("\x1b[H\x1b[J")  # home, clear: redraw in place
    out.write(f"{header}\n{body}\n\n")


async def _stop_on_signal(cancel_scope: Any) -> None:
    """Cancel ``cancel_scope`` on SIGINT, SIGTERM or SIGHUP: leaving the session reclaims everything.

    Handling SIGINT here rather than as ``KeyboardInterrupt`` also stops a
    watch started in the background of a non-interactive shell, where SIGINT
    is ignored by default.
    """
    import signal

    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for number in signals:
            sys.stderr.write(f"{_PROGRAM}: {signal.Signals(number).name}: closing every server\n")
            cancel_scope.cancel()
            return


async def _watch(arguments: argparse.Namespace, out: TextIO) -> int:
    import trio

    duration = cast(float | None, arguments.duration)
    async with _session(arguments) as session:
        for diagnostic in session.diagnostics:
            sys.stderr.write(f"{_PROGRAM}: config {one_line(diagnostic)}\n")
        with trio.move_on_after(duration if duration is not None else math.inf):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_on_signal, nursery.cancel_scope)
                nursery.start_soon(session.prepare_turn)
                async for snapshot in session.watch():
                    if arguments.json:
                        out.write(json_text(_snapshot_document(session, snapshot), out, indent=None) + "\n")
                    else:
                        _render_snapshot(session, snapshot, out)
                    out.flush()
    return EXIT_OK


# working-set


async def _working_set(arguments: argparse.Namespace, out: TextIO) -> int:
    from wave_actors._tools import LoadMode, WorkingSetServer, prompt_bytes

    async with _session(arguments) as session:
        for diagnostic in session.diagnostics:
            sys.stderr.write(f"{_PROGRAM}: config {one_line(diagnostic)}\n")
        await session.prepare_turn()
        working_set = session.working_set()
        full = session.tool_declarations(LoadMode.FULL)
        gateway = session.tool_declarations(LoadMode.WORKING_SET)
    section = working_set.render()
    sizes = {
        "full": prompt_bytes(full),
        "working_set": prompt_bytes(gateway, section),
        "section": len(section.encode("utf-8")),
        "gateway": prompt_bytes(gateway),
    }
    if arguments.json:

        def server_document(server: WorkingSetServer) -> dict[str, object]:
            return {
                "name": server.name,
                "purpose": server.purpose,
                "unavailable": server.unavailable,
                "read_only_tools": server.read_only_tools,
                "writable_tools": server.writable_tools,
                "tools": [{"name": t.name, "read_only": t.read_only, "guidance": t.guidance} for t in server.tools],
            }

        document = {
            "workdir": str(session.workdir),
            "section": section,
            "servers": [server_document(server) for server in working_set.servers],
            "declarations": {"full": len(full), "working_set": len(gateway)},
            "bytes": sizes,
        }
        _write_json(document, out)
        return EXIT_OK
    if working_set.empty:
        out.write(f"no enabled MCP servers for {printable(str(session.workdir))}: no section, no gateway tools\n")
        return EXIT_OK
    share = f"{100 * sizes['working_set'] / sizes['full']:.1f} % of full" if sizes["full"] else "full declares nothing"
    out.write(printable(section) + "\n")
    out.write(
        f"bytes per turn: full {sizes['full']:,} ({len(full)} declarations); working set {sizes['working_set']:,} "
        f"(section {sizes['section']:,} + {len(gateway)} gateway declarations {sizes['gateway']:,}): {share}\n"
    )
    return EXIT_OK


# add and remove


def _split_command_line(argv: list[str]) -> tuple[list[str], list[str]]:
    """``add``'s arguments before ``--``, and the server's command line after it.

    argparse cannot give a positional that follows options everything after
    ``--`` (the positional is matched, empty, before the options), so the
    command line is taken off first.
    """
    if argv[:1] == ["add"] and "--" in argv:
        split = argv.index("--")
        return argv[:split], argv[split + 1 :]
    return argv, []


def _store(arguments: argparse.Namespace) -> ConfigStore:
    return ConfigStore(_workdir(arguments), home=_home(arguments))


def _edit_failed(error: ConfigError) -> NoReturn:
    """A refused edit: exit 1 when the file could not be written or changed meanwhile, else 2."""
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
        _write_json(document, out)
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


def _add(arguments: argparse.Namespace, out: TextIO) -> int:
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
    store = _store(arguments)
    try:
        current = store.read(arguments.scope)
        if name in current.servers and not arguments.replace:
            fail(
                f"server {name!r} exists already in {current.path}; add --replace to replace it, "
                f"or remove it first ({_PROGRAM} remove {name} --scope {arguments.scope})",
                EXIT_USAGE,
            )
        written = store.put(name, entry, arguments.scope, current.version)
    except ConfigError as error:
        _edit_failed(error)
    action = "replaced" if name in current.servers else "added"
    return _edit_document(action, name, written, out, cast(bool, arguments.json))


def _remove(arguments: argparse.Namespace, out: TextIO) -> int:
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
        _edit_failed(error)
    return _edit_document("removed", name, written, out, cast(bool, arguments.json))


# demo


def _demo(arguments: argparse.Namespace, out: TextIO) -> int:
    from wave_actors._demo import run_demo

    return run_demo(out, as_json=cast(bool, arguments.json))


# Entry point.


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{_PROGRAM}: {record.levelname.lower()}: {one_line(record.getMessage())}"


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
    logging.getLogger("wave_actors._session").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``wave-actors`` command and return its exit code.

    :param argv: the arguments after the program name (default: ``sys.argv[1:]``).
    :returns: :data:`EXIT_OK`, :data:`EXIT_FAILURE` or :data:`EXIT_USAGE`.
    """
    escape_unencodable(sys.stdout)
    escape_unencodable(sys.stderr)
    argv, command_line = _split_command_line(list(sys.argv[1:] if argv is None else argv))
    arguments = _parser().parse_args(argv)
    if command_line:
        arguments.command_line = [*arguments.command_line, *command_line]
    _configure_logging()
    out = sys.stdout
    command = cast(str, arguments.command)
    try:
        if command == "servers":
            return _servers(arguments, out)
        if command == "tools":
            return cast(int, run_unwrapped(_tools, arguments, out))
        if command == "call":
            return cast(int, run_unwrapped(_call, arguments, out))
        if command == "watch":
            return cast(int, run_unwrapped(_watch, arguments, out))
        if command == "working-set":
            return cast(int, run_unwrapped(_working_set, arguments, out))
        if command == "add":
            return _add(arguments, out)
        if command == "remove":
            return _remove(arguments, out)
        return _demo(arguments, out)
    except CommandFailed as error:
        out.flush()
        sys.stderr.write(f"{_PROGRAM}: error: {error}\n")
        return error.code
    except KeyboardInterrupt:
        out.flush()
        sys.stderr.write(f"{_PROGRAM}: interrupted; every server process was reclaimed\n")
        return EXIT_OK if command == "watch" else EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
