"""A server actor's state machine, as a pure reducer (R-RACE-1..6, R-DIAL-1..6).

``reduce(state, message) -> (state, effects)`` decides everything about one
server's connection: whether a dial starts, which transport generation is
current, what a crash or a stale close means. It performs no I/O and knows no
trio, so every race rule is a plain unit test. :class:`~wave_actors._actor.actor.ServerActor`
feeds it messages one at a time (its mailbox) and carries out the effects.

Generations. Every transport attempt has a generation number: the incarnation
number the supervisor gave the transport task, which only ever grows. ``live``
is the generation whose events count; an event tagged with any other
generation is dropped (R-RACE-1). A disconnect clears ``live`` *before* the
transport is stopped, so the close it causes is stale and cannot trigger a
reconnect (R-RACE-3). A supervisor restart moves ``live`` to the next
incarnation as it is scheduled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from wave_actors._frozen import empty_mapping, freeze_mapping
from wave_actors._status import ServerState

__all__ = [
    "ActorState",
    "Connect",
    "DialFailed",
    "Disconnect",
    "Effect",
    "GaveUp",
    "Lost",
    "Message",
    "Reload",
    "Restarting",
    "Retire",
    "ServerTool",
    "StartTransport",
    "StartRefused",
    "Started",
    "StopTransport",
    "ToolsListed",
    "Up",
    "initial_state",
    "reduce",
]

_ACTIVE = frozenset({ServerState.CONNECTING, ServerState.CONNECTED, ServerState.RECONNECTING})


@attrs.frozen
class ServerTool:
    """A tool as its server lists it, before session-wide naming.

    :param name: the server's raw tool name.
    :param description: its description.
    :param input_schema: its input schema as sent (sanitized later, per declaration).
    :param read_only_hint: ``annotations.readOnlyHint`` (R-TOOL-7).
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=empty_mapping, converter=freeze_mapping)
    read_only_hint: bool = False


@attrs.frozen
class ActorState:
    """Everything the reducer knows about one server.

    :param state: the public state.
    :param generation: the newest generation ever started.
    :param live: the generation whose events count, ``None`` when none does.
    :param dialed: a dial was started in this session (lazy dial happens once, R-DIAL-2, R-DIAL-4).
    :param manually_disconnected: only an explicit connect may dial (R-DIAL-6).
    :param retiring: removed from the configuration; never dials again (R-STORE-5).
    :param error: the last failure.
    :param tools: the last live tool list, kept while reconnecting (R-RACE-4).
    :param instructions: from the last ``initialize`` (R-INS-1).
    :param last_connected: wall-clock time of the last successful connect.
    """

    state: ServerState
    generation: int = 0
    live: int | None = None
    dialed: bool = False
    manually_disconnected: bool = False
    retiring: bool = False
    error: str | None = None
    tools: tuple[ServerTool, ...] = ()
    instructions: str | None = None
    last_connected: float | None = None


_REGISTERED = ActorState(state=ServerState.DISCONNECTED)
_REGISTERED_DISABLED = ActorState(state=ServerState.DISABLED)


def initial_state(*, enabled: bool) -> ActorState:
    """A registered server: nothing dialed, nothing spawned (R-DIAL-1, R-CFG-6).

    States are frozen, so every registered server shares one of two instances.
    """
    return _REGISTERED if enabled else _REGISTERED_DISABLED


# Commands, from the session's API.


@attrs.frozen
class Connect:
    """Dial. ``explicit=False`` is a lazy dial from ``prepare_turn`` (R-DIAL-2); explicit ones always dial (R-DIAL-5)."""

    explicit: bool


@attrs.frozen
class Disconnect:
    """Stop the transport and stay down until an explicit connect (R-DIAL-6, R-RACE-3)."""


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
    """The handshake and the first tool listing succeeded."""

    generation: int
    tools: tuple[ServerTool, ...]
    instructions: str | None
    time: float


@attrs.frozen
class ToolsListed:
    """A refreshed tool list (after ``notifications/tools/list_changed``, R-RACE-7)."""

    generation: int
    tools: tuple[ServerTool, ...]


@attrs.frozen
class DialFailed:
    """A dial failed. ``final``: it was the first attempt of a connect, which is not retried (R-DIAL-4)."""

    generation: int
    reason: str
    final: bool


@attrs.frozen
class Lost:
    """An established connection ended by itself (R-RACE-4, R-RACE-5)."""

    generation: int
    reason: str


@attrs.frozen
class Restarting:
    """The supervisor will start the next generation after a backoff."""

    generation: int
    delay: float


@attrs.frozen
class GaveUp:
    """The reconnect budget is spent."""

    generation: int
    reason: str


Message = Connect | Disconnect | Retire | Reload | Started | StartRefused | Up | ToolsListed | DialFailed | Lost | Restarting | GaveUp


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

_NO_EFFECTS: tuple[Effect, ...] = ()


