"""When the host process itself dies: no server family may outlive it (R-KILL-6, R-KILL-7).

Closing a host reclaims everything (R-KILL-1..5); this package covers the
host that never gets to close -- SIGKILL, a crash, the OOM killer, a stopped
host killed later -- and the signals a host can still act on:

- :mod:`.families`: every stdio server family the process runs, registered by
  the stdio transport from before its spawn until after its reclamation.
- :mod:`.program`: the watchdog, a stdlib-only process outside the host's
  tree that reclaims every registered family when its socket to the host
  reaches end of file; :mod:`.client` starts it, feeds it and replaces it.
- :mod:`.parent_death`: servers forked with ``PR_SET_PDEATHSIG``.
- :mod:`.subreaper`: the opt-in child-subreaper mode, and reaping adopted orphans.
- :mod:`.guard`: what ``Host.open(watchdog=..., subreaper=...)`` opens, and
  :class:`~wave_actors.OrphanProtection`, what it reports.
- :mod:`.signals`: :func:`~wave_actors.reclaim_on_signals`, for SIGTERM,
  SIGINT and SIGHUP.
- :mod:`.linux`: ``prctl`` and ``/proc``.

Linux only; elsewhere everything here is inactive and says so, and a host's
families are reclaimed when it closes, as before. Importing this package
imports nothing: modules are imported where they are used, since the stdio
transport needs :mod:`.families` while :mod:`wave_actors._transport` loads.
"""
