"""Settings for how a session dials and keeps its servers."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from supervisors import Backoff, RestartIntensity
from wave_actors._auth.credentials import Credentials
from wave_actors._observation import Transition
from wave_actors._tools.schema import DEFAULT_DROPPED_KEYWORDS
from wave_actors._transport import TransportOptions

__all__ = ["ProjectOptions", "SessionOptions"]


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a finite number of seconds, not {value!r}")


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
        tests and audits. It must not block; an exception it raises is logged
        and ignored.
    :param credentials: where remote servers' OAuth logins are kept (R-AUTH-3);
        ``None``: the host's, which :meth:`Host.open <wave_actors.Host.open>` and
        :func:`~wave_actors.open_session` make from their ``credentials``
        argument (the system keyring by default).
    """

    dial_timeout: float = 30.0
    transport: TransportOptions = TransportOptions()
    reconnect_backoff: Backoff = Backoff(initial=0.5, multiplier=2.0, maximum=30.0, jitter=0.2, reset_after=30.0)
    reconnect_intensity: RestartIntensity = RestartIntensity(max_restarts=5, period=120.0)
    seed: int | None = None
    dropped_schema_keywords: frozenset[str] = DEFAULT_DROPPED_KEYWORDS
    transition_observer: Callable[[Transition], None] | None = None
    credentials: Credentials | None = None


@attrs.frozen
class ProjectOptions:
    """How a host keeps the connections its projects' sessions share (``ownership="project"``, R-SCOPE).

    :param idle_timeout: seconds a shared connection stays open after the last
        session using it let go; ``0`` never closes it (until the host closes,
        or the configuration drops it) (R-SCOPE-2).
    :param ready_budget: seconds ``prepare_turn`` waits for the project's
        connections that are still connecting; ``0`` does not wait. Running out
        never fails the session or the turn: the server shows ``connecting``
        and its tools come with a later turn (R-SCOPE-4).
    :param dead_after: a shared connection that has been connected this many
        seconds with no tool at all counts as dead, like one in ``error``: the
        next session that attaches rebuilds it.
    """

    idle_timeout: float = attrs.field(default=300.0, validator=[attrs.validators.ge(0), _finite])
    ready_budget: float = attrs.field(default=5.0, validator=[attrs.validators.ge(0), _finite])
    dead_after: float = attrs.field(default=5.0, validator=[attrs.validators.ge(0), _finite])
