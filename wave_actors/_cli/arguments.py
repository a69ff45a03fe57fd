"""The options the ``wave-actors`` subcommands share, and reading their values (R-CLI).

:class:`CommandParser` makes a usage error a :class:`~wave_actors._console.UsageError`
(one line on stderr naming the subcommand's ``--help``, exit 2; with
``--json``, a JSON object on stdout too), arguments left over included.
The option groups are parent parsers that :func:`wave_actors._cli.main`'s
parser gives each subcommand: :func:`output_options` (``--json``, every
subcommand), :func:`configured_options` (``--workdir``, ``--home``,
``--trust``, ``--credentials``: the subcommands that load configuration) and
:func:`edited_options` (``--workdir``, ``--home``: ``add``, ``remove``,
``approve`` and ``revoke``).
:func:`workdir`, :func:`home` and :func:`trust` read those values back, the
same way for every subcommand.

:func:`tool_arguments` reads ``call``'s ``--args``: a JSON object the
library will send as it is, or a usage error before anything is dialed
(R-TOOL-9). Its depth limit is the library's
(:data:`wave_actors._transport.arguments.MAX_DEPTH`), and whatever else the
library would refuse is refused here by the library's own check, so no
``--args`` can turn into a traceback after the dial.

Nothing here imports ``mcp``: ``servers`` parses its options through this
module and must start fast (:mod:`wave_actors._transport.arguments` imports
no SDK, and importing :mod:`wave_actors` has loaded it already).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast, get_args

from wave_actors._auth import StoreChoice
from wave_actors._config import MAX_TOOL_TIMEOUT_MS, TrustMode
from wave_actors._console import EXIT_USAGE, UsageError, fail
from wave_actors._transport.arguments import MAX_DEPTH, tool_call_arguments

__all__ = [
    "CommandParser",
    "call_seconds",
    "configured_options",
    "credentials",
    "edited_options",
    "home",
    "output_options",
    "seconds",
    "tool_arguments",
    "trust",
    "workdir",
]


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are :class:`~wave_actors._console.UsageError` (exit 2)."""

    subcommands: dict[str, CommandParser]
    """The parsers of the subcommands, by name (set by whoever adds them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands = {}

    def error(self, message: str) -> NoReturn:
        """Raise :class:`~wave_actors._console.UsageError` with ``message``, naming this parser's ``--help``.

        :param message: what argparse found wrong.
        :raises UsageError: always.
        """
        raise UsageError(message, self.prog)

    def parse_command_line(
        self, argv: list[str], hint: Callable[[str, list[str]], str] | None = None
    ) -> argparse.Namespace:
        """Parse ``argv``; arguments left over are the chosen subcommand's error, pointing to its ``--help``.

        :param argv: the arguments after the program name.
        :param hint: ``hint(subcommand, leftovers)`` adds what was probably meant to the error.
        :raises UsageError: the arguments are not what the subcommand takes.
        """
        arguments, leftovers = self.parse_known_args(argv)
        if leftovers:
            command = cast(str, arguments.command)
            parser = self.subcommands.get(command, self)
            said = hint(command, leftovers) if hint is not None else ""
            parser.error(f"unrecognized arguments: {' '.join(leftovers)}{said}")
        return arguments


def seconds(text: str) -> float:
    """A ``SECONDS`` option's value: a number, zero or more.

    :param text: the value as typed.
    :raises argparse.ArgumentTypeError: ``text`` is not such a number.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be zero or more")
    return value


def call_seconds(text: str) -> float:
    """``call --timeout``'s value: more than zero seconds, an hour at most (an entry's ``tool_timeout_ms`` range).

    :param text: the value as typed.
    :raises argparse.ArgumentTypeError: ``text`` is not such a number.
    """
    value = seconds(text)
    if not 0.001 <= value <= MAX_TOOL_TIMEOUT_MS / 1000:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a call's deadline is from 0.001 to {MAX_TOOL_TIMEOUT_MS // 1000} s"
        )
    return value


def output_options() -> CommandParser:
    """``--json``, which every subcommand takes."""
    output = CommandParser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of text")
    return output


def configured_options() -> CommandParser:
    """``--workdir``, ``--home`` and ``--trust``: where the configuration is read from, and which entries load."""
    configured = CommandParser(add_help=False)
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
        help="which project (.mcp.json) entries load: 'approved' loads only those the approvals record in "
        "--home approves at their current fingerprint (see the approve and trust commands); 'all' (the default, "
        "as in the library) loads every one, so the command sees what a host with default settings sees. tools, "
        "call and watch start the commands they load: use 'approved' in a repository you do not trust",
    )
    configured.add_argument(
        "--credentials",
        choices=("keyring", "file"),
        default="keyring",
        help="where remote servers' OAuth logins are kept: 'keyring' (the system keyring, the default; needs "
        "pip install 'wave-actors[keyring]') or 'file' (owner-only files in --home's oauth directory)",
    )
    return configured


def edited_options() -> CommandParser:
    """``--workdir`` and ``--home``: the project, and the home of the user file and the approvals record."""
    edited = CommandParser(add_help=False)
    edited.add_argument(
        "--workdir", type=Path, default=None, help="project directory holding .mcp.json (default: current directory)"
    )
    edited.add_argument(
        "--home",
        type=Path,
        default=None,
        help="directory of the user file mcp.json and the approvals record project-trust.json (default: ~/.wave)",
    )
    return edited


def workdir(arguments: argparse.Namespace) -> Path:
    """``--workdir``, default the current directory.

    :param arguments: the parsed command line.
    :raises CommandFailed: it is not a directory (exit 2).
    """
    path = cast(Path | None, arguments.workdir) or Path.cwd()
    if not path.is_dir():
        fail(f"--workdir {path}: not a directory", EXIT_USAGE)
    return path


def home(arguments: argparse.Namespace) -> Path | None:
    """``--home`` with ``~`` expanded; ``None`` for the library's default.

    :param arguments: the parsed command line.
    """
    path = cast(Path | None, arguments.home)
    return path.expanduser() if path is not None else None


def credentials(arguments: argparse.Namespace) -> StoreChoice:
    """``--credentials``: where OAuth logins are kept (R-AUTH-3).

    :param arguments: the parsed command line.
    """
    return cast(StoreChoice, arguments.credentials)


def trust(arguments: argparse.Namespace) -> TrustMode:
    """``--trust``.

    :param arguments: the parsed command line.
    """
    return cast(TrustMode, arguments.trust)


# --args


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
    """How deeply ``value`` nests (a scalar is 0, the arguments object 1), without recursion."""
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


def tool_arguments(text: str, tool: str) -> dict[str, object]:
    """``call``'s ``--args``: the arguments object, once the library would send it (R-TOOL-9).

    :param text: the option's value, JSON text.
    :param tool: the tool as typed on the command line, named in a refusal.
    :returns: the parsed object.
    :raises CommandFailed: (exit 2) ``text`` is not JSON or not an object,
        or holds what the call could not send: NaN, an infinity, a float or
        an integer too large, nesting past the library's
        :data:`~wave_actors._transport.arguments.MAX_DEPTH`, a lone surrogate.
    """
    too_deep = f"--args nests deeper than the {MAX_DEPTH} levels a tool call can carry"
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
    if _depth(arguments) > MAX_DEPTH:
        fail(too_deep, EXIT_USAGE)
    # What else the call would refuse (a lone surrogate, say), refused now by its own rules, before the dial.
    try:
        tool_call_arguments(tool, arguments)
    except TypeError as error:
        fail(f"--args: {error}", EXIT_USAGE)
    return arguments
