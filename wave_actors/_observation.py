"""What an observer of the servers' state machines is shown: one :class:`Transition` per message handled.

Public records, below the state machine that makes them
(:func:`wave_actors._actor.machine.describe_transition`) and the options that
take the observer (:attr:`SessionOptions.transition_observer
<wave_actors.SessionOptions.transition_observer>`). The kinds of messages and
effects are enums of their own, so an observer never depends on the names of
private classes.
"""

from __future__ import annotations

import enum

import attrs

from wave_actors._status import ServerState

__all__ = ["EffectKind", "MessageKind", "Transition"]


class MessageKind(str, enum.Enum):
    """The kind of message a server's state machine handled.

    Commands come from the session's API; the others are reported by a
    transport generation or its supervisor, tagged with that generation.
    """

    CONNECT = "connect"
    """A dial: lazy (``prepare_turn``, R-DIAL-2) or explicit (``connect``, R-DIAL-5)."""
    DISCONNECT = "disconnect"
    """A manual disconnect (R-DIAL-6)."""
    RECONNECT = "reconnect"
    """A new generation now, with the current entry."""
    RETIRE = "retire"
    """The server left the configuration (R-STORE-5)."""
    RELOAD = "reload"
    """The server's entry changed in place."""
    STARTED = "started"
    """A transport generation was started by a command's effect."""
    START_REFUSED = "start_refused"
    """The previous transport would not stop, so no new one was started."""
    UP = "up"
    """A generation's handshake and first tool listing succeeded."""
    TOOLS_LISTED = "tools_listed"
    """A refreshed tool list (R-RACE-7)."""
    DIAL_FAILED = "dial_failed"
    """A generation's dial failed."""
    LOST = "lost"
    """An established connection ended by itself (R-RACE-4)."""
    LOGIN_NEEDED = "login_needed"
    """A generation's dial was refused for want of an OAuth login (R-AUTH-2)."""
    LOGGED_IN = "logged_in"
    """A login of the server was stored: one that waits for it dials again (R-AUTH-2)."""
    RESTARTING = "restarting"
    """The supervisor restarts the transport after a backoff."""
    GAVE_UP = "gave_up"
    """The reconnect budget is spent."""


class EffectKind(str, enum.Enum):
    """What a message asked the server's actor to do."""

    START_TRANSPORT = "start_transport"
    """Stop any transport, wait for its reclamation, start a new generation (R-RACE-6)."""
    STOP_TRANSPORT = "stop_transport"
    """Stop the transport and wait for its reclamation."""


@attrs.frozen
class Transition:
    """One message one server's state machine handled, for observers (tests, audits, race storms).

    Handed to :attr:`SessionOptions.transition_observer <wave_actors.SessionOptions.transition_observer>`
    synchronously, in order, for every message of every server of the session,
    stale ones included.

    :param server: the server's name.
    :param message: the message's kind.
    :param explicit: for :attr:`MessageKind.CONNECT`: whether it was an explicit connect (R-DIAL-5).
    :param generation: the generation a transport event is tagged with (``None`` for commands).
    :param stale: a transport event of a generation that is not live: dropped (R-RACE-1).
    :param state_before: the server's state before the message.
    :param state_after: its state after it.
    :param live_before: the live generation before the message.
    :param live_after: the live generation after it.
    :param manually_disconnected_before: a manual disconnect held before the message (R-DIAL-6).
    :param changed: the message changed anything at all.
    :param effects: the effects it asked for, in order.
    """

    server: str
    message: MessageKind
    explicit: bool
    generation: int | None
    stale: bool
    state_before: ServerState
    state_after: ServerState
    live_before: int | None
    live_after: int | None
    manually_disconnected_before: bool
    changed: bool
    effects: tuple[EffectKind, ...]
