"""When the host process itself dies: no server family may outlive it (R-KILL-6, R-KILL-7).

Closing a host reclaims everything (R-KILL-1..5); this package covers the
host that never gets to close -- SIGKILL, a crash, the OOM killer, a stopped
host killed later -- and the signals a host can still act on:

- :mod:`.program`: the watchdog, a stdlib-only process outside the host's
  tree that reclaims every registered family when its socket to the host
  reaches end of file; :mod:`.client` starts it, feeds it and replaces it.
- :mod:`.subreaper`: the opt-in child-subreaper mode, and reaping adopted orphans.
- :mod:`.guard`: what ``Host.open(watchdog=..., subreaper=...)`` opens, and
  :class:`~wave_actors.OrphanProtection`, what it reports.
- :mod:`.signals`: :func:`~wave_actors.reclaim_on_signals`, for SIGTERM,
  SIGINT and SIGHUP.

What it guards comes from the family leaf, :mod:`wave_actors._family`, which
the stdio transport reports to: the registry of live families, the tag,
``/proc`` and ``prctl``, and the parent-death signal servers are spawned
with. This package never imports :mod:`wave_actors._transport`, nor the
transport this one.

Linux only; elsewhere everything here is inactive and says so, and a host's
families are reclaimed when it closes, as before. Importing this package
imports nothing: modules are imported where they are used.
"""
