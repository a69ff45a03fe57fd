"""OTP-style supervision of trio tasks.

A :class:`Supervisor` runs *children* (async callables described by a
:class:`ChildSpec`) as tasks it owns, restarts the ones that exit on their own
according to their :class:`Restart` type, a :class:`Backoff` delay and a
:class:`RestartIntensity` budget, stops them in reverse start order within a
deadline each, and publishes what happens as :class:`ChildEvent` objects.

Generic on purpose: nothing here knows about MCP or about ``wave_actors``
(R-SUP in ``docs/requirements.md``). Everything it times comes from ``trio.current_time()`` and
its jitter from an injectable ``random.Random``, so it runs deterministically
under ``trio.testing.MockClock``.

A :class:`Strategy` chosen per supervisor decides which siblings a restart
takes along (one-for-one, one-for-all, rest-for-one), and an optional
supervisor-wide :class:`RestartIntensity` bounds the restarts of all children
together. ``supervisors/README.md`` maps all of it to Erlang/OTP.
"""

from ._backoff import Backoff as Backoff
from ._errors import (
    ChildAbandoned as ChildAbandoned,
    ChildNotStarted as ChildNotStarted,
    RestartIntensityExceeded as RestartIntensityExceeded,
    SiblingRestart as SiblingRestart,
    SupervisorError as SupervisorError,
    UnknownChild as UnknownChild,
)
from ._events import ChildEvent as ChildEvent, EventKind as EventKind, EventSubscription as EventSubscription
from ._intensity import RestartIntensity as RestartIntensity
from ._spec import ChildContext as ChildContext, ChildSpec as ChildSpec, Restart as Restart
from ._status import ChildState as ChildState, ChildStatus as ChildStatus
from ._strategy import Strategy as Strategy
from ._supervisor import Supervisor as Supervisor
