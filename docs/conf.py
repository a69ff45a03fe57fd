"""Sphinx configuration of the wave-actors documentation: ``make docs`` builds it into ``docs/_build/html``.

The pages are Markdown (MyST), one per topic; the API reference is rendered by
autodoc from the docstrings of the public modules (``api/``). The build needs
no network: trio's inventory for intersphinx is read from
``inventories/trio.inv`` (made by ``inventories/trio_inventory.py`` from
trio's documentation sources). With ``WAVE_DOCS_ONLINE=1`` the published
inventories are read instead, and the MCP SDK's (mkdocstrings) and Python's
are added.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version as installed_version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "wave-actors"
author = "wave-actors maintainers"
copyright = "wave-actors maintainers"
release = installed_version("wave-actors")
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.intersphinx"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "inventories"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.header"]  # requirements.md numbers its groups from a level-3 heading on

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}

_TRIO = "https://trio.readthedocs.io/en/stable/"
if os.environ.get("WAVE_DOCS_ONLINE") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "trio": (_TRIO, None),
        "mcp": ("https://py.sdk.modelcontextprotocol.io/v2/", None),
    }
else:
    intersphinx_mapping = {"trio": (_TRIO, str(Path(__file__).parent / "inventories" / "trio.inv"))}

html_theme = "alabaster"
html_title = f"wave-actors {release}"
html_static_path: list[str] = []
