"""race_storm_project: the race storm with project-mode sessions, which share one connection per (workdir, server).

:mod:`benchmarks.race_storm` with ``--ownership project`` as the default, full
and ``--quick``: ``--sessions`` slots spread over ``--workdirs`` temporary
workdirs (default one per four sessions) create ``ownership="project"``
sessions and hammer them with every operation, while short idle timeouts
(``--idle-timeout``, default 0.2 s) close connections as new sessions attach.
Every slot of a workdir configures the same servers (its ``.mcp.json``), so a
connect, disconnect, crash or reconfigure of one slot changes what every
other slot of the workdir sees.

Invariants, each with zero violations (see :mod:`benchmarks.race_storm`):

(a) never two live processes for one (workdir, server);
(b) no state change from a stale generation;
(c) a manual disconnect, per project, never undone: every session of the
    workdir shows the server ``disconnected`` until a connect or disconnect of
    it is issued from any session of the workdir, or its connection is retired;

then, once every session is gone, the idle timers close every shared
connection, and after the host closes no process of the run is left.

``--ownership mixed`` puts session-owning slots in the same workdirs.
"""

from __future__ import annotations

import sys

import attrs

from benchmarks import race_storm
from benchmarks.scenario import main

NAME = "race_storm_project"

OPTIONS = tuple(
    attrs.evolve(option, full="project", quick="project") if option.name == "ownership" else option
    for option in race_storm.OPTIONS
)

run = race_storm.run

if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
