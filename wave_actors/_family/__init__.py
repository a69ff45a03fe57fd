"""A stdio server's process family: the leaf that the transport and the watchdog share (R-KILL-1, R-KILL-7).

The transport (:mod:`wave_actors._transport`) spawns and reclaims families;
the watchdog (:mod:`wave_actors._watchdog`) guards them against the host's
death. What both need about a family lives here, and imports nothing of
wave-actors above it.

- :mod:`.procfs`: the one reader of ``/proc`` (a process's ``stat``, its
  environment, its children).

Importing this package imports nothing: the watchdog program, which runs
with the standard library only, loads :mod:`.procfs` through it.
"""
