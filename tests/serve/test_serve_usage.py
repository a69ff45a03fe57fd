"""``wave-actors serve``'s command line: a mistake is one line naming the option, exit 2, and nothing starts (R-CLI)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from serve_support import serve_command, write_project


def run(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    workdir = write_project(tmp_path / "project", {})
    return subprocess.run(
        serve_command(workdir, tmp_path / "home", *options), capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (("--http", "8765"), "--http 8765"),
        (("--http", "127.0.0.1:http"), "port"),
        (("--http", "::1:8765"), "brackets"),
        (("--http", "127.0.0.1:0", "--token-file", "/nonexistent/token"), "--token-file"),
        (("--http", "127.0.0.1:0", "--session-idle", "0"), "--session-idle"),
        (("--token-file", "token"), "--http"),
        (("--mode", "everything"), "--mode"),
        (("--stdio", "--http", "127.0.0.1:0"), "--http"),
    ],
)
def test_a_bad_option_is_one_line_naming_it_with_exit_2(tmp_path: Path, options: tuple[str, ...], named: str) -> None:
    completed = run(tmp_path, *options)
    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("wave-actors") and named in line


@pytest.mark.parametrize(("content", "why"), [("", "empty"), ("two words", "spaces"), ("x" * 5000, "larger")])
def test_a_token_file_that_holds_no_single_token_is_refused(tmp_path: Path, content: str, why: str) -> None:
    token = tmp_path / "token"
    token.write_text(content)
    completed = run(tmp_path, "--http", "127.0.0.1:0", "--token-file", str(token))
    assert completed.returncode == 2
    assert why in completed.stderr and "serving" not in completed.stderr


def test_a_token_file_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    completed = run(tmp_path, "--http", "127.0.0.1:0", "--token-file", str(tmp_path))
    assert completed.returncode == 2
    assert "--token-file" in completed.stderr


def test_a_token_file_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    completed = run(tmp_path, "--http", "127.0.0.1:0", "--token-file", str(fifo))
    assert completed.returncode == 2
    assert "not a regular file" in completed.stderr
