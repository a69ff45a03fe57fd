"""``wave-actors tools``, ``call`` and ``watch``: the subcommands that open a session and dial (R-CLI).

Each opens one session on the configuration of ``--workdir`` / ``--home`` /
``--trust`` (:func:`command_session`), and leaving it reclaims every process
it started, on an error, Ctrl-C or a signal too. ``tools`` and ``call``
connect one server (:func:`connect`, which refuses with exit 2 a server the
configuration cannot dial, before dialing, with the diagnostics that say why
it is missing: a file that is not valid JSON, an entry skipped for a typo);
``watch`` connects every enabled server and prints a snapshot per change.
``working-set`` (:mod:`wave_actors._cli.working_set`) opens its session
through :func:`command_session` too.

``call --timeout`` is the call's deadline in place of the entry's
``tool_timeout_ms``: a constructor entry holding only ``tool_timeout_ms``,
which the library lays over the configured entry (R-CFG-1), so the deadline,
its cancellation on the server and its error are the library's (R-TOOL-4).
On a terminal, the server's progress notifications for the call
(R-TOOL-10) redraw one line of stderr (:class:`_ProgressLine`); a file, a
pipe or ``--json`` gets none, and then no progress is asked for.

The runtime (``trio``, the session, and, once the host opens, the MCP SDK)
is imported inside the functions that use it, so that importing the command
stays as cheap as ``servers`` needs. Their caller is
:func:`wave_actors._cli.main`, through
:func:`~wave_actors._console.run_unwrapped`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, TextIO, cast

from wave_actors._cli.arguments import credentials, home, tool_arguments, trust, workdir
from wave_actors._config import Diagnostic, Severity, Source, TransportType
from wave_actors._console import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    PROGRAM,
    fail,
    json_text,
    one_line,
    printable,
    say_error,
    status_table,
    table,
    terminal_width,
    write_json,
)

if TYPE_CHECKING:
    import mcp_types

    from wave_actors._session import Session
    from wave_actors._status import ServerStatus, SessionSnapshot, ToolInfo

__all__ = ["call", "check_usable", "command_session", "connect", "missing_server", "status_document", "tools", "watch"]


@asynccontextmanager
async def command_session(
    arguments: argparse.Namespace, overlays: Mapping[str, Mapping[str, object]] | None = None
) -> AsyncGenerator[Session, None]:
    """A session on the configuration the command line names; leaving it reclaims every process.

    It belongs to a :class:`~wave_actors.Host` of its own, so the command
    has the host's watchdog: killed, even with SIGKILL, it leaves no server
    behind (R-KILL-7).

    :param arguments: the parsed command line (``--workdir``, ``--home``, ``--trust``, ``--credentials``).
    :param overlays: constructor entries holding only ``tool_timeout_ms``, laid
        over the configured entries of their names (R-CFG-1).
    :raises CommandFailed: ``--workdir`` is not a directory (exit 2).
    """
    from wave_actors._host import Host

    directory = workdir(arguments)
    async with Host.open(home=home(arguments), credentials=credentials(arguments)) as host:
        yield await host.create_session(directory, dict(overlays or {}), trust=trust(arguments))


_SEVERITY_ORDER: Final = {Severity.ERROR: 0, Severity.INFO: 1, Severity.WARNING: 2}


def _configured(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics of the configuration the user wrote: not those of the command's own overlays."""
    return [diagnostic for diagnostic in diagnostics if diagnostic.source is not Source.CONSTRUCTOR]


def missing_server(name: str, session: Session) -> str:
    """Why ``name`` is not among the session's servers, from the diagnostics that explain it.

    The entry's own diagnostics come first, the error that skipped it before
    the warnings beside it (an unknown field ``"comand"`` is a warning; the
    missing ``command`` it caused is the error). Without any, the error of a
    whole file (not valid JSON, not an object) is the likely reason.

    :param name: the server asked for.
    :param session: the command's session.
    """
    diagnostics = _configured(session.diagnostics)
    about = sorted(
        (diagnostic for diagnostic in diagnostics if diagnostic.server == name),
        key=lambda diagnostic: _SEVERITY_ORDER[diagnostic.severity],
    )
    if about:
        said = f"server {name!r} was not loaded: {about[0]}"
        return said + "".join(f"; also {diagnostic}" for diagnostic in about[1:])
    names = [status.name for status in session.servers()]
    said = f"no server {name!r} configured for {session.workdir}; configured: {', '.join(names) or 'none'}"
    skipped = [str(d) for d in diagnostics if d.server is None and d.severity is not Severity.INFO]
    if skipped:
        said += "; the configuration had problems: " + "; ".join(skipped)
    return said


