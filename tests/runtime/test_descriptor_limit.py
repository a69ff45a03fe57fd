"""A host out of file descriptors: the dial that found none left fails clearly, the others carry on.

The limit is lowered for real (``RLIMIT_NOFILE`` in a host process of its
own, :mod:`descriptor_limit_program`), so what is checked is what a host
meets, not a simulated ``OSError``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wave_actors import FileDescriptors, Host, SessionOptions

PROGRAM = Path(__file__).with_name("descriptor_limit_program.py")
LIMIT = 64


def test_a_dial_past_the_descriptor_limit_names_the_limit_and_the_others_carry_on() -> None:
    # R-HOST-4: one server that cannot start is that server's error, worded for the host's operator.
    done = subprocess.run(
        [sys.executable, str(PROGRAM), str(LIMIT)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["headroom_at_start"]["soft_limit"] == LIMIT
    assert found["connected"] >= 3  # a few servers fit in 64 descriptors before the limit
    for error in [found["lazy_error"], *found["explicit_errors"]]:
        assert "run out of file descriptors" in error
        assert f"its limit is {LIMIT}" in error and "in use" in error
        assert "ulimit -n" in error and "RLIMIT_NOFILE" in error
        assert "Too many open files" not in error
    assert len(found["explicit_errors"]) == 5
    assert found["held_only_after_failed_dials"] == []  # a failed dial holds no descriptor (no pipe left open)
    in_use_before, in_use_after = found["in_use_before_and_after_failed_dials"]
    assert abs(in_use_before - in_use_after) <= 2  # the count the host shows: give or take the primer's reads
    assert found["others_answer"] is True
    assert found["after_ending_two"] == "connected"  # ending sessions gives the room back


async def test_the_host_reports_its_descriptors_and_their_limit(tmp_path: Path, options: SessionOptions) -> None:
    async with Host.open(home=tmp_path, options=options, watchdog=False) as host:
        usage = host.orphan_protection().file_descriptors
    assert isinstance(usage, FileDescriptors)
    assert usage.in_use is not None and usage.in_use > 0
    assert usage.soft_limit is None or usage.headroom == usage.soft_limit - usage.in_use
    assert usage.stdio_servers_left is None or usage.stdio_servers_left == (usage.headroom or 0) // 6
