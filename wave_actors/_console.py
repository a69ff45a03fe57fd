"""What the ``wave-actors`` subcommands share: exit codes, one-line errors, tables, JSON, and running trio (R-CLI).

The subcommands of :mod:`wave_actors._cli` and :mod:`wave_actors._demo` print
through this module, and neither imports the other for it. It imports neither
``trio`` nor ``mcp`` at module level: ``wave-actors servers`` must start fast.

Whatever a subcommand prints may carry text from configuration files and
servers, and that text is data for a terminal as much as for a model: an
``ESC`` in a tool's description can clear the screen, rewrite lines or set
the clipboard (OSC 52), a ``BEL`` rings, a bidirectional override reorders
what a person reads. Tables and messages (:func:`printable`, :func:`one_line`,
:func:`table`) show every control and invisible character as a Python escape
(``\\x1b``, ``\\u202e``), newlines and tabs of a block aside, and JSON
output writes them as JSON escapes (R-CLI). A lone surrogate (``"\\udcff"``
in a ``.mcp.json``, or a file name the operating system could not decode)
has no UTF-8 form at all: it is escaped the same way, JSON output stays valid
JSON, and :func:`escape_unencodable` makes a stream write escapes instead of
raising, so that no name can turn a listing into a traceback.

How a command ends is for scripts as much as for people: the exit codes
(:data:`EXIT_OK`, :data:`EXIT_FAILURE`, :data:`EXIT_USAGE`, and 128 + N when
signal N stopped it, :data:`EXIT_SIGNAL_BASE`) and, with ``--json``, an error
as one JSON object on stdout (:func:`report_failure`) besides its line on
stderr, so that every outcome can be parsed. :func:`run_until_signal` runs a
command that dials so that SIGINT, SIGTERM and SIGHUP end it that way, once
every process it started is reclaimed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TextIO, cast

from wave_actors._escaping import json_visible, visible

if TYPE_CHECKING:
    from wave_actors._status import ServerStatus

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_SIGNAL_BASE",
    "EXIT_USAGE",
    "PROGRAM",
    "CommandFailed",
    "Interrupted",
    "UsageError",
    "escape_unencodable",
    "fail",
    "json_text",
    "one_line",
    "printable",
    "report_failure",
    "run_until_signal",
    "run_unwrapped",
    "say_error",
    "status_table",
    "table",
    "terminal_width",
    "write_json",
]

PROGRAM: Final = "wave-actors"
"""The command's name, which starts every line it writes to stderr."""

EXIT_OK: Final = 0
"""The command did what was asked."""

EXIT_FAILURE: Final = 1
"""A tool returned an error, or a server failed to dial or was lost."""

EXIT_USAGE: Final = 2
"""Bad arguments, or a configuration that cannot serve the request."""

EXIT_SIGNAL_BASE: Final = 128
"""Signal N stopped the command: it exits 128 + N, as shells report it (130 Ctrl-C / SIGINT, 143 SIGTERM,
129 SIGHUP), once every process it started is reclaimed."""


class CommandFailed(Exception):
    """Ends a subcommand with one line on stderr and an exit code.

    :param message: what went wrong, naming the server, file or field.
    :param code: :data:`EXIT_FAILURE`, :data:`EXIT_USAGE`, or 128 + a signal's number.
    """

    kind: str = "failure"
    """What ended the command, for ``--json``: ``failure``, ``usage`` or ``interrupted``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
        if code == EXIT_USAGE:
            self.kind = "usage"

    @property
    def line(self) -> str:
        """The line written to stderr."""
        return f"{PROGRAM}: error: {self}"

    def document(self) -> dict[str, object]:
        """The ``--json`` form: ``{"error": {"code": ..., "kind": ..., "message": ...}}``."""
        return {"error": {"code": self.code, "kind": self.kind, "message": str(self)}}


class UsageError(CommandFailed):
    """Bad arguments, found by a subcommand's parser: exit :data:`EXIT_USAGE`, with where to read its help.

    :param message: what the parser found wrong.
    :param program: ``wave-actors`` or ``wave-actors SUBCOMMAND``: the parser that found it.
    """

    def __init__(self, message: str, program: str) -> None:
        super().__init__(f"{one_line(message)} (see {program} --help)", EXIT_USAGE)
        self.program = program

    @property
    def line(self) -> str:
        """The line written to stderr, naming the subcommand."""
        return f"{self.program}: error: {self}"


class Interrupted(CommandFailed):
    """A signal stopped the command: exit 128 + its number (:data:`EXIT_SIGNAL_BASE`).

    Not a failure of what was asked, and not a warning: what the person or the
    script that sent it asked for.

    :param number: the signal.
    :param reclaimed: whether the command had started servers (all of them
        reclaimed now), to say so.
    """

    kind = "interrupted"

    def __init__(self, number: int, *, reclaimed: bool = False) -> None:
        name = signal.Signals(number).name
        said = f"stopped by {name}" + ("; every server process it started was reclaimed" if reclaimed else "")
        super().__init__(said, EXIT_SIGNAL_BASE + number)
        self.signal = name

    @property
    def line(self) -> str:
        """The line written to stderr."""
        return f"{PROGRAM}: {self}"

    def document(self) -> dict[str, object]:
        """The ``--json`` form, with the signal's name."""
        document = super().document()
        cast(dict[str, object], document["error"])["signal"] = self.signal
        return document


