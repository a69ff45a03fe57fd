"""Where configuration lives and how a configuration file is read (R-CFG-1, R-CFG-2, R-CFG-4).

A file source is a JSON object whose ``mcpServers`` (or ``mcp_servers``) key
holds ``{name: entry}``. Reading a file never raises: a missing file is an
empty source, and a file that cannot be read, is not JSON, or has the wrong
shape becomes one error :class:`~wave_actors._config.model.Diagnostic` and no
entries. Each entry is judged later, on its own (:mod:`wave_actors._config.entry`).

Decisions where the specification is silent:

* Other top-level keys are allowed and ignored (a file may carry settings for
  other tools, and R-STORE-1 preserves them), so ``{}`` or ``{"x": 1}`` is
  simply a source without servers.
* If both ``mcpServers`` and ``mcp_servers`` are present, ``mcpServers`` is
  used and a warning says ``mcp_servers`` was ignored: one file, one list of
  servers, no silent merging of two.
* Files are read as UTF-8; a leading byte-order mark is tolerated.

Reading is defensive, because a repository chooses its ``.mcp.json`` (R-CFG-11):

* Only regular files are read. A symlink to a regular file is fine; a FIFO, a
  device (``/dev/zero``), a directory or a socket is reported and never read.
  The file is checked with ``stat`` *before* it is opened, so opening a FIFO or a
  device never happens, and opened with ``O_NONBLOCK`` and checked again with
  ``fstat``, so a file swapped for a FIFO in between cannot block the read.
* At most :data:`MAX_FILE_BYTES` (1 MiB) are read, and never more than that
  plus one byte: real configuration files are a few KB, and the limit is what
  keeps parsing short. ``json`` parses while holding the GIL, so a thread that
  parses 20 MB stalls the event loop of every session of the host however the
  read is moved off it.
* Documents nested deeper than :data:`MAX_NESTING_DEPTH` are refused before
  ``json`` sees them (it would recurse, and raise ``RecursionError``), and
  integers longer than :data:`MAX_INTEGER_DIGITS` digits before Python
  converts them (it would raise ``ValueError`` past 4300 digits, or spend time
  quadratic in their length where that limit is lifted). ``NaN`` and
  ``Infinity`` are not JSON and are refused too. Each is a diagnostic naming
  the file (R-CFG-4).

Everything here is synchronous, touches no global state and is safe to call
from a worker thread (``trio.to_thread.run_sync``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final, cast

import attrs

from wave_actors._config.converter import describe_value
from wave_actors._config.model import Diagnostic, Severity, Source
from wave_actors._errors import ConfigError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_INTEGER_DIGITS",
    "MAX_NESTING_DEPTH",
    "PROJECT_FILE_NAME",
    "SERVERS_KEY",
    "SERVERS_KEY_ALIAS",
    "USER_FILE_NAME",
    "SourceFile",
    "UnreadableFile",
    "default_home",
    "file_kind",
    "parse_json_document",
    "project_file",
    "read_file_bytes",
    "read_json_document",
    "read_source_file",
    "resolve_existing_workdir",
    "resolve_workdir",
    "servers_of_document",
    "user_file",
]

SERVERS_KEY: Final = "mcpServers"
"""The top-level key holding the servers (R-CFG-2)."""

SERVERS_KEY_ALIAS: Final = "mcp_servers"
"""Also accepted when :data:`SERVERS_KEY` is absent (R-CFG-2)."""

PROJECT_FILE_NAME: Final = ".mcp.json"
"""The project file, directly in the workdir (R-CFG-1)."""

USER_FILE_NAME: Final = "mcp.json"
"""The user file, in the wave home directory (R-CFG-1)."""

MAX_FILE_BYTES: Final = 1024 * 1024
"""The largest configuration or settings file read: 1 MiB. Real files are a few KB (R-CFG-11)."""

MAX_NESTING_DEPTH: Final = 64
"""The deepest nesting of arrays and objects accepted in a file; an entry needs five (R-CFG-11)."""

MAX_INTEGER_DIGITS: Final = 100
"""The longest integer accepted in a file; the largest meaningful value has seven digits (R-CFG-11)."""

# O_NONBLOCK: opening a FIFO must not wait for a writer (the stat before the open should already have refused it).
_OPEN_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)

_NOT_BRACKETS: Final = re.compile(r"[^\[\]{}]+")


def default_home() -> Path:
    """``~/.wave``, the home of the user file and caches (R-CFG-1)."""
    return Path("~/.wave").expanduser()


def resolve_workdir(workdir: Path | str) -> Path:
    """The absolute, symlink-free form of ``workdir``: the one fingerprints use (R-CFG-8)."""
    return Path(workdir).expanduser().resolve()


def resolve_existing_workdir(workdir: Path | str) -> Path:
    """The absolute, symlink-free form of ``workdir``, which must be an existing directory (R-CFG-8, R-CFG-13).

    A session resolves its workdir with it once, when it is created, and uses
    that path for every later load: a symbolic link re-pointed later, or a
    relative path after a ``chdir``, never turns it into another project.
    Blocking (it asks the file system): call it in a worker thread.

    :param workdir: the project directory as given.
    :raises ConfigError: it does not exist, is not a directory, or its
        symbolic links cannot be followed (a loop, a permission).
    """
    path = Path(workdir).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise ConfigError(f"workdir {workdir}: no such directory") from None
    except (OSError, RuntimeError) as error:  # RuntimeError: a symbolic link loop, before Python 3.13
        detail = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ConfigError(f"workdir {workdir}: cannot be resolved ({detail})") from None
    if not resolved.is_dir():
        raise ConfigError(f"workdir {workdir} is not a directory")
    return resolved


def project_file(workdir: Path | str) -> Path:
    """``<workdir>/.mcp.json`` (R-CFG-1)."""
    return Path(workdir) / PROJECT_FILE_NAME


def user_file(home: Path | str) -> Path:
    """``<home>/mcp.json``; ``home`` is usually :func:`default_home` (R-CFG-1)."""
    return Path(home) / USER_FILE_NAME


@attrs.frozen
class SourceFile:
    """The raw entries of one file source, not yet validated.

    :param source: ``PROJECT`` or ``USER``.
    :param origin: the file's path, as diagnostics name it.
    :param entries: ``{name: entry}`` exactly as parsed; empty when the file
        is missing or was rejected.
    :param diagnostics: why the file was rejected, or what in it was ignored.
    """

    source: Source
    origin: str
    entries: Mapping[str, object] = attrs.field(factory=dict[str, object])
    diagnostics: tuple[Diagnostic, ...] = ()


class UnreadableFile(Exception):
    """A JSON file exists but cannot be used; the message says why, for a person."""


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, for a person: "a directory", "a FIFO (named pipe)", "a symbolic link", ...

    :param mode: ``st_mode`` of ``os.stat`` or ``os.lstat``.
    """
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _check_regular(status: os.stat_result, limit: int, what: str) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise UnreadableFile(f"is {file_kind(status.st_mode)}, not a regular file")
    if status.st_size > limit:
        raise UnreadableFile(_too_big(status.st_size, limit, what))


