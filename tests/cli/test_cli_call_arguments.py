"""``call --args`` refuses, before dialing, exactly what the library would refuse to send (R-CLI, R-TOOL-9).

The library sends arguments nested at most 192 levels (the arguments object
is level 1) and no lone surrogate; the command must refuse the same values
with one line and exit 2, never let them through to a traceback after the dial.
"""

from __future__ import annotations

from cli_support import RunCli

LIBRARY_MAX_DEPTH = 192  # R-TOOL-9


def nested(levels: int) -> str:
    """An arguments object nested ``levels`` deep, counted as the library counts (the object itself is 1)."""
    return '{"text": "deep", "a": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


def test_arguments_one_level_past_the_librarys_limit_exit_2_in_one_line(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", nested(LIBRARY_MAX_DEPTH + 1))

    assert completed.returncode == 2, completed.stderr
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line == f"wave-actors: error: --args nests deeper than the {LIBRARY_MAX_DEPTH} levels a tool call can carry"


def test_arguments_at_the_librarys_limit_are_sent(run_cli: RunCli) -> None:
    completed = run_cli("call", "echo", "echo", "--args", nested(LIBRARY_MAX_DEPTH))

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "deep\n"


def test_a_lone_surrogate_in_arguments_exits_2_in_one_line(run_cli: RunCli) -> None:
    # JSON's \udcff escape parses to a lone surrogate, which JSON text cannot carry: the library refuses it.
    completed = run_cli("call", "echo", "echo", "--args", '{"text": "\\udcff"}')

    assert completed.returncode == 2, completed.stderr
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith("wave-actors: error: --args: ") and "lone surrogate" in line and "['text']" in line, line
