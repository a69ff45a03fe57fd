"""A server that fails to start says why: the stderr lines that carry the cause reach the error (R-CFG-9, R-CLI).

``npx`` entries are the most common shape in real ``.mcp.json`` files, and
npm prints its "new version available" notice after the ``npm error 404``
that says what went wrong: the error keeps the error lines, within the same
five-line bound, and leaves the notice out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cli_support import RunCli, write_servers

# What `npx -y @modelcontextprotocol/server-tiem` prints when the package does not exist (npm 10).
NPX_404 = """\
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-tiem - Not found
npm error 404
npm error 404  '@modelcontextprotocol/server-tiem@*' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm notice
npm notice New major version of npm available! 10.9.2 -> 11.4.1
npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.4.1
npm notice To update run: npm install -g npm@11.4.1
npm notice
npm error A complete log of this run can be found in: /root/.npm/_logs/2025-05-01T10_00_00_000Z-debug-0.log
"""


def fake_npx(directory: Path) -> list[str]:
    """The command line of a program that fails as npx does on a package that does not exist."""
    script = directory / "npx.py"
    script.write_text(f"import sys\nsys.stderr.write({NPX_404!r})\nsys.exit(1)\n", encoding="utf-8")
    return [sys.executable, str(script)]


def test_a_failed_npx_server_says_npms_error_not_its_update_notice(run_cli: RunCli, workdir: Path) -> None:
    command, *args = fake_npx(workdir)
    write_servers(workdir / ".mcp.json", {"time": {"command": command, "args": args}})

    completed = run_cli("tools", "time")

    assert completed.returncode == 1
    [line] = completed.stderr.splitlines()
    assert "'time'" in line and "connect failed" in line
    assert "npm error code E404" in line and "npm error 404 Not Found - GET" in line
    assert "'@modelcontextprotocol/server-tiem@*' is not in this registry." in line
    assert "npm notice" not in line
    assert "(5 of 13 lines, error lines kept first)" in line
