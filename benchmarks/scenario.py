"""The frame every scenario runs in: its command line, trio, tables, JSON, and a leak check at the end.

A scenario module declares its sizes as :class:`Option` values (a full size
and a ``--quick`` size each) and an ``async`` body that returns a
:class:`Outcome`; :func:`main` does the rest. The process exits with status 1
if a hard invariant (a leak, a race violation) failed or the body crashed,
and 0 otherwise -- a missed performance target is reported, not fatal.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from benchmarks import processes
from benchmarks.report import RESULTS_DIRECTORY, Headline, Progress, Table, write_results
from wave_actors.testing import kill_processes


@attrs.frozen
class Option:
    """A command-line size with its full and ``--quick`` defaults.

    :param name: the option, ``--name`` (underscores become dashes).
    :param type: ``int``, ``float`` or ``str``.
    :param full: default of a full run.
    :param quick: default under ``--quick``.
    :param help: what it sets.
    """

    name: str
    type: Callable[[str], Any]
    full: Any
    quick: Any
    help: str


@attrs.define
class Outcome:
    """What a scenario body hands back: tables to print, headlines for the summary, raw data for the JSON."""

    tables: list[Table] = attrs.field(factory=list[Table])
    headlines: list[Headline] = attrs.field(factory=list[Headline])
    data: dict[str, Any] = attrs.field(factory=dict[str, Any])


Body = Callable[[argparse.Namespace, Progress], Awaitable[Outcome]]


def parse(name: str, description: str, options: Sequence[Option], argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the scenario's command line; unset sizes take their full or ``--quick`` default."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=description)
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIRECTORY, help="where the JSON goes")
    for option in options:
        parser.add_argument(
            "--" + option.name.replace("_", "-"),
            type=option.type,
            default=None,
            help=f"{option.help} (default {option.full}; --quick {option.quick})",
        )
    arguments = parser.parse_args(argv)
    for option in options:
        if getattr(arguments, option.name) is None:
            setattr(arguments, option.name, option.quick if arguments.quick else option.full)
    return arguments


def worker_parser(name: str, options: Sequence[Option]) -> argparse.ArgumentParser:
    """The command line of a scenario's ``--worker`` process: ``--worker`` and every size at its full default.

    A scenario whose measurements need a fresh interpreter runs each in a
    worker (``python -m benchmarks.<name> --worker ...``); add its own
    arguments (``--mode``) to the parser returned.
    """
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{name} --worker")
    parser.add_argument("--worker", action="store_true")
    for option in options:
        parser.add_argument("--" + option.name.replace("_", "-"), type=option.type, default=option.full)
    return parser


def main_or_worker(
    name: str, description: str, options: Sequence[Option], body: Body, worker: Callable[[list[str]], None]
) -> None:
    """Run the scenario, or with ``--worker`` on the command line, one of its workers (``worker(argv)``)."""
    if "--worker" in sys.argv[1:]:
        worker(sys.argv[1:])
    else:
        main(name, description, options, body)


def main(name: str, description: str, options: Sequence[Option], body: Body, argv: Sequence[str] | None = None) -> None:
    """Run one scenario from the command line and exit with its status."""
    arguments = parse(name, description, options, argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    progress = Progress(name)
    started = time.monotonic()
    failed = False
    try:
        outcome = trio.run(body, arguments, progress)
    except BaseException as error:  # report and still check for leaks
        progress.done()
        print(f"{name}: crashed: {error!r}", file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr)  # where, through every nursery
        outcome = Outcome(data={"crash": repr(error), "traceback": traceback.format_exception(error)})
        failed = True
        if isinstance(error, KeyboardInterrupt):
            _reclaim_leftovers(name, outcome)
            raise
    progress.done()
    leaked = _reclaim_leftovers(name, outcome)
    if leaked:
        outcome.headlines.append(Headline("processes left at exit (killed)", float(leaked), "", "= 0", False, True))
    recorded = {key: str(value) if isinstance(value, Path) else value for key, value in vars(arguments).items()}
    path = write_results(
        name,
        arguments=recorded,
        tables=outcome.tables,
        headlines=outcome.headlines,
        data=outcome.data,
        started=started,
        directory=arguments.results_dir,
    )
    for table in outcome.tables:
        print(table.render())
        print()
    print(f"{name}: {time.monotonic() - started:.1f} s; results in {path}")
    failed = failed or any(headline.invariant and headline.ok is False for headline in outcome.headlines)
    sys.exit(1 if failed else 0)


def _reclaim_leftovers(name: str, outcome: Outcome) -> int:
    """Kill whatever this run left alive (a safety net: a clean scenario leaves nothing)."""
    left = processes.leftovers()
    if not left:
        return 0
    counted = dict(processes.kinds(left))
    print(f"{name}: {len(left)} process(es) of this run still alive at exit {counted}; killing them", file=sys.stderr)
    kill_processes(left)
    outcome.data["leftovers_at_exit"] = counted
    return len(left)
