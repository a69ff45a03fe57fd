"""A server actor's state machine, as a pure reducer (R-RACE-1..6, R-DIAL-1..6).

``reduce(state, message) -> (state, effects)`` decides everything about one
server's connection: whether a dial starts, which transport generation is
current, what a crash or a stale close means. It performs no I/O and knows no
trio, so every race rule is a plain unit test. :class:`~wave_actors._actor.actor.ServerActor`
feeds it messages one at a time (its mailbox) and carries out the effects;
the messages and effects themselves are :mod:`wave_actors._actor.messages`.

Generations. Every transport attempt has a generation number, which only
ever grows; the executor chooses the numbers (it uses the supervisor's
incarnations) and tells the reducer with :class:`~wave_actors._actor.messages.Started` and
:class:`~wave_actors._actor.messages.Restarting`. ``live`` is the generation whose events count; an event
tagged with any other generation is dropped (R-RACE-1). A disconnect clears
``live`` *before* the transport is stopped, so the close it causes is stale
and cannot trigger a reconnect (R-RACE-3). A reconnect clears it the same
way before the next generation starts. A supervisor restart moves
``live`` to the generation it announces, as it is scheduled.

Retries. Whether a failure is retried is decided here too: a dial that a
command started (``connecting``) is final, an established connection that is
lost and every attempt while ``reconnecting`` are restarted
(:func:`failure_retried`, R-DIAL-4, R-RACE-4). The transport task asks that
predicate when it fails, so it returns (no restart) or raises (the
supervisor restarts it, with backoff, while the budget lasts); the reducer
reaches the same verdict when the failure's event arrives. Only the budget
itself is counted by the supervisor; spending it is
:class:`~wave_actors._actor.messages.GaveUp`.

Logins. A dial the server refuses for want of an OAuth login
(:class:`~wave_actors._actor.messages.LoginNeeded`, from a first dial or a
reconnect) leaves the server ``needs_login`` and is never retried: the
transport task returns, the supervisor does not restart it. A login of the
server (:class:`~wave_actors._actor.messages.LoggedIn`) dials it again, unless
a manual disconnect holds (R-AUTH-2).

Known tools. ``listed`` is what the newest live listing of the server said,
kept while the connection is down, and ``withdrawn`` what an earlier listing
had and a later one lacks. Both change only where a listing arrives, so a
call by a name the server listed, made while it is down, is told the server
is unavailable, and a call by a name it withdrew is refused, whatever anyone
looked at before (R-TOOL-1, R-CACHE-2). ``withdrawn`` keeps at most
:data:`WITHDRAWN_KEPT` names, the newest withdrawals first: a server that
renames its tools at every listing cannot grow the host (a name forgotten is
then unknown, still refused before anything is sent).

Besides :func:`reduce`, predicates say what the executor and the session do
between messages: :func:`lazy_dial_due` (whether ``prepare_turn`` dials this
server), :func:`settled` (when a command's caller is released; until then
the server is still connecting), :func:`failure_retried`, :func:`finished`
(when the actor's task ends) and :func:`dead` (a shared connection to
rebuild). They are rules about the state, so they live here too.
"""

from __future__ import annotations

from typing import Final

import attrs

from wave_actors._actor.messages import (
    Connect,
    DialFailed,
    Disconnect,
    Effect,
    GaveUp,
    LoggedIn,
    LoginNeeded,
    Lost,
    Message,
    Reconnect,
    Reload,
    Restarting,
    Retire,
    Started,
    StartRefused,
    StartTransport,
    StopTransport,
    ToolsListed,
    TransportEvent,
    Up,
)
from wave_actors._listing import ServerTool
from wave_actors._observation import EffectKind, MessageKind, Transition
from wave_actors._status import ServerState

WITHDRAWN_KEPT: Final = 256
"""The most withdrawn tool names an actor remembers; the names a listing withdrew last are kept first."""

__all__ = [
    "ActorState",
    "dead",
    "describe_transition",
    "failure_retried",
    "finished",
    "initial_state",
    "lazy_dial_due",
    "reduce",
    "settled",
]

