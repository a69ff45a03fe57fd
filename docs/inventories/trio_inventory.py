"""Write ``trio.inv``, the Sphinx inventory of trio's documented names, from trio's own documentation sources.

The documentation builds offline (``make docs`` needs no network), so
intersphinx reads trio's inventory from this directory instead of
``https://trio.readthedocs.io/en/stable/objects.inv``. This script makes it
from a checkout of trio: every object that trio's ``reference-*.rst`` pages
describe (``autofunction``, ``autoclass``, ``function``, ``class``, ...), at
the anchor Sphinx gives it on that page. Run it again when trio's reference
pages change::

    python docs/inventories/trio_inventory.py /path/to/trio
"""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

_ROLES = {
    "function": "function",
    "class": "class",
    "exception": "exception",
    "data": "data",
    "attribute": "attribute",
    "method": "method",
    "module": "module",
}
_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:auto)?(\w+):: ([\w.]+)")
_CURRENT = re.compile(r"^\.\. (?:current)?module:: ([\w.]+)")


def entries(sources: Path) -> list[str]:
    """The inventory's lines (``name domain:role priority uri dispname``) for trio's reference pages."""
    lines: list[str] = []
    for page in sorted(sources.glob("reference-*.rst")):
        module, owner = "trio", ""
        for text in page.read_text(encoding="utf-8").splitlines():
            current = _CURRENT.match(text)
            if current:
                module = current.group(1)
            found = _DIRECTIVE.match(text)
            if not found or found.group(2) not in _ROLES:
                continue
            indent, role, name = found.groups()
            if role == "module":
                lines.append(f"{name} py:module 0 {page.stem}.html#module-{name} -")
                continue
            if indent and owner and "." not in name:
                name = f"{owner}.{name}"
            elif "." not in name or not name.startswith(module.split(".")[0]):
                name = f"{module}.{name}"
            if role in ("class", "exception"):
                owner = name
            lines.append(f"{name} py:{_ROLES[role]} 1 {page.stem}.html#$ -")
    return sorted(set(lines))


def main(trio: str) -> None:
    """Write ``trio.inv`` beside this script from the checkout at ``trio``."""
    header = "# Sphinx inventory version 2\n# Project: Trio\n# Version: stable\n# The remainder of this file is compressed using zlib.\n"
    body = "".join(line + "\n" for line in entries(Path(trio) / "docs" / "source"))
    (Path(__file__).parent / "trio.inv").write_bytes(header.encode() + zlib.compress(body.encode()))


if __name__ == "__main__":
    main(sys.argv[1])
