"""The public surface is pinned: what the package promises is importable, exported, documented and typed.

``wave_actors`` and ``wave_actors.testing`` are public; every other module is
private (its name starts with ``_``). Tests of behaviour and benchmarks use the
public surface only; a unit test of a private module may import that module,
and the leaf it stands on (the transport's: the process family).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import attrs
import cattrs

import supervisors
import wave_actors

ROOT = Path(__file__).resolve().parent.parent

DESIGN_NAMES = {
    "Host",
    "Session",
    "open_session",
    "ServerState",
    "ServerStatus",
    "ToolInfo",
    "ServerConfig",
    "load_config",
    "LoadMode",
    "WaveActorsError",
    "ServerUnavailable",
    "ToolTimeout",
    "UnknownTool",
    "ConfigError",
}

# Project trust (R-CFG-10): what a settings page needs to trust a folder and approve its servers.
TRUST_NAMES = {"TrustMode", "TrustStore", "ProjectTrust", "ServerTrust", "ApprovalState"}

# The unit tests of a private package may import it (and only it), and the leaf records and packages beneath it.
UNIT_TESTS_OF = {
    "tests/actor": ("wave_actors._actor", "wave_actors._listing"),
    "tests/tools": ("wave_actors._tools", "wave_actors._catalog", "wave_actors._listing"),
    "tests/config": ("wave_actors._config",),
    "tests/transport": ("wave_actors._transport", "wave_actors._family"),
    "tests/cache": ("wave_actors._cache", "wave_actors._listing"),
    "tests/family": ("wave_actors._family",),
    "tests/watchdog": ("wave_actors._watchdog", "wave_actors._family"),
    "tests/roster": ("wave_actors._roster",),
    "tests/asyncio_face": ("wave_actors._asyncio",),
    "tests/auth": ("wave_actors._auth",),
}

# Logins for remote servers (R-AUTH): what a host needs to log in, keep credentials and show a login.
AUTH_NAMES = {
    "Credentials",
    "CredentialStore",
    "FileCredentialStore",
    "KeyringCredentialStore",
    "LoginFlow",
    "LoginState",
    "LoginStatus",
    "LoginRequired",
    "LoginFailed",
    "LoginExpired",
    "LoginSuperseded",
    "CredentialStoreError",
    "OAuthSettings",
    "OAuthGrant",
}


def public_names(module: object) -> set[str]:
    return {name for name in vars(module) if not name.startswith("_") and not inspect.ismodule(getattr(module, name))}


def private_modules() -> Iterator[object]:
    for info in pkgutil.walk_packages(wave_actors.__path__, "wave_actors."):
        if info.name.startswith("wave_actors.testing") or info.name.endswith("__main__"):
            continue
        if "._" in info.name and not info.name.startswith("wave_actors._cli"):
            yield importlib.import_module(info.name)


def test_design_names_are_exported() -> None:
    assert public_names(wave_actors) >= DESIGN_NAMES


def test_trust_names_are_exported() -> None:
    # R-CFG-10
    assert public_names(wave_actors) >= TRUST_NAMES


def test_auth_names_are_exported() -> None:
    # R-AUTH-1..3
    assert public_names(wave_actors) >= AUTH_NAMES


def test_every_public_name_is_documented() -> None:
    for module in (wave_actors, supervisors):
        for name in public_names(module):
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_public_names_say_wave_actors_in_tracebacks() -> None:
    # trio's fixup_module_metadata: `wave_actors.ServerUnavailable`, not a private module path.
    for name in public_names(wave_actors):
        value = getattr(wave_actors, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == "wave_actors", f"{name} reports module {value.__module__}"


def _annotation_strings() -> Iterator[tuple[str, str]]:
    """(where, annotation text) of every parameter and return of the public classes and functions."""
    for name in sorted(public_names(wave_actors)):
        value = getattr(wave_actors, name)
        callables: list[tuple[str, object]] = []
        if inspect.isfunction(value):
            callables.append((name, value))
        elif inspect.isclass(value):
            private_constructor = type(value).__name__ == "NoPublicConstructor"
            for attribute, member in vars(value).items():
                if attribute.startswith("_") and (attribute != "__init__" or private_constructor):
                    continue
                member = member.__func__ if isinstance(member, classmethod | staticmethod) else member
                if isinstance(member, property) and member.fget is not None:
                    callables.append((f"{name}.{attribute}", member.fget))
                elif inspect.isfunction(member):
                    callables.append((f"{name}.{attribute}", member))
            if attrs_fields := getattr(value, "__attrs_attrs__", None):
                for field in attrs_fields:
                    if not field.name.startswith("_") and isinstance(field.type, str):
                        yield f"{name}.{field.name}", field.type
        for where, function in callables:
            for annotation in getattr(function, "__annotations__", {}).values():
                if isinstance(annotation, str):
                    yield where, annotation


def test_every_type_in_a_public_signature_is_exported() -> None:
    # A host author must be able to name every type they are handed or must pass.
    defined: dict[str, str] = {}
    for module in private_modules():
        for name in getattr(module, "__all__", ()):
            defined.setdefault(name, module.__name__)  # type: ignore[attr-defined]
    exported = public_names(wave_actors)
    missing = {
        (where, token, defined[token])
        for where, annotation in _annotation_strings()
        for token in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", annotation)
        if token in defined and token not in exported and token[0].isupper()
    }
    assert not missing, "types in public signatures that wave_actors does not export: " + ", ".join(
        f"{token} (in {where}, defined in {module})" for where, token, module in sorted(missing)
    )


def test_type_hints_of_public_classes_resolve_under_their_public_module_name() -> None:
    # Hosts serialise snapshots and options (cattrs, attrs.resolve_types, typing.get_type_hints):
    # reporting `wave_actors` as the module must not hide the names the annotations use.
    for name in sorted(public_names(wave_actors)):
        value = getattr(wave_actors, name)
        if inspect.isclass(value):
            typing.get_type_hints(value)
            if attrs.has(value):
                attrs.resolve_types(value)
    assert cattrs.Converter().unstructure(wave_actors.SessionOptions())["dial_timeout"] == 30.0


def test_every_error_is_a_wave_actors_error() -> None:
    for name in public_names(wave_actors):
        value = getattr(wave_actors, name)
        if inspect.isclass(value) and issubclass(value, Exception):
            assert issubclass(value, wave_actors.WaveActorsError), name


def _imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def test_tests_and_benchmarks_use_the_public_surface() -> None:
    offences: list[str] = []
    for path in sorted([*ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("benchmarks").rglob("*.py")]):
        relative = path.relative_to(ROOT).as_posix()
        allowed = next((modules for folder, modules in UNIT_TESTS_OF.items() if relative.startswith(folder + "/")), ())
        for line, module in _imported_modules(path):
            if not re.match(r"wave_actors\._", module):
                continue
            if not any(module == prefix or module.startswith(prefix + ".") for prefix in allowed):
                offences.append(f"{relative}:{line}: {module}")
    assert not offences, "private modules imported outside their unit tests:\n  " + "\n  ".join(sorted(set(offences)))


def test_importing_the_package_does_not_import_the_mcp_sdk() -> None:
    # Listing configuration must stay fast: the SDK costs over a second to import.
    code = "import sys, wave_actors; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_supervisors_does_not_import_wave_actors() -> None:
    code = "import sys, supervisors; print(any(m.startswith('wave_actors') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
