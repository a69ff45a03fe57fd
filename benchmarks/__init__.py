"""Benchmarks for wave-actors: overhead, dial concurrency, idle cost, race storms, reclamation.

Run them all with ``python -m benchmarks`` (what ``make bench`` does; about
ten minutes on a 2-core machine) or ``python -m benchmarks --quick`` (a
smoke run well under a minute). Each scenario also runs alone::

    python -m benchmarks.asyncio_face [--quick] [--calls N] [--rounds N] [--loops asyncio,uvloop]
    python -m benchmarks.call_overhead [--quick] [--calls N] [--rounds N] ...
    python -m benchmarks.connected_scale [--quick] [--servers N] [--runs N]
    python -m benchmarks.dial
    python -m benchmarks.first_turn [--quick] [--rounds N] [--pause SECONDS]
    python -m benchmarks.host_death
    python -m benchmarks.idle_scale
    python -m benchmarks.project_scale [--quick] [--sessions N]
    python -m benchmarks.race_storm [--duration SECONDS]
    python -m benchmarks.race_storm_project [--duration SECONDS]
    python -m benchmarks.race_storm_asyncio [--duration SECONDS]
    python -m benchmarks.reclaim_latency
    python -m benchmarks.reference
    python -m benchmarks.scale [--quick] [--steps 10,100,1000] [--samples N] [--live-servers N]
    python -m benchmarks.serve_overhead [--quick] [--calls N] [--rounds N]
    python -m benchmarks.soak [--quick] [--duration SECONDS] [--sample-every SECONDS]
    python -m benchmarks.tool_cache [--quick] [--projects N] [--tools N]
    python -m benchmarks.working_set

The soak (:mod:`benchmarks.soak`, an hour) is not among them: ``python -m
benchmarks --soak`` (``make soak``) runs it alone.

Every scenario prints its tables, writes ``benchmarks/results/<scenario>.json``
(raw samples included) and shows a one-line progress display on stderr.
Numbers are medians of repeated runs; a comparison is always a ratio of two
sides measured in the same run, interleaved, so that load from other
processes on the machine falls on both sides alike.

Every process a benchmark starts inherits :data:`benchmarks.processes.RUN_VARIABLE`
from the benchmark's environment, so whatever a scenario leaves behind can be
attributed to this run (and only to it) and killed at the end.
"""

from __future__ import annotations

SCENARIOS: tuple[str, ...] = (
    "asyncio_face",
    "call_overhead",
    "connected_scale",
    "dial",
    "first_turn",
    "host_death",
    "idle_scale",
    "project_scale",
    "race_storm",
    "race_storm_project",
    "race_storm_asyncio",
    "reclaim_latency",
    "reference",
    "scale",
    "serve_overhead",
    "tool_cache",
    "working_set",
)
"""Scenario modules, in the order ``python -m benchmarks`` runs them."""
