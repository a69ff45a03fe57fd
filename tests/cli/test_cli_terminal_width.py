"""Tables fit the terminal: a long description or error is cut to its width, never a pipe's output (R-CLI).

The width is ``COLUMNS`` when set, else the terminal's own; what goes to a
file or a pipe stays whole, whatever ``COLUMNS`` says, so that scripts and
``grep`` read every word.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import RunCli, cli_command, run_on_terminal

# The fault server's notify_list_changed tool has a description of 140 characters.
LONG = "Optionally add an echo-like tool named add_tool and withdraw the tool named remove_tool"


@pytest.mark.parametrize(("env", "columns"), [({"COLUMNS": "100"}, 0), ({}, 100)], ids=["COLUMNS", "terminal-size"])
def test_tools_cuts_long_descriptions_to_the_terminal_width(
    workdir: Path, home: Path, env: dict[str, str], columns: int
) -> None:
    argv = [*cli_command("tools", "echo"), "--home", str(home)]

    code, terminal, stderr = run_on_terminal(argv, terminal="stdout", cwd=workdir, env=env, columns=columns)

    assert code == 0, stderr
    lines = terminal.splitlines()
    assert lines[0].startswith("TOOL") and len(lines) > 5
    assert max(len(line) for line in lines) <= 100
    [cut] = [line for line in lines if line.startswith("notify_list_changed")]
    assert cut.endswith("…") and len(cut) == 100


def test_a_pipe_gets_whole_descriptions_whatever_columns_says(run_cli: RunCli) -> None:
    completed = run_cli("tools", "echo", env={"COLUMNS": "60"})

    assert completed.returncode == 0, completed.stderr
    assert LONG in completed.stdout and "…" not in completed.stdout
