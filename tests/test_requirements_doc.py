"""Every requirement ID the project cites resolves in ``docs/requirements.md``, defined exactly once.

Code, tests, benchmarks and docs cite rules by ID: one rule (``R-DIAL-4``), a
range standing for every rule in it (``R-KILL-3..5``) or a whole group
(``R-SUP``). ``docs/requirements.md`` defines each ID as a heading that is the
ID alone (``### R-DIAL-4``, ``## R-SUP``). A citation nobody can look up is a
broken promise, so the scan fails on it, naming file and line.

This file is not scanned: its samples cite made-up IDs on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import attrs
import pytest

ROOT: Final = Path(__file__).resolve().parent.parent
DOC: Final = Path("docs") / "requirements.md"
SCANNED: Final = ("wave_actors", "supervisors", "tests", "benchmarks", "docs", "README.md")
SUFFIXES: Final = frozenset({".py", ".pyi", ".md", ".rst", ".txt", ".toml"})
# Generated or tool-owned directories: not the project's text.
SKIPPED_DIRS: Final = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", "results"})
STATUSES: Final = ("Implemented", "Partial", "Planned", "Optional")

# A group is two or more capitals, so prose like "R-X" in an explanation is not a citation.
# The lookarounds keep a citation from being read out of something longer ("HTTP-R-AB", "R-TOOL-4–6").
_CITATION: Final = re.compile(r"(?<![\w-])R-([A-Z]{2,})(?:-(\d+)(?:\.\.(\d+))?)?(?!\w|\.\.|[–—]|-\w)")
# Anything that starts like a numbered ID but is not one of the three spellings above:
# "R-TOOL-4–6", "R-TOOL-4-6", "R-TOOL-4...6", "R-TOOL-4..", "R-TOOL-4a".
_MALFORMED: Final = re.compile(r"(?<![\w-])R-[A-Z]{2,}-\d++(?:\.\.\d++)?+(?:[–—]|-\d|\.\.|[A-Za-z_])")
_DEFINITION: Final = re.compile(r"^#{2,6}\s+(R-[A-Z]{2,}(?:-\d+)?)\s*$")


@attrs.frozen
class Citation:
    """One requirement reference as written, and the IDs it stands for.

    :param written: the text, e.g. ``R-KILL-3..5``.
    :param ids: every ID it cites, e.g. ``R-KILL-3``, ``R-KILL-4``, ``R-KILL-5``.
    """

    written: str
    ids: tuple[str, ...]


def citations_in(line: str) -> list[Citation]:
    """The well-formed citations on one line; a reversed range is not one (see :func:`malformed_in`)."""
    found: list[Citation] = []
    for match in _CITATION.finditer(line):
        group, low, high = match.group(1), match.group(2), match.group(3)
        if low is not None and high is not None and int(high) <= int(low):
            continue
        if low is None:
            ids = (f"R-{group}",)
        elif high is None:
            ids = (f"R-{group}-{int(low)}",)
        else:
            ids = tuple(f"R-{group}-{number}" for number in range(int(low), int(high) + 1))
        found.append(Citation(match.group(0), ids))
    return found


def malformed_in(line: str) -> list[str]:
    """Spellings that look like citations but cannot be resolved as written."""
    bad = [match.group(0) for match in _MALFORMED.finditer(line)]
    for match in _CITATION.finditer(line):
        low, high = match.group(2), match.group(3)
        if high is not None and int(high) <= int(low):
            bad.append(match.group(0))
    return bad


def definitions(doc: str) -> list[tuple[str, int]]:
    """``(ID, line number)`` of every heading that defines an ID, in document order."""
    return [
        (match.group(1), number)
        for number, line in enumerate(doc.splitlines(), start=1)
        if (match := _DEFINITION.match(line))
    ]


def scanned_files(root: Path) -> Iterator[Path]:
    """The project's text files that may cite requirements, this file excepted."""
    here = Path(__file__).resolve()
    for name in SCANNED:
        top = root / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            relative = path.relative_to(root).parts
            if (
                path.suffix in SUFFIXES
                and not SKIPPED_DIRS.intersection(relative)
                and path.is_file()
                and path.resolve() != here
            ):
                yield path


def citation_problems(root: Path) -> list[str]:
    """``file:line: ...`` for every citation not defined in the root's requirements document."""
    defined = {requirement for requirement, _ in definitions((root / DOC).read_text(encoding="utf-8"))}
    problems: list[str] = []
    for path in scanned_files(root):
        where = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if "R-" not in text:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for written in malformed_in(line):
                problems.append(f"{where}:{number}: {written!r} is not a citation (write R-GROUP-N or R-GROUP-N..M)")
            for citation in citations_in(line):
                for requirement in citation.ids:
                    if requirement not in defined:
                        via = "" if citation.written == requirement else f" (in {citation.written})"
                        problems.append(f"{where}:{number}: {requirement}{via} is not defined in {DOC.as_posix()}")
    return problems


def duplicate_definitions(doc: str) -> list[str]:
    """``line: ID`` for every definition of an ID already defined above it."""
    seen: set[str] = set()
    duplicates: list[str] = []
    for requirement, number in definitions(doc):
        if requirement in seen:
            duplicates.append(f"{DOC.as_posix()}:{number}: {requirement} is defined again")
        seen.add(requirement)
    return duplicates


