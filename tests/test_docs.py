"""The documentation covers what the package promises: every public name has an API entry, every page is reachable.

``make docs`` renders the site with warnings as errors (a page left out of
every table of contents, a broken include or link, a docstring that does not
parse); this test, which needs no Sphinx, pins what the build cannot see: a
public name that nobody listed in ``docs/api/``. The README stays a front
page: what the library is, how to install it, the two commands, one example,
the exit codes and links, under 200 lines.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import supervisors
import wave_actors
import wave_actors.asyncio
import wave_actors.testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

PUBLIC_MODULES = [wave_actors, wave_actors.asyncio, wave_actors.testing, supervisors]


def public_names(module: ModuleType) -> set[str]:
    """``__all__`` where the module has one, else every name it binds that is not private or a module."""
    listed: list[str] | None = getattr(module, "__all__", None)
    if listed is not None:
        return set(listed)
    return {name for name in vars(module) if not name.startswith("_") and not inspect.ismodule(getattr(module, name))}


def documented_names() -> set[str]:
    """The qualified names the API reference renders with an ``auto*`` directive."""
    directive = re.compile(r"^\.\. auto(?:class|exception|function|data|attribute)::\s+([\w.]+)\s*$", re.MULTILINE)
    return {name for page in (DOCS / "api").glob("*.rst") for name in directive.findall(page.read_text("utf-8"))}


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda module: module.__name__)
def test_every_public_name_has_an_entry_in_the_api_reference(module: ModuleType) -> None:
    documented = documented_names()

    missing = sorted(name for name in public_names(module) if f"{module.__name__}.{name}" not in documented)

    assert not missing, f"not in docs/api/*.rst: {missing}"


def test_the_api_reference_names_only_what_exists() -> None:
    for qualified in documented_names():
        module_name, _, name = qualified.rpartition(".")
        module = next(module for module in PUBLIC_MODULES if module.__name__ == module_name)
        assert name in public_names(module), qualified


def test_every_page_is_in_a_table_of_contents() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^([\w/-]+)$", index, flags=re.MULTILINE))
    pages = {path.relative_to(DOCS).with_suffix("").as_posix() for path in DOCS.rglob("*.md")} | {
        path.relative_to(DOCS).with_suffix("").as_posix() for path in (DOCS / "api").glob("*.rst")
    }

    assert pages - {"index"} <= listed, sorted(pages - {"index"} - listed)


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)

    assert len(text.splitlines()) < 200
    assert headings.index("Install") < headings.index("Set up")
    assert "make demo" in text and "make test" in text and "make docs" in text


def test_the_readmes_exit_code_table_is_complete() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("<!-- exit codes -->") : text.index("<!-- /exit codes -->")]
    codes = re.findall(r"^\| ([^|]+?) \|", table, flags=re.MULTILINE)

    assert codes == ["Code", "0", "1", "2", "128 + N"]
    for said in ("130", "SIGINT", "143", "SIGTERM", "129", "SIGHUP"):
        assert said in table, said


def test_the_readmes_links_lead_to_files_of_the_repository() -> None:
    text = README.read_text(encoding="utf-8")

    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
