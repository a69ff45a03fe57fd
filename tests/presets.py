"""The options tests run with: one preset per layer.

:data:`FAST_TRANSPORT` for tests of one connection (``open_connection``) and
:data:`FAST_SESSION`, built on it, for tests of sessions and hosts. Both keep
the library's behaviour and shorten only what makes a failing test slow:
reclamation graces, the dial timeout, reconnect backoffs and budgets. A test
that needs something else derives it from these with ``attrs.evolve`` and
says why beside it.
"""

from __future__ import annotations

from typing import Final

from supervisors import Backoff, RestartIntensity
from wave_actors import Graces, SessionOptions, TransportOptions

FAST_TRANSPORT: Final = TransportOptions(graces=Graces(eof=0.5, term=0.5, kill=1.0))
"""Half a second after stdin EOF, half a second after SIGTERM: a server that will not stop shows fast."""

FAST_SESSION: Final = SessionOptions(
    dial_timeout=10.0,
    transport=FAST_TRANSPORT,
    reconnect_backoff=Backoff(initial=0.05, multiplier=2.0, maximum=0.2, jitter=0.0, reset_after=5.0),
    reconnect_intensity=RestartIntensity(max_restarts=3, period=30.0),
    seed=7,
)
"""Short graces and backoffs, so that failures show fast; a crash loop gives up after three restarts."""