def say_error(message: str, out: TextIO) -> None:
    """Write ``message`` to stderr as the command's error line, after what ``out`` holds.

    :param message: one line, made :func:`one_line` here.
    :param out: the command's stdout, flushed first so that the two streams read in order.
    """
    out.flush()
    sys.stderr.write(f"{PROGRAM}: error: {one_line(message)}\n")


def report_failure(error: CommandFailed, out: TextIO, *, as_json: bool) -> int:
    """Say how the command failed and return its exit code.

    The line goes to stderr; with ``--json``, the error is also one JSON
    object on one line of ``out`` (:meth:`CommandFailed.document`), so that a
    script reads every outcome from stdout, and ``watch --json``'s stream of
    lines ends with it.

    :param error: why the command ends.
    :param out: the command's stdout.
    :param as_json: whether ``--json`` was given.
    """
    if as_json:
        out.write(json_text(error.document(), out, indent=None) + "\n")
    out.flush()
    sys.stderr.write(error.line + "\n")
    return error.code


def printable(text: str) -> str:
    """``text`` safe for a terminal: every control and invisible character written as its Python escape (R-CLI).

    ``ESC``, ``BEL``, ``\\r`` and the other C0 and C1 controls, Unicode line
    separators, invisible format characters and lone surrogates (which have
    no UTF-8 form) become ``\\x1b``, ``\\u2028``, ``\\udcff``; newlines and tabs
    are kept, so a block of lines stays a block.

    :param text: text that may hold a server's, a file's or a model's characters.
    """
    return visible(text, keep="\n\t")


def one_line(text: object) -> str:
    """``text`` made :func:`printable`, with every run of whitespace (newlines included) made one space."""
    return " ".join(printable(str(text)).split())


def fail(message: object, code: int = EXIT_FAILURE) -> NoReturn:
    """Raise :class:`CommandFailed` with ``message`` made one line.

    :raises CommandFailed: always.
    """
    raise CommandFailed(one_line(message), code)


def escape_unencodable(stream: TextIO) -> None:
    """Make ``stream`` write a character it cannot encode as an escape instead of raising.

    A safety net under :func:`printable`: on a terminal whose encoding is not
    UTF-8, an accented server name is not worth a traceback either. Streams
    that cannot be reconfigured (a test's capture, say) are left alone.
    """
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")