_ACTIVE = frozenset({ServerState.CONNECTING, ServerState.CONNECTED, ServerState.RECONNECTING})


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
    :param warnings: what that listing skipped, and why (R-TOOL-9); kept and cleared with ``tools``.
    :param listed: the raw names of the newest live listing, kept when ``tools``
        is cleared (a disconnect, a failure): a call by one of them while the
        server is down is unavailable, not unknown. Changed only by a listing.
    :param withdrawn: raw names an earlier listing had and a later one lacks:
        a call by one of them is refused before anything is sent.
    :param instructions: from the last ``initialize`` (R-INS-1).
    :param server_purpose: what the server says it is for, from the last
        ``initialize`` (``serverInfo``'s description, else its title).
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
    warnings: tuple[str, ...] = ()
    instructions: str | None = None
    server_purpose: str | None = None
    last_connected: float | None = None
    listed: frozenset[str] = frozenset()
    withdrawn: frozenset[str] = frozenset()


_NO_NAMES: frozenset[str] = frozenset()
_REGISTERED = ActorState(state=ServerState.DISCONNECTED)
_REGISTERED_DISABLED = ActorState(state=ServerState.DISABLED)


def initial_state(*, enabled: bool) -> ActorState:
    """A registered server: nothing dialed, nothing spawned (R-DIAL-1, R-CFG-6).

    States are frozen, so every registered server shares one of two instances.
    """
    return _REGISTERED if enabled else _REGISTERED_DISABLED


_NO_EFFECTS: tuple[Effect, ...] = ()


def describe_transition(
    server: str, before: ActorState, message: Message, after: ActorState, effects: tuple[Effect, ...]
) -> Transition:
    """The :class:`Transition` an observer is shown for one step of :func:`reduce`."""
    match message:
        case Started(generation=generation):
            tagged: int | None = generation
            stale = False
        case Up() | ToolsListed() | DialFailed() | LoginNeeded() | Lost() | Restarting() | GaveUp():
            tagged = message.generation
            stale = message.generation != before.live
        case _:
            tagged = None
            stale = False
    return Transition(
        server=server,
        message=_KINDS[type(message)],
        explicit=isinstance(message, Connect) and message.explicit,
        generation=tagged,
        stale=stale,
        state_before=before.state,
        state_after=after.state,
        live_before=before.live,
        live_after=after.live,
        manually_disconnected_before=before.manually_disconnected,
        changed=after is not before,
        effects=tuple(
            EffectKind.STOP_TRANSPORT if isinstance(effect, StopTransport) else EffectKind.START_TRANSPORT
            for effect in effects
        ),
    )


_KINDS: dict[type[Message], MessageKind] = {
    Connect: MessageKind.CONNECT,
    Disconnect: MessageKind.DISCONNECT,
    Reconnect: MessageKind.RECONNECT,
    Retire: MessageKind.RETIRE,
    Reload: MessageKind.RELOAD,
    Started: MessageKind.STARTED,
    StartRefused: MessageKind.START_REFUSED,
    Up: MessageKind.UP,
    ToolsListed: MessageKind.TOOLS_LISTED,
    DialFailed: MessageKind.DIAL_FAILED,
    LoginNeeded: MessageKind.LOGIN_NEEDED,
    LoggedIn: MessageKind.LOGGED_IN,
    Lost: MessageKind.LOST,
    Restarting: MessageKind.RESTARTING,
    GaveUp: MessageKind.GAVE_UP,
}


def lazy_dial_due(state: ActorState) -> bool:
    """Whether ``prepare_turn`` dials this server: never dialed in this session, and nothing forbids it.

    Not disabled (R-CFG-6), not manually disconnected (R-DIAL-6), not retired
    (R-STORE-5), and never dialed before: a failed lazy dial is not retried
    (R-DIAL-4).
    """
    return (
        state.state is ServerState.DISCONNECTED
        and not state.dialed
        and not state.manually_disconnected
        and not state.retiring
    )


def settled(state: ActorState) -> bool:
    """Whether a command's caller may be released: no dial is in progress (the server is not still connecting).

    ``connect`` returns once its dial has an outcome (connected or failed);
    every other command returns once its effects are carried out. A turn of
    a project-mode session and the tool snapshot cache's writer wait for the
    same: until every server they wait for is settled.
    """
    return state.state is not ServerState.CONNECTING


def failure_retried(state: ActorState) -> bool:
    """Whether a failure of the live transport generation is restarted, with backoff, while the budget lasts.

    A dial a command started (``connecting``: a connect, a reconnect, a
    reload) is final: the server turns ``error`` and is not dialed again by
    a later turn (R-DIAL-4). An established connection that is lost, and
    every attempt of the reconnects that follow (``connected``,
    ``reconnecting``), are retried (R-RACE-4). The transport task asks this
    when it fails; :func:`reduce` applies the same rule to the failure's
    event. A stale generation is never retried: whatever made it stale left
    the server in another state, or stopped it.
    """
    return state.state in (ServerState.CONNECTED, ServerState.RECONNECTING)


def dead(state: ActorState, *, now: float, dead_after: float) -> bool:
    """Whether a shared connection counts as dead, to be rebuilt by the next session that attaches (R-SCOPE-2).

    Dead: in ``error`` or ``needs_login`` (a login made since, in another
    process too, is then tried), or connected for more than ``dead_after``
    seconds with no tool at all.

    :param now: wall-clock time (``time.time()``), as ``last_connected`` is.
    :param dead_after: :attr:`ProjectOptions.dead_after <wave_actors.ProjectOptions.dead_after>`.
    """
    if state.state in (ServerState.ERROR, ServerState.NEEDS_LOGIN):
        return True
    return (
        state.state is ServerState.CONNECTED
        and not state.tools
        and state.last_connected is not None
        and now - state.last_connected > dead_after
    )


def finished(state: ActorState) -> bool:
    """Whether the actor is done for good: a retired server never runs again, so its task ends."""
    return state.retiring


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
                    state,
                    state=ServerState.DISCONNECTED,
                    live=None,
                    manually_disconnected=True,
                    error=None,
                    tools=(),
                    warnings=(),
                ),
                (StopTransport(),),
            )
        case Reconnect():
            return _reconnect(state)
        case Retire():
            if state.retiring:
                return state, _NO_EFFECTS
            stopped = state.state if state.state is ServerState.DISABLED else ServerState.DISCONNECTED
            return (
                attrs.evolve(state, state=stopped, live=None, retiring=True, tools=(), warnings=()),
                (StopTransport(drain_calls=True),),
            )
        case Reload(enabled=enabled):
            return _reload(state, enabled)
        case LoggedIn():
            if state.state is not ServerState.NEEDS_LOGIN or state.retiring or state.manually_disconnected:
                return state, _NO_EFFECTS
            # Waiting for exactly this: dial again, as an explicit connect would (R-AUTH-2).
            return _connect(state, explicit=True)
        case StartRefused(reason=reason):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING) or state.live is not None:
                return state, _NO_EFFECTS
            return attrs.evolve(state, state=ServerState.ERROR, error=reason), _NO_EFFECTS
        case Started(generation=generation):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING):
                return state, _NO_EFFECTS
            return attrs.evolve(state, generation=generation, live=generation), _NO_EFFECTS
        case Up() | ToolsListed() | DialFailed() | LoginNeeded() | Lost() | Restarting() | GaveUp():
            return _transport_event(state, message), _NO_EFFECTS


