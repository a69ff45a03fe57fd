"""An entry's ``shutdown`` over the transport options' graces (R-KILL-9)."""

from __future__ import annotations

from wave_actors import Graces, ShutdownGraces, TransportOptions
from wave_actors._transport.options import with_shutdown


def test_the_entry_graces_replace_only_what_they_set() -> None:
    # R-KILL-9: an entry's shutdown over the session's (or host's) graces; kill is never the entry's.
    options = TransportOptions(graces=Graces(eof=3.0, term=4.0, kill=5.0), stderr_lines=7)
    assert with_shutdown(options, ShutdownGraces()) is options
    assert with_shutdown(options, ShutdownGraces(eof_ms=0)).graces == Graces(eof=0.0, term=4.0, kill=5.0)
    assert with_shutdown(options, ShutdownGraces(term_ms=250)).graces == Graces(eof=3.0, term=0.25, kill=5.0)
    both = with_shutdown(options, ShutdownGraces(eof_ms=100, term_ms=200))
    assert (both.graces, both.stderr_lines) == (Graces(eof=0.1, term=0.2, kill=5.0), 7)
