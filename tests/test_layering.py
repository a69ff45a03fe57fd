"""Data and imports flow one way: the leaves import nothing above them.

The stdio transport spawns and reclaims server families; the watchdog guards
them against the host's death. Neither imports the other: both stand on the
family leaf, which imports nothing of wave-actors but itself. Every import
counts, those inside functions too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "wave_actors"


def imports_of(package: str) -> Iterator[tuple[str, str]]:
    """(file:line, imported module) for every import in every module of ``package``, however nested."""
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield where, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert node.level == 0, f"{where}: relative import"
                yield where, node.module


def imported(package: str, prefix: str) -> list[str]:
    """``file:line: module`` for every import in ``package`` of a module under ``prefix``."""
    return [f"{where}: {module}" for where, module in imports_of(package) if module.startswith(prefix)]


def test_the_watchdog_does_not_import_the_transport() -> None:
    assert imported("_watchdog", "wave_actors._transport") == []


def test_the_transport_does_not_import_the_watchdog() -> None:
    assert imported("_transport", "wave_actors._watchdog") == []


def test_the_family_leaf_imports_nothing_of_wave_actors_but_itself() -> None:
    above = [
        f"{where}: {module}"
        for where, module in imports_of("_family")
        if module.startswith("wave_actors") and not module.startswith("wave_actors._family")
    ]
    assert above == []


def test_serve_is_built_on_the_public_api_only() -> None:
    # R-SERVE-1: `wave-actors serve` is a host like any other; it imports the public names and its own modules.
    private = [
        f"{where}: {module}"
        for where, module in imports_of("_serve")
        if module.startswith("wave_actors.") and not module.startswith("wave_actors._serve")
    ]
    assert private == []
