"""OTP-style supervision of trio tasks.

A :class:`Supervisor` runs *children* (async callables described by a
:class:`ChildSpec`) as tasks it owns, restarts the ones that exit on their own
according to their :class:`Restart` type, a :class:`Backoff` delay and a
:class:`RestartIntensity` budget, stops them in reverse start order within a
deadline each, and publishes what happens as :class:`ChildEvent` objects.

Generic on purpose: nothing here knows about MCP or about ``wave_actors``
(SPEC.md R-SUP). Everything it times comes from ``trio.current_time()`` and
its jitter from an injectable ``random.Random``, so it runs deterministically
under ``trio.testing.MockClock``.

Only one-for-one supervision is provided: each child is restarted alone.
"""

from ._backoff import Backoff as Backoff
from ._errors import ChildAbandoned as ChildAbandoned
from ._errors import ChildNotStarted as ChildNotStarted
from ._errors import RestartIntensityExceeded as RestartIntensityExceeded
from ._errors import SupervisorError as SupervisorError
from ._errors import UnknownChild as UnknownChild
from ._events import ChildEvent as ChildEvent
from ._events import EventKind as EventKind
from ._events import EventSubscription as EventSubscription
from ._intensity import RestartIntensity as RestartIntensity
from ._spec import ChildContext as ChildContext
from ._spec import ChildSpec as ChildSpec
from ._spec import Restart as Restart
from ._status import ChildState as ChildState
from ._status import ChildStatus as ChildStatus
from ._supervisor import Supervisor as Supervisor
