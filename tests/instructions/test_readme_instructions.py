"""The README's server-instructions example is real: it runs, and prints what the README says it prints (R-INS-2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Server instructions in the conversation\n"


def section_blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def test_readme_instructions_example_prints_announce_nothing_offline(tmp_path: Path) -> None:
    [example] = section_blocks("python")
    [expected] = section_blocks("text")
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")

    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},  # ~/.wave is empty: the example's server only
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == expected
    assert completed.stderr == ""
