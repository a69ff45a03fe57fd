"""The public surface of ``supervisors`` is pinned, and the package stays generic (R-SUP)."""

from __future__ import annotations

import ast
from pathlib import Path

import supervisors

PUBLIC_NAMES = {
    "Backoff",
    "ChildAbandoned",
    "ChildContext",
    "ChildEvent",
    "ChildNotStarted",
    "ChildSpec",
    "ChildState",
    "ChildStatus",
    "EventKind",
    "EventSubscription",
    "Restart",
    "RestartIntensity",
    "RestartIntensityExceeded",
    "SiblingRestart",
    "Strategy",
    "Supervisor",
    "SupervisorError",
    "UnknownChild",
}


def test_public_surface_is_exactly_the_pinned_names() -> None:
    exported = {name for name in vars(supervisors) if not name.startswith("_")}
    assert exported == PUBLIC_NAMES


def test_the_issue_import_line_works() -> None:
    from supervisors import ChildSpec, Restart, Supervisor

    assert (Supervisor, ChildSpec, Restart) == (
        supervisors.Supervisor,
        supervisors.ChildSpec,
        supervisors.Restart,
    )


def test_every_public_name_has_a_docstring() -> None:
    for name in PUBLIC_NAMES:
        assert getattr(supervisors, name).__doc__, name


def test_package_imports_nothing_from_wave_actors_or_mcp() -> None:
    package = Path(supervisors.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                assert module.split(".")[0] not in {"wave_actors", "mcp"}, (source.name, module)