# The project itself.


def test_every_cited_requirement_is_defined() -> None:
    problems = citation_problems(ROOT)
    assert not problems, "requirement citations that do not resolve:\n" + "\n".join(problems)


def test_no_requirement_is_defined_twice() -> None:
    duplicates = duplicate_definitions((ROOT / DOC).read_text(encoding="utf-8"))
    assert not duplicates, "\n".join(duplicates)


def test_each_group_is_numbered_from_one_without_gaps_under_its_own_heading() -> None:
    defined = [requirement for requirement, _ in definitions((ROOT / DOC).read_text(encoding="utf-8"))]
    groups = [requirement for requirement in defined if requirement.count("-") == 1]
    numbers: dict[str, list[int]] = {group: [] for group in groups}
    for requirement in defined:
        if requirement.count("-") == 2:
            group, _, number = requirement.rpartition("-")
            assert group in numbers, f"{requirement} has no group heading {group}"
            numbers[group].append(int(number))
    for group, found in numbers.items():
        assert found == list(range(1, len(found) + 1)), f"{group} is numbered {found}"


def test_every_rule_starts_with_its_status() -> None:
    lines = (ROOT / DOC).read_text(encoding="utf-8").splitlines()
    defined = definitions("\n".join(lines))
    numbered_groups = {requirement.rpartition("-")[0] for requirement, _ in defined if requirement.count("-") == 2}
    statuses = tuple(f"**{status}.**" for status in STATUSES)
    for requirement, number in defined:
        if requirement in numbered_groups:
            continue  # a group heading with rules of its own under it introduces them, it is not a rule
        first = next(line for line in lines[number:] if line.strip())
        assert first.startswith(statuses), f"{requirement} does not start with one of {statuses}: {first!r}"


# The checker, on samples: it must fail when it should.


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# R-DIAL-4", [("R-DIAL-4", ("R-DIAL-4",))]),
        ("(R-KILL-3..5)", [("R-KILL-3..5", ("R-KILL-3", "R-KILL-4", "R-KILL-5"))]),
        ("supervision (R-SUP), the command (R-CLI).", [("R-SUP", ("R-SUP",)), ("R-CLI", ("R-CLI",))]),
        ("R-CFG-8/R-CACHE-1: stable", [("R-CFG-8", ("R-CFG-8",)), ("R-CACHE-1", ("R-CACHE-1",))]),
        ("R-TOOL-10, then R-TOOL-1.", [("R-TOOL-10", ("R-TOOL-10",)), ("R-TOOL-1", ("R-TOOL-1",))]),
        ("a group: R-RACE)", [("R-RACE", ("R-RACE",))]),
        ("links lower-case anchors: requirements.md#r-dial-4", []),
        ("PR-SET_PDEATHSIG and HTTP-R-AB are not citations, nor is R-X-1", []),
    ],
)
def test_citations_are_read_with_ranges_expanded(line: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert [(citation.written, citation.ids) for citation in citations_in(line)] == expected
    assert malformed_in(line) == []


@pytest.mark.parametrize(
    "line", ["R-TOOL-4–6", "R-TOOL-4—6", "R-TOOL-4-6", "R-TOOL-4...6", "see R-TOOL-4..", "R-TOOL-4a", "R-TOOL-6..4"]
)
def test_misspelled_ranges_are_refused_rather_than_half_read(line: str) -> None:
    assert malformed_in(line), line
    assert citations_in(line) == []


def test_only_a_heading_that_is_the_id_alone_defines_it() -> None:
    lines = [
        "# R-TOP",  # the page title level is not a definition
        "## R-CFG",
        "### R-CFG-1",
        "### R-CFG-2 and more",
        "R-CFG-3",
        "| R-CFG-4 | a table row |",
        "#### R-CFG-5  ",
    ]
    doc = "\n".join(lines)
    assert definitions(doc) == [("R-CFG", 2), ("R-CFG-1", 3), ("R-CFG-5", 7)]


def test_a_second_definition_is_reported_with_its_line() -> None:
    doc = "## R-SUP\n\ntext\n\n## R-SUP\n"
    assert duplicate_definitions(doc) == [f"{DOC.as_posix()}:5: R-SUP is defined again"]


def test_a_citation_missing_from_the_document_fails_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / DOC).write_text("## R-DIAL\n\n### R-DIAL-1\n\n### R-DIAL-2\n\n## R-SUP\n", encoding="utf-8")
    package = tmp_path / "wave_actors"
    (package / "__pycache__").mkdir(parents=True)
    (package / "mod.py").write_text('"""Fine (R-DIAL-1, R-SUP, R-DIAL)."""\n# R-DIAL-1..3\n# R-BOGUS-7\n')
    (package / "__pycache__" / "mod.py").write_text("# R-SKIPPED-1\n")  # not the project's text
    (tmp_path / "README.md").write_text("Typo: R-DIAL-1–2.\n", encoding="utf-8")

    assert citation_problems(tmp_path) == [
        "wave_actors/mod.py:2: R-DIAL-3 (in R-DIAL-1..3) is not defined in docs/requirements.md",
        "wave_actors/mod.py:3: R-BOGUS-7 is not defined in docs/requirements.md",
        "README.md:1: 'R-DIAL-1–' is not a citation (write R-GROUP-N or R-GROUP-N..M)",
    ]
