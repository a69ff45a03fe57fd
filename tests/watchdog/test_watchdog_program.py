"""The watchdog program starts with the standard library only (R-KILL-7).

It runs by path with ``python -I -S``: no site-packages, so nothing but the
standard library can be imported, and every millisecond of its start-up is a
moment its host's families are unguarded after a replacement. It reads
``/proc`` with the library's one reader, which it must load without the
package's ``__init__`` (that imports the whole runtime).
"""

from __future__ import annotations

import json
import subprocess
import sys

from wave_actors._watchdog.client import PROGRAM

# Runs the program's module code (not main(), which would detach and wait for a host).
LOADED = "import json, runpy, sys\nrunpy.run_path(sys.argv[1])\nprint(json.dumps(sorted(sys.modules)))\n"


def test_run_by_path_it_loads_the_standard_library_and_the_proc_reader_only() -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LOADED, str(PROGRAM)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    ours = [name for name in loaded if name.split(".")[0] == "wave_actors"]
    assert ours == ["wave_actors", "wave_actors._family", "wave_actors._family.procfs"]
    foreign = [
        name for name in loaded if name.split(".")[0] not in {*sys.stdlib_module_names, "wave_actors", "__main__"}
    ]
    assert foreign == []