def _too_big(size: int | None, limit: int, what: str) -> str:
    most = f"the {limit} bytes {what} may have"
    return f"is too big (more than {most})" if size is None else f"is too big ({size} bytes, more than {most})"


def read_file_bytes(path: Path, *, limit: int = MAX_FILE_BYTES, what: str = "a configuration file") -> bytes:
    """Read a file that must be a regular file of at most ``limit`` bytes (R-CFG-11).

    Never opens anything but a regular file (or a symlink to one), never
    blocks on a FIFO and never reads more than ``limit + 1`` bytes. The tool
    snapshot cache reads its file with it too.

    :param path: the file.
    :param limit: the most bytes it may have (default :data:`MAX_FILE_BYTES`).
    :param what: what the file is, for the "too big" message.
    :returns: its content.
    :raises FileNotFoundError: when there is no such file (often not an error).
    :raises UnreadableFile: when it is something else than a regular file,
        too big, a dangling symlink, or cannot be read.
    """
    try:
        _check_regular(os.stat(path), limit, what)
        descriptor = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise UnreadableFile("is a symbolic link to a file that does not exist") from None
        raise
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from error
    try:
        # Checked again on what was opened: the path may have been swapped since the stat.
        _check_regular(os.fstat(descriptor), limit, what)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as error:
        raise UnreadableFile(f"cannot be read ({error.strerror or error})") from error
    finally:
        os.close(descriptor)
    if remaining <= 0:
        raise UnreadableFile(_too_big(None, limit, what))  # it grew after the check
    return b"".join(chunks)


class _Refused(ValueError):
    """Raised while parsing for what ``json`` would accept but we do not."""


