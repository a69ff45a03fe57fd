"""What a default host would report is known without opening one (R-KILL-7).

``wave-actors servers`` prints it for the commands that dial, which open a
host with the defaults: the answer must be the one that host then gives.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from wave_actors import Host
from wave_actors._watchdog.guard import default_protection


async def test_a_host_opened_with_the_defaults_reports_the_default_protection(tmp_path: Path) -> None:
    expected = default_protection()
    assert (expected.watchdog_pid, expected.watchdog_replacements) == (None, 0)
    async with Host.open(home=tmp_path) as host:
        reported = host.orphan_protection()
    # The descriptors in use are the process's at each reading; the limit is the same.
    assert reported.file_descriptors is not None and expected.file_descriptors is not None
    assert reported.file_descriptors.soft_limit == expected.file_descriptors.soft_limit
    assert attrs.evolve(reported, watchdog_pid=None, file_descriptors=expected.file_descriptors) == expected