def _connect(state: ActorState, explicit: bool) -> tuple[ActorState, tuple[Effect, ...]]:
    if state.state is ServerState.DISABLED or state.retiring:
        return state, _NO_EFFECTS
    if not explicit and not lazy_dial_due(state):
        return state, _NO_EFFECTS
    if state.state in (ServerState.CONNECTED, ServerState.CONNECTING):
        return state, _NO_EFFECTS  # reused, never re-dialed (R-DIAL-3)
    return (
        attrs.evolve(
            state, state=ServerState.CONNECTING, live=None, dialed=True, manually_disconnected=False, error=None
        ),
        (StartTransport(),),
    )


def _reconnect(state: ActorState) -> tuple[ActorState, tuple[Effect, ...]]:
    if state.state is ServerState.DISABLED or state.retiring:
        return state, _NO_EFFECTS
    # The live generation is cleared first, so whatever the old transport still
    # reports is stale (R-RACE-1); its tools stay listed until the new one is up.
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
        return attrs.evolve(state, state=ServerState.DISABLED, live=None, error=None, tools=(), warnings=()), effects
    if state.state in _ACTIVE:
        # The same name, a different server: dial it in place of the old one.
        return (
            attrs.evolve(
                state,
                state=ServerState.CONNECTING,
                live=None,
                error=None,
                tools=(),
                warnings=(),
                instructions=None,
                server_purpose=None,
            ),
            (StartTransport(),),
        )
    # Not running: a changed entry is a new server, eligible for the next lazy dial.
    return (
        attrs.evolve(
            state,
            state=ServerState.DISCONNECTED,
            dialed=False,
            error=None,
            tools=(),
            warnings=(),
            instructions=None,
            server_purpose=None,
        ),
        _NO_EFFECTS,
    )