def json_text(document: object, out: TextIO, *, indent: int | None = 2) -> str:
    """``document`` as JSON text that ``out`` can write unchanged.

    Non-ASCII text is kept as it is when ``out`` can encode it, except the
    characters a terminal would act on or not show (controls, invisible format
    characters: :func:`~wave_actors._escaping.json_visible`); otherwise (a
    terminal that is not UTF-8) everything non-ASCII is written as JSON
    escapes. Any reader decodes either back to the same string.
    """
    text = json_visible(json.dumps(document, indent=indent, ensure_ascii=False))
    try:
        text.encode(out.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return json.dumps(document, indent=indent, ensure_ascii=True)
    return text


def write_json(document: object, out: TextIO) -> None:
    """Write ``document`` to ``out`` as indented JSON (:func:`json_text`) and a newline."""
    out.write(json_text(document, out) + "\n")


def terminal_width(out: TextIO) -> int | None:
    """How wide a line of ``out`` may be, when ``out`` is a terminal: ``COLUMNS``, else the terminal's width.

    ``None`` (no limit) for a file or a pipe, whatever ``COLUMNS`` says: what
    a script or ``grep`` reads should be whole (and GNU readline exports
    ``COLUMNS`` to the children of any program that loaded it), and for a
    terminal that does not know its width.

    :param out: where the lines go.
    """
    if not out.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(out.fileno()).columns or None
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


_MIN_LAST_COLUMN: Final = 20


def table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], indent: str = "", *, width: int | None = None
) -> str:
    """Left-aligned columns as wide as their widest cell; the last column is not padded.

    :param headers: the column titles.
    :param rows: the cells, each made :func:`one_line`.
    :param indent: prepended to every line.
    :param width: the widest a line may be (:func:`terminal_width`): a longer
        last cell (a description, an error) is cut and ends with ``…``, but
        keeps 20 characters whatever the other columns take. ``None``: no limit.
    """
    cells = [list(headers), *([one_line(cell) for cell in row] for row in rows)]
    widths = [max(len(row[index]) for row in cells) for index in range(len(headers))]
    lead = len(indent) + sum(column + 2 for column in widths[:-1])
    room = None if width is None else max(width - lead, _MIN_LAST_COLUMN)

    def last(cell: str) -> str:
        return cell if room is None or len(cell) <= room else cell[: room - 1] + "…"

    lines = [
        indent
        + "".join(cell.ljust(column) + "  " for cell, column in zip(row[:-1], widths[:-1], strict=True))
        + last(row[-1])
        for row in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def status_table(
    statuses: Iterable[ServerStatus | tuple[str, ServerStatus]], *, indent: str = "", width: int | None = None
) -> str:
    """A table of server statuses: name, type, state, generation, tools, last error.

    :param statuses: the servers to show, in order; ``(session id, status)``
        pairs add a first column naming each server's session.
    :param indent: prepended to every line.
    :param width: the widest a line may be; a longer error is cut (:func:`table`).
    """
    items = list(statuses)
    with_sessions = any(isinstance(item, tuple) for item in items)
    headers = ["SESSION"] * with_sessions + ["SERVER", "TYPE", "STATE", "GEN", "TOOLS", "ERROR"]
    rows: list[list[object]] = []
    for item in items:
        session, status = item if isinstance(item, tuple) else ("", item)
        row: list[object] = [status.name, status.type, status.state.value, status.generation, status.tool_count]
        rows.append([session] * with_sessions + [*row, status.error or ""])
    return table(headers, rows, indent, width=width)


def _sole_exception(error: BaseException) -> BaseException:
    """The one exception inside nested groups, or ``error`` itself when there are several."""
    inner = error
    while isinstance(inner, BaseExceptionGroup):
        members: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", inner).exceptions
        if len(members) != 1:
            return error
        inner = members[0]
    return inner


def run_unwrapped(function: Any, *args: object) -> Any:
    """``trio.run``, with an exception that nurseries wrapped in groups handed back unwrapped.

    A subcommand raises :class:`CommandFailed` from inside nurseries; the
    caller should see that, not a group of one.

    :param function: the async function to run.
    :param args: its positional arguments.
    :returns: what ``function`` returned.
    :raises BaseException: what ``function`` raised, unwrapped when it is a
        group of exactly one (at any depth).
    """
    import trio

    try:
        return trio.run(function, *args)
    except BaseExceptionGroup as group:
        sole = _sole_exception(group)
        if sole is group:
            raise
        raise sole from None


def run_until_signal(function: Any, *args: object) -> Any:
    """:func:`run_unwrapped` for a command that starts servers: SIGINT, SIGTERM and SIGHUP stop it cleanly.

    The command runs inside :func:`~wave_actors.reclaim_on_signals`: on the
    first of those signals it is cancelled, every process it started is
    reclaimed, and then :class:`Interrupted` says which signal it was (exit
    128 + its number), whatever the command was doing (R-KILL-7).

    :param function: the async function to run.
    :param args: its positional arguments.
    :returns: what ``function`` returned.
    :raises Interrupted: a signal stopped it.
    """
    from wave_actors._watchdog.signals import reclaim_on_signals

    async def stoppable() -> Any:
        try:
            async with reclaim_on_signals():
                return await function(*args)
        except SystemExit as stopped:
            if not isinstance(stopped.code, int) or stopped.code <= EXIT_SIGNAL_BASE:
                raise
            raise Interrupted(stopped.code - EXIT_SIGNAL_BASE, reclaimed=True) from None

    return run_unwrapped(stoppable)
