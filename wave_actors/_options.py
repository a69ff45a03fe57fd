"""Settings for how a session dials and keeps its servers."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from supervisors import Backoff, RestartIntensity
from wave_actors._actor.machine import Transition
from wave_actors._tools.schema import DEFAULT_DROPPED_KEYWORDS
from wave_actors._transport import TransportOptions

__all__ = ["SessionOptions"]


@attrs.frozen
class SessionOptions:
    """How every server of a session is dialed and kept up.

    :param dial_timeout: seconds a dial (spawn, handshake, first tool listing) may take.
    :param transport: transport settings, reclamation graces included.
    :param reconnect_backoff: delays between reconnect attempts after a loss (R-RACE-4).
    :param reconnect_intensity: the reconnect budget; past it the server turns ``error``.
    :param seed: seeds the backoff jitter (``None``: unpredictable).
    :param dropped_schema_keywords: JSON Schema keywords stripped from declared
        input schemas (R-TOOL-2).
    :param transition_observer: called synchronously with a :class:`~wave_actors.Transition`
        for every message any server's state machine handles, in order; for
        tests and audits. It must not block or raise (an exception propagates
        into the server's task).
    """

    dial_timeout: float = 30.0
    transport: TransportOptions = TransportOptions()
    reconnect_backoff: Backoff = Backoff(initial=0.5, multiplier=2.0, maximum=30.0, jitter=0.2, reset_after=30.0)
    reconnect_intensity: RestartIntensity = RestartIntensity(max_restarts=5, period=120.0)
    seed: int | None = None
    dropped_schema_keywords: frozenset[str] = DEFAULT_DROPPED_KEYWORDS
    transition_observer: Callable[[Transition], None] | None = None