def reduce(state: ActorState, message: Message) -> tuple[ActorState, tuple[Effect, ...]]:
    """The next state and what to do, for one message.

    :param state: the current state.
    :param message: a command or a generation-tagged event.
    :returns: the new state (the same object when nothing changed) and the effects to carry out, in order.
    """
    match message:
        case Connect(explicit=explicit):
            return _connect(state, explicit)
        case Disconnect():
            if state.retiring or (state.state is ServerState.DISABLED and state.manually_disconnected):
                return state, _NO_EFFECTS
            if state.state is ServerState.DISABLED:
                # Nothing runs, but the disconnect still holds if the entry is enabled later (R-DIAL-6).
                return attrs.evolve(state, manually_disconnected=True), _NO_EFFECTS
            return (
                attrs.evolve(
                    state, state=ServerState.DISCONNECTED, live=None, manually_disconnected=True, error=None, tools=()
                ),
                (StopTransport(),),
            )
        case Retire():
            if state.retiring:
                return state, _NO_EFFECTS
            stopped = state.state if state.state is ServerState.DISABLED else ServerState.DISCONNECTED
            return (
                attrs.evolve(state, state=stopped, live=None, retiring=True, tools=()),
                (StopTransport(drain_calls=True),),
            )
        case Reload(enabled=enabled):
            return _reload(state, enabled)
        case StartRefused(reason=reason):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING) or state.live is not None:
                return state, _NO_EFFECTS
            return attrs.evolve(state, state=ServerState.ERROR, error=reason), _NO_EFFECTS
        case Started(generation=generation):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING):
                return state, _NO_EFFECTS
            return attrs.evolve(state, generation=generation, live=generation), _NO_EFFECTS
        case _:
            return _transport_event(state, message), _NO_EFFECTS


def _connect(state: ActorState, explicit: bool) -> tuple[ActorState, tuple[Effect, ...]]:
    if state.state is ServerState.DISABLED or state.retiring:
        return state, _NO_EFFECTS
    if not explicit and (state.dialed or state.manually_disconnected or state.state is not ServerState.DISCONNECTED):
        return state, _NO_EFFECTS
    if state.state in (ServerState.CONNECTED, ServerState.CONNECTING):
        return state, _NO_EFFECTS  # reused, never re-dialed (R-DIAL-3)
    return (
        attrs.evolve(
            state, state=ServerState.CONNECTING, live=None, dialed=True, manually_disconnected=False, error=None
        ),
        (StartTransport(),),
    )


def _reload(state: ActorState, enabled: bool) -> tuple[ActorState, tuple[Effect, ...]]:
    if state.retiring:
        return state, _NO_EFFECTS
    if not enabled:
        effects: tuple[Effect, ...] = (StopTransport(),) if state.state in _ACTIVE else _NO_EFFECTS
        return attrs.evolve(state, state=ServerState.DISABLED, live=None, error=None, tools=()), effects
    if state.state in _ACTIVE:
        # The same name, a different server: dial it in place of the old one.
        return (
            attrs.evolve(state, state=ServerState.CONNECTING, live=None, error=None, tools=(), instructions=None),
            (StartTransport(),),
        )
    # Not running: a changed entry is a new server, eligible for the next lazy dial.
    return (
        attrs.evolve(
            state, state=ServerState.DISCONNECTED, dialed=False, error=None, tools=(), instructions=None
        ),
        _NO_EFFECTS,
    )


def _transport_event(state: ActorState, event: Message) -> ActorState:
    generation = getattr(event, "generation", None)
    if generation is None or generation != state.live:
        return state  # stale: an older (or never current) generation (R-RACE-1)
    match event:
        case Up(tools=tools, instructions=instructions, time=time):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING):
                return state
            return attrs.evolve(
                state,
                state=ServerState.CONNECTED,
                error=None,
                tools=tools,
                instructions=instructions,
                last_connected=time,
            )
        case ToolsListed(tools=tools):
            if state.state is not ServerState.CONNECTED:
                return state
            return attrs.evolve(state, tools=tools)
        case DialFailed(reason=reason, final=True):
            return attrs.evolve(state, state=ServerState.ERROR, live=None, error=reason)
        case DialFailed(reason=reason):
            return attrs.evolve(state, state=ServerState.RECONNECTING, error=reason)
        case Lost(reason=reason):
            if state.state is not ServerState.CONNECTED:
                return state
            return attrs.evolve(state, state=ServerState.RECONNECTING, error=reason)
        case Restarting():
            # The supervisor numbers incarnations one by one: the restart is generation + 1.
            return attrs.evolve(state, state=ServerState.RECONNECTING, live=generation + 1, generation=generation + 1)
        case GaveUp(reason=reason):
            return attrs.evolve(
                state, state=ServerState.ERROR, live=None, error=f"{reason} (gave up reconnecting)", tools=()
            )
        case _:
            return state