def _transport_event(state: ActorState, event: TransportEvent) -> ActorState:
    if event.generation != state.live:
        return state  # stale: an older (or never current) generation (R-RACE-1)
    match event:
        case Up(tools=tools, instructions=instructions, time=time, warnings=warnings, server_purpose=purpose):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING):
                return state
            return attrs.evolve(
                state,
                state=ServerState.CONNECTED,
                error=None,
                tools=tools,
                warnings=warnings,
                instructions=instructions,
                server_purpose=purpose,
                last_connected=time,
                **_after_listing(state, tools),
            )
        case ToolsListed(tools=tools, warnings=warnings):
            if state.state is not ServerState.CONNECTED:
                return state
            return attrs.evolve(state, tools=tools, warnings=warnings, **_after_listing(state, tools))
        case DialFailed(reason=reason) if failure_retried(state):
            return attrs.evolve(state, state=ServerState.RECONNECTING, error=reason)
        case DialFailed(reason=reason):
            # Final (R-DIAL-4). A failed reconnect leaves nothing live to list (a first dial had nothing listed anyway).
            return attrs.evolve(state, state=ServerState.ERROR, live=None, error=reason, tools=(), warnings=())
        case LoginNeeded(reason=reason):
            if state.state not in (ServerState.CONNECTING, ServerState.RECONNECTING):
                return state
            # Never retried: only a login (or an explicit connect) dials again (R-AUTH-2).
            return attrs.evolve(state, state=ServerState.NEEDS_LOGIN, live=None, error=reason, tools=(), warnings=())
        case Lost(reason=reason):
            if state.state is not ServerState.CONNECTED:
                return state
            return attrs.evolve(state, state=ServerState.RECONNECTING, error=reason)
        case Restarting(next_generation=next_generation):
            return attrs.evolve(state, state=ServerState.RECONNECTING, live=next_generation, generation=next_generation)
        case GaveUp(reason=reason):
            return attrs.evolve(
                state,
                state=ServerState.ERROR,
                live=None,
                error=_gave_up(reason),
                tools=(),
                warnings=(),
            )
        case _:
            return state


def _after_listing(state: ActorState, tools: tuple[ServerTool, ...]) -> dict[str, frozenset[str]]:
    """``listed`` and ``withdrawn`` after a new listing: what the previous listings had and this one lacks is withdrawn."""
    # Through a set: a frozenset copied from one is sized to fit (6 names: 472 bytes, not the 728 of one
    # grown name by name), and the state keeps it as long as the server is listed.
    listed = frozenset({tool.name for tool in tools})
    if listed == state.listed:
        return {}
    newly = state.listed - listed
    withdrawn = newly | (state.withdrawn - listed)
    if len(withdrawn) > WITHDRAWN_KEPT:
        kept = sorted(newly)[:WITHDRAWN_KEPT]
        kept += sorted(withdrawn - newly)[: WITHDRAWN_KEPT - len(kept)]
        withdrawn = frozenset(kept)
    # An empty result is a new 216-byte object each time; the empty frozenset is shared.
    withdrawn = withdrawn or _NO_NAMES
    return {"listed": listed, "withdrawn": withdrawn}


def _gave_up(reason: str) -> str:
    """The error of a server whose reconnects ran out: said on the reason's first line, before any detail (R-RACE-4).

    The first line of an error is what a model may be told; the lines after it
    (a stdio server's stderr tail) are for people only (R-WS-5).
    """
    headline, newline, detail = reason.partition("\n")
    return f"{headline} (gave up reconnecting){newline}{detail}"
