"""How long each stage of a family's reclamation waits: :class:`Graces` (R-KILL-2, R-KILL-9).

Part of the public options (``wave_actors.Graces``, in
``wave_actors.TransportOptions``); the stdio transport's reclamation
(:mod:`wave_actors._transport.reclamation`) runs its stages, and the family
registry (:mod:`.registry`) hands them to the watchdog, which caps them.
"""

from __future__ import annotations

import attrs

__all__ = ["Graces"]


@attrs.frozen
class Graces:
    """How long each reclamation stage waits before escalating (seconds).

    The defaults bound ``destroy_session`` at about 0.5 s for a server that
    ignores stdin EOF and about 1 s for one that ignores SIGTERM too. Measured
    on a 2-core Linux machine (python 3.11, node 20), from stdin EOF after
    ``initialize`` and ``tools/list`` to the exit, quiet machine / loaded by
    parallel test runs (load average 3 to 9):

    - a stdlib Python server (``wave_actors.testing.fault_server_entry()``):
      1.1-1.2 ms / p50 1.8-3.4 ms, max 32 ms;
    - node ``@modelcontextprotocol/server-everything`` (stdio): 12-20 ms once
      it has run for a second; 164-420 ms when closed 0.2 s after it started,
      330-490 ms right after ``initialize`` (a start-up timer keeps it alive);
    - the SDK's own Python server (``reference_server_entry()``): 114-242 ms /
      p50 310-760 ms, max 1.4 s. It stops serving within a millisecond; the
      rest is the interpreter tearing down its modules (a garbage collection
      alone takes ~110 ms).

    and from SIGTERM to the exit, stdin still open: 1-12 ms for all three.
    So the EOF grace lets a node server that has run for a second, and the
    SDK's server on a quiet machine, exit by themselves twice over; SIGTERM
    may cut short node closed right after its start, or the SDK's server on
    a loaded machine, which loses nothing: they have stopped serving. The
    TERM grace leaves a server with a SIGTERM handler half a second to clean
    up. Per server, an entry's ``shutdown`` sets its own (R-KILL-9).

    :param eof: after closing stdin, for the server to exit on its own.
    :param term: after SIGTERM, before SIGKILL.
    :param kill: after SIGKILL, for the kernel to finish; only an unkillable
        process (stuck in uninterruptible I/O) runs this out, and is then
        reported and abandoned.
    """

    eof: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    term: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    kill: float = attrs.field(default=2.0, validator=attrs.validators.ge(0))

    @property
    def total(self) -> float:
        """The longest reclamation can take, plus a little for scanning."""
        return self.eof + self.term + self.kill + 1.0
