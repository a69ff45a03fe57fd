"""The demo's report: its steps, the checks of each, printed as they happen or as one JSON document."""

from __future__ import annotations

from typing import TextIO

import attrs

from wave_actors import Host
from wave_actors._console import printable, status_table

__all__ = ["Check", "Step", "Walkthrough", "marks"]


@attrs.frozen
class Check:
    """One expectation of one step, and whether it held.

    :param ok: whether it held.
    :param text: what was checked, with the measured values.
    """

    ok: bool
    text: str


@attrs.define
class Step:
    """One step of the walkthrough and its checks."""

    number: int
    title: str
    checks: list[Check] = attrs.field(factory=list[Check])


@attrs.define
class Walkthrough:
    """The steps so far, and where they are printed."""

    out: TextIO
    as_json: bool
    marks: tuple[str, str]
    steps: list[Step] = attrs.field(factory=list[Step])

    def step(self, title: str) -> None:
        self.steps.append(Step(len(self.steps) + 1, title))
        self._print(f"\n{len(self.steps)}. {title}")

    def check(self, ok: bool, text: str) -> bool:
        self.steps[-1].checks.append(Check(ok, text))
        self._print(f"   {self.marks[0] if ok else self.marks[1]} {text}")
        return ok

    def show(self, text: str) -> None:
        self._print(text)

    def table(self, host: Host) -> None:
        rows = [(session.id, status) for session in host.sessions() for status in session.servers()]
        self._print(status_table(rows, indent="   ") if rows else "   (no live sessions)")

    def _print(self, text: str) -> None:
        if not self.as_json:
            self.out.write(printable(text) + "\n")  # texts quote what the servers said (R-CLI)
            self.out.flush()

    @property
    def failed(self) -> list[Check]:
        return [check for step in self.steps for check in step.checks if not check.ok]


def marks(out: TextIO) -> tuple[str, str]:
    """The check and cross marks ``out`` can print: ✓ and ✗, or words where its encoding has no such signs."""
    try:
        "✓✗".encode(out.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ("OK  ", "FAIL")
    return ("✓", "✗")
