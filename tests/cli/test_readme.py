"""The README's and the documentation's examples are real: each python block runs, and prints what its page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def embedding_example(text: str) -> str:
    """The multi-session embedding example; other sections have examples of their own, run by their tests."""
    [example] = [block for block in python_blocks(text) if "Host.open" in block and "open_session" in block]
    return example


def test_readme_has_an_embedding_example_using_the_public_api() -> None:
    example = embedding_example(README.read_text(encoding="utf-8"))

    for name in (
        "Host.open",
        "create_session",
        "prepare_turn",
        "tool_declarations(LoadMode.FULL)",
        "call_tool",
        "disconnect",
        "connect",
        "watch()",
        "destroy_session",
        "open_session",
    ):
        assert name in example, name


def run_example(tmp_path: Path, example: str) -> subprocess.CompletedProcess[str]:
    """Run an example as a script of its own, with an empty ``~/.wave``: the example's servers only."""
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )


def test_readme_example_runs(tmp_path: Path) -> None:
    completed = run_example(tmp_path, embedding_example(README.read_text(encoding="utf-8")))

    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    for session in ("chat-1", "chat-2"):
        assert f"{session}: echo is disconnected" in lines
        assert f"{session}: hello from {session}" in lines
        assert f"{session}: back again" in lines
        assert f"{session}: transcript saved" in lines
        # A tool the session listed whose server was disconnected is unavailable, not unknown (R-TOOL-6).
        assert any(line.startswith(f"{session}: ServerUnavailable:") and "disconnected" in line for line in lines)
        assert any(line.startswith(f"{session} v") and "echo=connected" in line for line in lines)
    assert "single: one session" in lines
    assert completed.stderr == ""


def page_blocks(page: str, language: str) -> list[str]:
    """The ``language`` blocks of the documentation page ``docs/{page}.md``."""
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def assert_page_prints_what_it_shows(tmp_path: Path, page: str, *names: str) -> str:
    """Run the python block of the documentation page ``page``: it uses ``names`` and prints exactly its text block."""
    [example] = page_blocks(page, "python")
    [expected] = page_blocks(page, "text")
    for name in names:
        assert name in example, name
    completed = run_example(tmp_path, example)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == expected
    assert completed.stderr == ""
    return expected


def test_docs_presenting_tools_example_prints_a_turn_in_each_load_mode(tmp_path: Path) -> None:
    # R-WS-1..4, R-APR-2: the example runs and prints exactly what its page shows.
    expected = assert_page_prints_what_it_shows(
        tmp_path,
        "presenting-tools",
        "LoadModeResolver",
        "tool_declarations(mode)",
        "working_set().render()",
        "approval_decision",
        "mode=mode",
    )
    assert "full, declares 6 tools" in expected and "working_set, declares 2 tools" in expected
    assert "error: mcp_call belongs to the MCP working-set mode" in expected  # R-WS-7


def test_docs_failure_notice_example_tells_each_failure_once(tmp_path: Path) -> None:
    # R-WS-8: told on the failed lazy dial, not repeated, told again after a retry that failed.
    expected = assert_page_prints_what_it_shows(tmp_path, "failure-notices", "failure_notices")
    assert expected.startswith("turn 1: broken\nturn 2: nothing new\nturn 3: broken\n")


def test_docs_instructions_example_prints_announce_nothing_offline(tmp_path: Path) -> None:
    # R-INS-2: the three-turn example runs and prints exactly what its page shows.
    assert_page_prints_what_it_shows(tmp_path, "instructions")


def test_docs_project_example_shares_one_process_between_two_sessions(tmp_path: Path) -> None:
    # R-SCOPE-1, R-SCOPE-2: the example runs and prints exactly what its page shows.
    assert_page_prints_what_it_shows(
        tmp_path,
        "project-scope",
        'ownership="project"',
        "ProjectOptions",
        "reconcile",
        "project_servers",
    )


def test_docs_trust_example_approves_trusts_and_catches_a_changed_entry(tmp_path: Path) -> None:
    # R-CFG-10: the example runs and prints exactly what its page shows.
    expected = assert_page_prints_what_it_shows(
        tmp_path, "trust", 'trust="approved"', "TrustStore", "store.approve", "store.trust", "reconcile"
    )
    assert "search: args changed since approval" in expected