def check_usable(session: Session, name: str) -> None:
    """Refuse, with exit 2, a server the configuration cannot dial."""
    if name not in {status.name for status in session.servers()}:
        fail(missing_server(name, session), EXIT_USAGE)
    status = session.server(name)
    if not status.enabled:
        fail(f"server {name!r} is disabled (enabled: false) in {status.origin}", EXIT_USAGE)
    if status.type not in {transport.value for transport in TransportType}:
        fail(
            f"server {name!r} in {status.origin}: unknown type {status.type!r}; expected stdio, http, "
            "streamable-http or sse",
            EXIT_USAGE,
        )


async def connect(session: Session, name: str) -> ServerStatus:
    """Connect server ``name``, printing the configuration diagnostics about it to stderr.

    :param session: the command's session.
    :param name: the server.
    :returns: its status once connected.
    :raises CommandFailed: the configuration cannot dial it (exit 2), or the dial failed (exit 1; a
        server that asks for a login says to run ``login``).
    """
    from wave_actors._errors import LoginRequired, WaveActorsError

    check_usable(session, name)
    for diagnostic in _configured(session.diagnostics):
        if diagnostic.server == name:
            sys.stderr.write(f"{PROGRAM}: config {one_line(diagnostic)}\n")
    try:
        return await session.connect(name)
    except LoginRequired as error:
        fail(f"{error}; to log in, run: {PROGRAM} login {name}")
    except WaveActorsError as error:
        fail(error)


def status_document(status: ServerStatus) -> dict[str, object]:
    """A JSON-ready view of one server's status (tools by name; no schemas).

    :param status: the server's status.
    """
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
        "warnings": list(status.warnings),
    }


# tools


async def tools(arguments: argparse.Namespace, out: TextIO) -> int:
    """Connect SERVER and list its tools (a table, or ``--json`` with their schemas).

    :param arguments: the parsed command line.
    :param out: where the listing goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: the server cannot be dialed (exit 2) or its dial failed (exit 1).
    """
    name = cast(str, arguments.server)
    async with command_session(arguments) as session:
        status = await connect(session, name)
    if arguments.json:
        write_json(
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
                "warnings": list(status.warnings),
            },
            out,
        )
        return EXIT_OK
    if not status.tools:
        out.write(f"server {name!r} lists no tools\n")
        return EXIT_OK
    rows = [[tool.tool, tool.name, "yes" if tool.read_only else "no", tool.description] for tool in status.tools]
    headers = ["TOOL", "MODEL-VISIBLE NAME", "READ-ONLY", "DESCRIPTION"]
    out.write(table(headers, rows, width=terminal_width(out)) + "\n")
    return EXIT_OK


# call


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


