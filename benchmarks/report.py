"""What a benchmark shows: statistics, tables, headlines, the progress line and the JSON file."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import attrs

RESULTS_DIRECTORY = Path(__file__).with_name("results")


# Statistics.


def median(values: Iterable[float]) -> float:
    """The median, or NaN for no values."""
    data = list(values)
    return statistics.median(data) if data else math.nan


def percentile(values: Iterable[float], fraction: float) -> float:
    """The ``fraction`` quantile by nearest rank (so the p99 of 30 samples is their maximum)."""
    data = sorted(values)
    if not data:
        return math.nan
    rank = max(1, math.ceil(fraction * len(data)))
    return data[rank - 1]


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, NaN when the denominator is zero or missing."""
    if not denominator or math.isnan(denominator):
        return math.nan
    return numerator / denominator


# Tables.


_ROOT = str(Path(__file__).resolve().parent.parent) + "/"


def short_site(site: str) -> str:
    """An allocation site (``path:line``) without the directories every site shares."""
    for marker in ("site-packages/", _ROOT, "lib/python3.11/"):
        if marker in site:
            return site.split(marker, 1)[1]
    return site


def format_number(value: object, digits: int = 3) -> str:
    """A cell: integers as they are, floats with ``digits`` significant figures, NaN as a dash."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == 0.0:
            return "0"
        magnitude = abs(value)
        if magnitude >= 10**digits:
            return f"{value:,.0f}"
        return (
            f"{value:.{digits}g}" if magnitude < 1 else f"{value:.{max(0, digits - 1 - int(math.log10(magnitude)))}f}"
        )
    return str(value)


@attrs.define
class Table:
    """A plain-text table printed to stdout and kept for the JSON file."""

    title: str
    columns: Sequence[str]
    rows: list[list[object]] = attrs.field(factory=list[list[object]])
    notes: list[str] = attrs.field(factory=list[str])

    def add(self, *cells: object) -> None:
        """Append a row (one cell per column)."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def render(self) -> str:
        """The table as text, numbers right-aligned."""
        cells = [[format_number(cell) for cell in row] for row in self.rows]
        widths = [len(column) for column in self.columns]
        for row in cells:
            widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
        numeric = [
            all(isinstance(row[index], int | float) and not isinstance(row[index], bool) for row in self.rows)
            for index in range(len(self.columns))
        ]

        def line(values: Sequence[str]) -> str:
            parts = [
                value.rjust(width) if is_number else value.ljust(width)
                for value, width, is_number in zip(values, widths, numeric, strict=True)
            ]
            return "  ".join(parts).rstrip()

        rule = "  ".join("-" * width for width in widths)
        out = [self.title, line(list(self.columns)), rule, *(line(row) for row in cells)]
        out += [f"  {note}" for note in self.notes]
        return "\n".join(out)

    def as_json(self) -> dict[str, Any]:
        """The table for the JSON file: columns, rows (raw values) and notes."""
        return {"title": self.title, "columns": list(self.columns), "rows": self.rows, "notes": self.notes}


@attrs.frozen
class Headline:
    """One number of a scenario for the final summary, with its target.

    :param metric: what was measured.
    :param value: the measured value (median unless the metric says otherwise).
    :param unit: its unit.
    :param target: the target in words (``"<= 1.05"``), or ``""`` when there is none.
    :param ok: whether the target is met; ``None`` when there is no target.
    :param invariant: a hard rule (leaks, violations): failing it fails the run.
    """

    metric: str
    value: float
    unit: str = ""
    target: str = ""
    ok: bool | None = None
    invariant: bool = False


def at_most(metric: str, value: float, limit: float, unit: str = "", *, invariant: bool = False) -> Headline:
    """A headline whose target is ``value <= limit``."""
    shown = format_number(float(limit)) if not float(limit).is_integer() else f"{int(limit):,}"
    target = "= 0" if limit == 0 else f"<= {shown}"
    return Headline(metric, value, unit, target, (not math.isnan(value)) and value <= limit, invariant)


def at_least(metric: str, value: float, limit: float, unit: str = "") -> Headline:
    """A headline whose target is ``value >= limit``."""
    return Headline(metric, value, unit, f">= {limit:g}", (not math.isnan(value)) and value >= limit)


def info(metric: str, value: float, unit: str = "") -> Headline:
    """A headline with no target."""
    return Headline(metric, value, unit)


# Progress.


class Progress:
    """A single updating line on stderr (one line per phase when stderr is not a terminal)."""

    def __init__(self, scenario: str) -> None:
        self._scenario = scenario
        self._tty = sys.stderr.isatty()
        self._phase = ""
        self._last = 0.0
        self._started = time.monotonic()

    def update(self, phase: str, detail: str = "", *, force: bool = False) -> None:
        """Show ``phase`` and ``detail``; cheap to call often (redraws at most 10 times a second)."""
        now = time.monotonic()
        new_phase = phase != self._phase
        self._phase = phase
        if self._tty:
            if not (force or new_phase) and now - self._last < 0.1:
                return
            self._last = now
            text = f"[{self._scenario} {now - self._started:6.1f}s] {phase} {detail}"
            sys.stderr.write("\r" + text[:160] + "\x1b[K")
            sys.stderr.flush()
        elif new_phase or force:
            sys.stderr.write(f"[{self._scenario} {now - self._started:6.1f}s] {phase} {detail}\n")
            sys.stderr.flush()

    def done(self) -> None:
        """Clear the line."""
        if self._tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


# Results.


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def environment() -> dict[str, Any]:
    """Where the numbers were taken: machine, interpreter, library versions, load."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": {name: _version(name) for name in ("wave-actors", "trio", "mcp", "psutil", "attrs")},
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _json_safe(value: object) -> object:
    """``value`` with NaN and infinities as ``null`` and attrs instances as dicts."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        items = cast("dict[object, object]", value)
        return {str(key): _json_safe(item) for key, item in items.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in cast("list[object] | tuple[object, ...]", value)]
    if attrs.has(type(value)):
        return _json_safe(attrs.asdict(value))  # pyright: ignore[reportArgumentType]
    return value


def write_results(
    scenario: str,
    *,
    arguments: dict[str, Any],
    tables: Sequence[Table],
    headlines: Sequence[Headline],
    data: dict[str, Any],
    started: float,
    directory: Path = RESULTS_DIRECTORY,
) -> Path:
    """Write ``<directory>/<scenario>.json`` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{scenario}.json"
    document = {
        "scenario": scenario,
        "arguments": arguments,
        "environment": environment(),
        "wall_seconds": time.monotonic() - started,
        "headlines": [attrs.asdict(headline) for headline in headlines],
        "tables": [table.as_json() for table in tables],
        "data": data,
    }
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(_json_safe(document), indent=2) + "\n")
    temporary.replace(path)
    return path
