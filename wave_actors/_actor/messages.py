"""What a server actor's state machine handles and asks for: commands, generation-tagged events, effects.

The vocabulary of :mod:`wave_actors._actor.machine`: frozen records, no
rules. Commands come from the session's API and its roster (a
reconfigure plan, a project's attach), events from a transport generation
(:mod:`wave_actors._actor.transport_task`) or its supervisor, and effects are
what :func:`~wave_actors._actor.machine.reduce` asks the actor
(:mod:`wave_actors._actor.actor`) to carry out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from wave_actors._listing import ServerTool

if TYPE_CHECKING:
    from wave_actors._transport import Connection

__all__ = [
    "Command",
    "Connect",
    "DialFailed",
    "Disconnect",
    "Effect",
    "GaveUp",
    "LoggedIn",
    "LoginNeeded",
    "Lost",
    "Message",
    "Reconnect",
    "Reload",
    "Restarting",
    "Retire",
    "StartRefused",
    "StartTransport",
    "Started",
    "StopTransport",
    "ToolsListed",
    "TransportEvent",
    "Up",
]


# Commands, from the session's API and its roster.


@attrs.frozen
class Connect:
    """Dial. ``explicit=False`` is a lazy dial from ``prepare_turn`` (R-DIAL-2); explicit ones always dial (R-DIAL-5)."""

    explicit: bool


@attrs.frozen
class Disconnect:
    """Stop the transport and stay down until an explicit connect (R-DIAL-6, R-RACE-3)."""


@attrs.frozen
class Reconnect:
    """Tear the connection down and dial again now, with the current entry: a new generation.

    Not a manual disconnect (nothing is held down, and a manual disconnect is
    lifted as by an explicit connect); never two transports at once (the old
    one is stopped and reclaimed before the new one starts, R-RACE-6).
    """


@attrs.frozen
class LoggedIn:
    """A login of the server was stored: if it waits for one (``needs_login``), dial it again (R-AUTH-2)."""


@attrs.frozen
class Retire:
    """The server left the configuration: stop for good (R-STORE-5)."""


@attrs.frozen
class Reload:
    """The server's configuration changed in place (new fingerprint or ``enabled``)."""

    enabled: bool


# Events, from the transport task and its supervisor; all tagged with a generation.


@attrs.frozen
class Started:
    """A transport incarnation was started by a command's effect."""

    generation: int


@attrs.frozen
class StartRefused:
    """The supervisor refused to start a transport (the previous one would not stop)."""

    reason: str


@attrs.frozen
class Up:
    """The handshake and the first tool listing succeeded.

    :param connection: the live connection, for the executor (calls run on
        it); the reducer never looks at it.
    :param warnings: the tools the listing skipped, and why (R-TOOL-9).
    :param server_purpose: ``serverInfo``'s description, else its title.
    :param fingerprint: the fingerprint of the entry this connection was
        dialed with (R-CFG-8): what a call that expects one is checked against (R-TOOL-11).
    """

    generation: int
    tools: tuple[ServerTool, ...]
    instructions: str | None
    time: float
    connection: Connection | None = attrs.field(default=None, eq=False, repr=False)
    warnings: tuple[str, ...] = ()
    server_purpose: str | None = None
    fingerprint: str = ""


@attrs.frozen
class ToolsListed:
    """A refreshed tool list (after ``notifications/tools/list_changed``, R-RACE-7, or ``refresh_tools``).

    With what the listing skipped (R-TOOL-9).
    """

    generation: int
    tools: tuple[ServerTool, ...]
    warnings: tuple[str, ...] = ()


@attrs.frozen
class DialFailed:
    """A dial failed; :func:`~wave_actors._actor.machine.failure_retried` says whether it is retried (R-DIAL-4)."""

    generation: int
    reason: str


@attrs.frozen
class Lost:
    """An established connection ended by itself (R-RACE-4, R-RACE-5)."""

    generation: int
    reason: str


@attrs.frozen
class LoginNeeded:
    """A dial was refused because the server asks for an OAuth login; it is not retried (R-AUTH-2)."""

    generation: int
    reason: str


@attrs.frozen
class Restarting:
    """Generation ``generation`` ended; the supervisor starts ``next_generation`` after ``delay`` seconds."""

    generation: int
    delay: float
    next_generation: int


@attrs.frozen
class GaveUp:
    """The reconnect budget is spent."""

    generation: int
    reason: str


Command = Connect | Disconnect | Reconnect | Retire | Reload | LoggedIn
"""What the session, or its roster, asks of a server."""

TransportEvent = Up | ToolsListed | DialFailed | LoginNeeded | Lost | Restarting | GaveUp
"""What a transport generation, or its supervisor, reports; stale unless its generation is live (R-RACE-1)."""

Message = Command | Started | StartRefused | TransportEvent


@attrs.frozen
class StartTransport:
    """Stop any transport of this actor and wait for its reclamation, then start a new generation.

    The executor reports the new generation back as :class:`Started`.
    """


@attrs.frozen
class StopTransport:
    """Stop the transport and wait for its reclamation.

    :param drain_calls: first let accepted calls finish (bounded by their deadline).
    """

    drain_calls: bool = False


Effect = StartTransport | StopTransport