def _parse_integer(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INTEGER_DIGITS:
        raise _Refused(f"a number has more than {MAX_INTEGER_DIGITS} digits")
    return int(text)


def _refuse_constant(name: str) -> object:
    raise _Refused(f"{name} is not a JSON number")


def _nesting_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` outside strings, counted without recursion.

    In linear time whatever the text (a regular expression for JSON strings would
    backtrack quadratically on an unterminated one, holding the GIL): once escaped
    backslashes and escaped quotes are gone, every ``"`` left opens or closes a
    string, so every other piece between quotes is outside strings.
    """
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(unescaped.split('"')[0::2])
    brackets = _NOT_BRACKETS.sub("", outside)
    depth = deepest = 0
    for bracket in brackets:
        if bracket in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING_DEPTH:
                    break
        else:
            depth -= 1
    return deepest


def parse_json_document(data: bytes) -> object:
    """Parse a configuration document's bytes; every failure is an :class:`UnreadableFile` (R-CFG-4, R-CFG-11).

    :param data: the file's content (UTF-8, with or without a byte-order mark).
    :returns: the parsed document.
    :raises UnreadableFile: when it is not UTF-8, not JSON, nested deeper than
        :data:`MAX_NESTING_DEPTH`, or holds an integer longer than
        :data:`MAX_INTEGER_DIGITS` digits, ``NaN`` or ``Infinity``.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    if _nesting_depth(text) > MAX_NESTING_DEPTH:
        raise UnreadableFile(f"nested too deeply (more than {MAX_NESTING_DEPTH} levels of arrays and objects)")
    try:
        return json.loads(text, parse_int=_parse_integer, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        where = f"{error.msg} at line {error.lineno}, column {error.colno}"
        if text[: error.pos].rstrip().endswith(",") and text[error.pos : error.pos + 1] in ("]", "}"):
            where += ": a trailing comma, which JSON does not allow"
        raise UnreadableFile(f"not valid JSON ({where})") from error
    except _Refused as error:
        raise UnreadableFile(f"not usable JSON ({error})") from error
    except (RecursionError, ValueError) as error:  # the checks above should have caught these first
        raise UnreadableFile(f"not usable JSON ({type(error).__name__})") from error


def read_json_document(path: Path) -> object:
    """Read and parse a JSON configuration file, turning every failure into a reason a person can act on.

    :param path: the file.
    :returns: the parsed document.
    :raises FileNotFoundError: when there is no such file (often not an error).
    :raises UnreadableFile: see :func:`read_file_bytes` and :func:`parse_json_document`.
    """
    return parse_json_document(read_file_bytes(path))


def read_source_file(path: Path, source: Source) -> SourceFile:
    """Read one configuration file; never raises (R-CFG-4).

    :param path: the file; a missing file yields an empty source and no diagnostic.
    :param source: which source the file is.
    """
    origin = str(path)
    try:
        document = read_json_document(path)
    except FileNotFoundError:
        return SourceFile(source, origin)
    except UnreadableFile as error:
        message = f"{error}; the file was skipped"
        return SourceFile(source, origin, diagnostics=(Diagnostic(Severity.ERROR, source, origin, message),))
    entries, diagnostics = servers_of_document(document, source, origin)
    return SourceFile(source, origin, entries, diagnostics)


def servers_of_document(
    document: object, source: Source, origin: str, *, what: str = "file"
) -> tuple[Mapping[str, object], tuple[Diagnostic, ...]]:
    """Find the ``{name: entry}`` object in a parsed configuration document (R-CFG-2, R-CFG-4).

    :param document: the parsed JSON.
    :param source: for the diagnostics.
    :param origin: for the diagnostics.
    :param what: what the document is, in the diagnostics ("the file was skipped").
    :returns: the entries (empty when the shape is wrong) and what was wrong.
    """
    if not isinstance(document, Mapping):
        return {}, (
            Diagnostic(
                Severity.ERROR,
                source,
                origin,
                f'the top level must be a JSON object like {{"{SERVERS_KEY}": {{...}}}}, '
                f"got {describe_value(document)}; the {what} was skipped",
            ),
        )
    diagnostics: list[Diagnostic] = []
    key = SERVERS_KEY if SERVERS_KEY in document else SERVERS_KEY_ALIAS
    if SERVERS_KEY in document and SERVERS_KEY_ALIAS in document:
        diagnostics.append(
            Diagnostic(
                Severity.WARNING,
                source,
                origin,
                f'both "{SERVERS_KEY}" and "{SERVERS_KEY_ALIAS}" are present; '
                f'only "{SERVERS_KEY}" is used, "{SERVERS_KEY_ALIAS}" was ignored',
                field=SERVERS_KEY_ALIAS,
            )
        )
    if key not in document:
        return {}, tuple(diagnostics)
    servers = cast(Mapping[object, object], document)[key]
    if not isinstance(servers, Mapping):
        diagnostics.append(
            Diagnostic(
                Severity.ERROR,
                source,
                origin,
                f'"{key}" must be an object of {{name: entry}}, got {describe_value(servers)}; the {what} was skipped',
                field=key,
            )
        )
        return {}, tuple(diagnostics)
    entries = {str(name): entry for name, entry in cast(Mapping[object, object], servers).items()}
    return entries, tuple(diagnostics)
