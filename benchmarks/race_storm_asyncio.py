"""race_storm_asyncio: the race storm driven from asyncio, through :mod:`wave_actors.asyncio` (R-AIO-1, R-AIO-2).

:mod:`benchmarks.race_storm` with ``--driver asyncio`` as the default, full and
``--quick``: the same slots hammer their sessions with every operation, as
asyncio tasks on an asyncio loop, each command crossing to the host's trio
thread and back. The invariants are the storm's, each with zero violations:
(a) one transport per actor, (b) no state change from a stale generation,
(c) a manual disconnect never undone (checked on the snapshots the face
mirrors to the loop); afterwards no process of the run is left.

``--ownership project`` or ``mixed`` storms project-mode sessions the same way.
"""

from __future__ import annotations

import sys

import attrs

from benchmarks import race_storm
from benchmarks.scenario import main

NAME = "race_storm_asyncio"

OPTIONS = tuple(
    attrs.evolve(option, full="asyncio", quick="asyncio") if option.name == "driver" else option
    for option in race_storm.OPTIONS
)

run = race_storm.run

if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
