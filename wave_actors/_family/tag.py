"""The mark every member of a server's process family carries: an environment variable (R-KILL-1).

Children inherit the environment, so a ``setsid`` or double-forked
grandchild, which leaves the server's tree and session, is still found by
its tag. The stdio transport sets it on every server it spawns
(:mod:`wave_actors._transport.stdio`); the process table
(:mod:`wave_actors._transport.proctree`), the watchdog and subreaper mode
(:mod:`wave_actors._watchdog`) read it; ``wave_actors.testing`` exports it
to host authors' leak checks.
"""

from __future__ import annotations

import uuid
from typing import Final

__all__ = ["FAMILY_VARIABLE", "family_tag"]

FAMILY_VARIABLE: Final = "WAVE_ACTORS_FAMILY"
"""Environment variable that tags every process a stdio server starts."""


def family_tag() -> str:
    """A fresh value for :data:`FAMILY_VARIABLE`, unique to one spawn."""
    return uuid.uuid4().hex
