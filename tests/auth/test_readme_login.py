"""The "Servers that need a login" page's examples run, against the test authorization server (R-AUTH-2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from auth_support import OAuthServers, approve, session_options

from wave_actors import ServerState, open_session

PAGE = Path(__file__).resolve().parents[2] / "docs" / "login.md"
PLACEHOLDER = "https://mcp.tracker.example/mcp"

# The user at a browser: follows the authorization server's redirect back to the login's listener, as
# `webbrowser.open` does, in a thread of its own (the example's event loop runs the listener).
BROWSER = """
import threading

import httpx2


def open(url, new=0, autoraise=True):
    def visit():
        location = httpx2.get(url).headers["location"]
        httpx2.get(location)

    threading.Thread(target=visit, daemon=True).start()
    return True
"""


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def test_the_desktop_example_logs_in_through_the_browser_and_prints_what_the_readme_shows(
    servers: OAuthServers, tmp_path: Path
) -> None:
    desktop = blocks("python")[0]
    [expected] = blocks("text")
    assert PLACEHOLDER in desktop and "session.login" in desktop and "webbrowser.open" in desktop
    (tmp_path / "example.py").write_text(desktop.replace(PLACEHOLDER, servers.url), encoding="utf-8")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "webbrowser.py").write_text(BROWSER, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(stubs)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == expected


async def test_the_browser_host_example_completes_with_what_the_user_pasted(
    servers: OAuthServers, tmp_path: Path, home: Path
) -> None:
    browser = blocks("python")[1]
    assert "listen=False" in browser and "login.complete(pasted)" in browser
    namespace: dict[str, Any] = {}
    exec(browser, namespace)  # the README's own example
    async with open_session(
        workdir=tmp_path,
        home=home,
        credentials="file",
        mcp_servers={"tracker": {"url": servers.url}},
        options=session_options(),
    ) as session:
        with trio.fail_after(30):
            await namespace["login_from_the_browser"](session, "tracker", approve)
            await session.wait_for(lambda snapshot: snapshot.server("tracker").state is ServerState.CONNECTED)
