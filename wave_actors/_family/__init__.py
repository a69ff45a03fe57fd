"""A stdio server's process family: the leaf that the transport and the watchdog share (R-KILL-1, R-KILL-7).

The transport (:mod:`wave_actors._transport`) spawns and reclaims families;
the watchdog (:mod:`wave_actors._watchdog`) guards them against the host's
death. Neither imports the other: what both need about a family lives here,
and imports nothing of wave-actors above it.

- :mod:`.tag`: :data:`~.tag.FAMILY_VARIABLE`, the mark every member carries.
- :mod:`.graces`: :class:`~.graces.Graces`, how long each reclamation stage waits.
- :mod:`.procfs`: the one reader of ``/proc`` (a process's ``stat``, its
  environment, its children).
- :mod:`.prctl`: the ``prctl`` call.
- :mod:`.system_program`: the programs a spawn runs besides the server
  (``setpriv``, ``sh``), found only among the system's own.
- :mod:`.parent_death`: the parent-death signal a server asks for, and how.
- :mod:`.cgroup`: a cgroup of its own for each family, where the host may
  make them, ended with ``cgroup.kill``.
- :mod:`.registry`: every family the process runs, told to its guards.
- :mod:`.descriptors`: the process's file descriptors, their limit, and the words for running out.

Importing this package imports nothing: the watchdog program, which runs
with the standard library only, loads :mod:`.procfs` through it.
"""