class _ProgressLine:
    """One line of a terminal's stderr, redrawn from a call's progress notifications (R-TOOL-10).

    Called synchronously by the session, in the server's order; it only
    writes a short line. The server's message is data: made
    :func:`~wave_actors._console.one_line` and cut to the terminal's width.
    """

    def __init__(self, stream: TextIO, label: str) -> None:
        self._stream = stream
        self._label = label
        self._width = terminal_width(stream)
        self._shown = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        done = f"{progress:g}/{total:g} ({100 * progress / total:.0f} %)" if total else f"{progress:g}"
        text = one_line(f"{PROGRAM}: {self._label}: {done}" + (f": {message}" if message else ""))
        if self._width:
            text = text[: self._width - 1]
        self._stream.write(f"\r\x1b[K{text}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the line, if one was drawn, before anything else is written."""
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def _required(info: ToolInfo) -> list[str]:
    required = info.input_schema.get("required")
    if not isinstance(required, list):
        return []
    return [name for name in cast(list[object], required) if isinstance(name, str)]


def _without_arguments(server: str, tool: str, info: ToolInfo) -> None:
    """Refuse, with exit 2, a call without ``--args`` of a tool that requires arguments: say how to give them."""
    required = _required(info)
    if required:
        example = json.dumps(dict.fromkeys(required, "..."))
        fail(
            f"tool {tool!r} of server {server!r} needs arguments ({', '.join(required)}): give them as "
            f"--args '{example}' (its schema: {PROGRAM} tools {server} --json; see {PROGRAM} call --help)",
            EXIT_USAGE,
        )


async def call(arguments: argparse.Namespace, out: TextIO) -> int:
    """Connect SERVER and call TOOL with ``--args``; print the result's text (or ``--json``, the whole result).

    :param arguments: the parsed command line.
    :param out: where the result goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`, or
        :data:`~wave_actors._console.EXIT_FAILURE` under ``--json`` when the tool
        returned an error (the result, with ``isError``, is the JSON document).
    :raises CommandFailed: bad ``--args``, a server that cannot be dialed,
        an unknown tool or a tool called without the arguments it requires
        (exit 2); a failed dial or call, a call past its deadline, or a tool
        that returned an error (exit 1).
    """
    from wave_actors._errors import WaveActorsError

    server = cast(str, arguments.server)
    tool = cast(str, arguments.tool)
    given = cast(str | None, arguments.arguments)
    parsed = tool_arguments(given if given is not None else "{}", tool)
    timeout = cast(float | None, arguments.timeout)
    overlays = {server: {"tool_timeout_ms": max(1, round(timeout * 1000))}} if timeout is not None else None
    progress = None if arguments.json or not sys.stderr.isatty() else _ProgressLine(sys.stderr, f"{server} {tool}")
    async with command_session(arguments, overlays) as session:
        status = await connect(session, server)
        matches = [info for info in status.tools if tool in (info.tool, info.name)]
        if not matches:
            listed = ", ".join(info.tool for info in status.tools) or "none"
            fail(f"server {server!r} has no tool {tool!r}; its tools: {listed}", EXIT_USAGE)
        if given is None:
            _without_arguments(server, tool, matches[0])
        try:
            result = await session.call_tool(matches[0].name, parsed, on_progress=progress)
        except WaveActorsError as error:
            fail(error)
        finally:
            if progress is not None:
                progress.clear()
    text = _content_text(result)
    failed = f"server {server!r}, tool {tool!r} returned an error: {text or '(no message)'}"
    if given is None:
        failed += f" (no --args was given: see {PROGRAM} call --help)"
    if arguments.json:
        write_json(result.model_dump(mode="json", by_alias=True, exclude_none=True), out)
        if result.is_error:
            say_error(failed, out)  # the result, with isError, is the JSON answer: no second document
            return EXIT_FAILURE
        return EXIT_OK
    if result.is_error:
        fail(failed)
    shown = printable(text)  # the server's text, for a terminal (R-CLI)
    out.write(shown + ("\n" if shown and not shown.endswith("\n") else ""))
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
    directory = printable(str(session.workdir))
    header = f"{PROGRAM} watch: {directory}, version {snapshot.version}, {clock} (Ctrl-C to stop)"
    width = terminal_width(out)
    body = status_table(snapshot.servers, width=width) if snapshot.servers else "no MCP servers configured"
    if out.isatty():
        out.write("\x1b[H\x1b[J")  # home, clear: redraw in place
    out.write(f"{header}\n{body}\n\n")


async def watch(arguments: argparse.Namespace, out: TextIO) -> int:
    """Connect every enabled server and print a status table (or a JSON line) per snapshot.

    Runs until ``--duration`` ends (exit 0) or SIGINT, SIGTERM or SIGHUP
    arrives (exit 128 + N, like every command: its caller runs it under
    :func:`~wave_actors.reclaim_on_signals`, so also in the background of a
    non-interactive shell, where SIGINT is ignored by default); either way
    every process is reclaimed before it returns.

    :param arguments: the parsed command line.
    :param out: where the snapshots go.
    :returns: :data:`~wave_actors._console.EXIT_OK` when ``--duration`` ends.
    :raises CommandFailed: ``--workdir`` is not a directory (exit 2).
    """
    import trio

    duration = cast(float | None, arguments.duration)
    async with command_session(arguments) as session:
        for diagnostic in session.diagnostics:
            sys.stderr.write(f"{PROGRAM}: config {one_line(diagnostic)}\n")
        with trio.move_on_after(duration if duration is not None else math.inf):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(session.prepare_turn)
                async for snapshot in session.watch():
                    if arguments.json:
                        out.write(json_text(_snapshot_document(session, snapshot), out, indent=None) + "\n")
                    else:
                        _render_snapshot(session, snapshot, out)
                    out.flush()
    return EXIT_OK
