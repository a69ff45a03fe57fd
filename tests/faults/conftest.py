"""Fixtures for the fault-injection matrix.

The first dial in a process imports the MCP client (about a second and a half
on these machines), and that import runs inside the dial's deadline. The
matrix uses dial timeouts of a second, so the client is imported here, once,
before any test: a healthy server must never miss its deadline because it
happened to be dialed first.
"""

from __future__ import annotations

import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.session  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.sse  # noqa: F401  # pyright: ignore[reportUnusedImport]
import mcp.client.streamable_http  # noqa: F401  # pyright: ignore[reportUnusedImport]
