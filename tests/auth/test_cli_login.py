"""``wave-actors login``, ``logout`` and ``servers`` against a server that requires OAuth (R-AUTH-2, R-AUTH-3, R-CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import psutil
from auth_support import OAuthServers


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "wave_actors", *args]


def configure(home: Path, servers: OAuthServers) -> None:
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"url": servers.url}}}), encoding="utf-8")


def where(home: Path, workdir: Path) -> tuple[str, ...]:
    return ("--home", str(home), "--workdir", str(workdir), "--credentials", "file")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args), capture_output=True, text=True, timeout=60, check=False)


def approve_sync(authorization_url: str) -> str:
    response = httpx2.get(authorization_url)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def start_login(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``login``; return the process and the authorization URL it printed."""
    process = subprocess.Popen(
        cli("login", *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip().startswith("http"):
            return process, line.strip()
    raise AssertionError(f"login printed no URL; stderr: {process.communicate()[1]}")


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def test_a_server_that_needs_a_login_says_how_to_log_in(servers: OAuthServers, home: Path, tmp_path: Path) -> None:
    configure(home, servers)
    done = run("tools", "docs", *where(home, tmp_path))
    assert done.returncode == 1
    assert "needs a login" in done.stderr and "run: wave-actors login docs" in done.stderr
    listing = run("servers", *where(home, tmp_path))  # another process: it reads the record the refusal left
    [row] = [line for line in listing.stdout.splitlines() if line.startswith("docs")]
    assert "needs login: the server asks for an OAuth login" in row


def test_login_waits_for_the_browser_on_its_listener_then_servers_shows_the_login(
    servers: OAuthServers, home: Path, tmp_path: Path
) -> None:
    configure(home, servers)
    process, url = start_login("docs", "--no-browser", *where(home, tmp_path))
    callback = approve_sync(url)
    assert httpx2.get(callback).status_code == 200
    code, out, err = finish(process)
    assert code == 0, err
    assert "logged in to docs; the server is connected" in out
    listing = run("servers", *where(home, tmp_path))
    assert listing.returncode == 0
    [row] = [line for line in listing.stdout.splitlines() if line.startswith("docs")]
    assert "logged in (expires" in row
    document = json.loads(run("servers", "--json", *where(home, tmp_path)).stdout)
    [docs] = document["servers"]
    assert docs["login"]["state"] == "logged_in" and docs["login"]["refreshable"] is True


# A browser as the BROWSER variable names one: it follows the authorization server's redirect to the listener.
BROWSER = """
import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=30) as page:
    print(page.status, flush=True)
"""


def test_login_opens_the_browser_when_one_is_available(servers: OAuthServers, home: Path, tmp_path: Path) -> None:
    configure(home, servers)
    browser = tmp_path / "browser.py"
    browser.write_text(BROWSER, encoding="utf-8")
    done = subprocess.run(
        cli("login", "docs", *where(home, tmp_path)),
        env={**os.environ, "BROWSER": f"{sys.executable} {browser} %s"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Waiting for the browser to come back to http://127.0.0.1:" in done.stdout
    assert "logged in to docs; the server is connected" in done.stdout
    assert "200" in done.stdout  # the browser's own line: the listener answered it


# A browser that stays open after the page loaded, as a browser command started for the login can.
STAYING_BROWSER = """
import os
import sys
import threading
import urllib.request
from pathlib import Path

Path(sys.argv[2]).write_text(str(os.getpid()))
with urllib.request.urlopen(sys.argv[1], timeout=30) as page:
    pass
threading.Event().wait()
"""


def test_login_does_not_wait_for_a_browser_that_stays_open(servers: OAuthServers, home: Path, tmp_path: Path) -> None:
    configure(home, servers)
    browser, pid_file = tmp_path / "browser.py", tmp_path / "browser.pid"
    browser.write_text(STAYING_BROWSER, encoding="utf-8")
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    command: subprocess.Popen[bytes] | None = None
    try:
        # Files, not pipes: the browser keeps what it inherited open, and only the command's exit counts.
        with out.open("w") as stdout, err.open("w") as stderr:
            command = subprocess.Popen(
                cli("login", "docs", *where(home, tmp_path)),
                env={**os.environ, "BROWSER": f"{sys.executable} {browser} %s {pid_file}"},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
            assert command.wait(timeout=45) == 0, err.read_text()
        assert "logged in to docs; the server is connected" in out.read_text()
        assert psutil.pid_exists(int(pid_file.read_text()))  # the browser is still open; the command ended
    finally:
        if command is not None and command.poll() is None:
            command.kill()
            command.wait(timeout=10)
        if pid_file.exists() and psutil.pid_exists(int(pid_file.read_text())):
            browser_process = psutil.Process(int(pid_file.read_text()))
            browser_process.kill()
            browser_process.wait(timeout=10)


def test_login_manual_takes_the_pasted_url_and_logout_removes_the_login(
    servers: OAuthServers, home: Path, tmp_path: Path
) -> None:
    configure(home, servers)
    process, url = start_login("docs", "--manual", *where(home, tmp_path))
    assert process.stdin is not None
    process.stdin.write(approve_sync(url) + "\n")
    process.stdin.flush()
    code, out, err = finish(process)
    assert code == 0, err
    assert "Waiting for the browser" not in out  # nothing listens
    done = run("logout", "docs", *where(home, tmp_path))
    assert (done.returncode, done.stdout) == (0, "logged out of docs\n")
    assert run("logout", "docs", *where(home, tmp_path)).stdout == "docs had no login\n"
    [row] = [line for line in run("servers", *where(home, tmp_path)).stdout.splitlines() if line.startswith("docs")]
    assert "logged in" not in row


def test_login_of_a_stdio_server_is_a_usage_error(home: Path, tmp_path: Path) -> None:
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"local": {"command": "true"}}}), encoding="utf-8")
    done = run("login", "local", *where(home, tmp_path))
    assert done.returncode == 2 and "only remote servers log in" in done.stderr
