"""The server actor's pure reducer, rule by rule (R-DIAL, R-RACE, R-CFG-6, R-STORE-5, R-AUTH-2).

No trio, no processes: :func:`reduce` is driven by :class:`Executor`, a model
of what :class:`~wave_actors._actor.actor.ServerActor` does with the effects.
``StartTransport`` starts the supervisor's next incarnation and feeds back
``Started(incarnation)`` at once, before any other message, exactly as the
actor's mailbox loop does. Transport events (``Up``, ``Lost``, ...) and
supervisor events (``Restarting``, ``GaveUp``) are posted by the tests,
current or stale, in any order.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from wave_actors import ServerState
from wave_actors._actor.machine import (
    WITHDRAWN_KEPT,
    ActorState,
    dead,
    failure_retried,
    initial_state,
    reduce,
)
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
    StartTransport,
    StopTransport,
    ToolsListed,
    Up,
)
from wave_actors._listing import ServerTool

CONNECTING = ServerState.CONNECTING
CONNECTED = ServerState.CONNECTED
RECONNECTING = ServerState.RECONNECTING
DISCONNECTED = ServerState.DISCONNECTED
ERROR = ServerState.ERROR
DISABLED = ServerState.DISABLED
NEEDS_LOGIN = ServerState.NEEDS_LOGIN
ACTIVE = frozenset({CONNECTING, CONNECTED, RECONNECTING})

SEARCH = ServerTool("search", "Search the web", {"type": "object"}, read_only_hint=True)
WRITE = ServerTool("write", "Write a file")
LIST = (SEARCH, WRITE)

LAZY = Connect(explicit=False)
EXPLICIT = Connect(explicit=True)


@attrs.define
class Executor:
    """What the actor and its supervisor do with effects and events, as far as the reducer can tell.

    :param state: the reducer's state.
    :param incarnation: the supervisor's last incarnation number (it only grows).
    :param running: a transport, or a restart the supervisor scheduled, may exist.
    :param restarts_run: a scheduled restart runs before the next command (else a
        command stops it first, and the next start reuses its number).
    """

    state: ActorState
    incarnation: int = 0
    running: bool = False
    restarts_run: bool = True
    effects: list[Effect] = attrs.field(factory=list[Effect])

    def post(self, *messages: Message) -> ActorState:
        """Reduce each message, carrying out effects the way the actor does."""
        for message in messages:
            before = self.state
            self.state, effects = reduce(before, message)
            self.effects.extend(effects)
            for effect in effects:
                match effect:
                    case StartTransport():
                        self.incarnation += 1
                        self.running = True
                        self.state, fed_back = reduce(self.state, Started(self.incarnation))
                        assert fed_back == ()
                    case StopTransport():
                        self.running = False
            generation: int | None = getattr(message, "generation", None)
            if generation is not None and generation == before.live:
                self._supervise(message, generation, before)
        return self.state

    def _supervise(self, event: Message, generation: int, before: ActorState) -> None:
        # An event of the current generation means its incarnation ran.
        self.incarnation = max(self.incarnation, generation)
        match event:
            case Restarting() if self.restarts_run:
                self.incarnation = max(self.incarnation, generation + 1)
            case DialFailed() if not failure_retried(before):
                self.running = False  # the transport asked the same predicate, and returned
            case LoginNeeded():
                self.running = False  # a dial refused for a login returns: never restarted
            case GaveUp():
                self.running = False  # the supervisor gave up
            case _:
                pass


def restarting(generation: int, delay: float) -> Restarting:
    """The supervisor restarts incarnation ``generation`` as the next one, after ``delay``."""
    return Restarting(generation, delay, generation + 1)


def dialed(*messages: Message, enabled: bool = True) -> Executor:
    executor = Executor(initial_state(enabled=enabled))
    executor.post(*messages)
    return executor


def connected(tools: tuple[ServerTool, ...] = LIST) -> Executor:
    """A server whose first dial (generation 1) succeeded."""
    return dialed(LAZY, Up(1, tools, "Use search first.", 100.0))


def lost() -> Executor:
    """A connected server whose connection dropped; the supervisor restarts it as generation 2."""
    executor = connected()
    executor.post(Lost(1, "server exited with code 1"), restarting(1, 0.5))
    return executor


# R-DIAL-1, R-DIAL-2: registration and the lazy dial.


def test_a_registered_server_is_disconnected_and_never_dialed() -> None:
    # R-DIAL-1
    state = initial_state(enabled=True)
    assert (state.state, state.live, state.dialed, state.manually_disconnected) == (DISCONNECTED, None, False, False)


def test_disabled_server_never_dials() -> None:
    # R-CFG-6: not by lazy dial, not by explicit connect (the session refuses that one with an error).
    executor = dialed(LAZY, EXPLICIT, Disconnect(), EXPLICIT, enabled=False)
    assert (executor.state.state, executor.state.dialed, executor.state.live) == (DISABLED, False, None)
    assert executor.effects == []


def test_disconnect_of_a_disabled_server_holds_once_it_is_enabled() -> None:
    # R-DIAL-6: "after an explicit disconnect, no lazy dial may bring it back in this session",
    # even when the disconnect came while the entry was disabled and the entry is enabled later.
    executor = dialed(Disconnect(), Reload(enabled=True), enabled=False)
    before = executor.state
    assert (before.state, before.manually_disconnected) == (DISCONNECTED, True)
    assert executor.post(LAZY) is before
    assert executor.post(EXPLICIT).state is CONNECTING


def test_lazy_connect_dials_a_server_never_dialed() -> None:
    # R-DIAL-2
    executor = dialed(LAZY)
    assert executor.effects == [StartTransport()]
    assert executor.state.state is CONNECTING
    assert executor.state.dialed
    assert (executor.state.generation, executor.state.live) == (1, 1)


def test_a_successful_dial_connects_with_its_tools_and_instructions() -> None:
    state = connected().state
    assert state.state is CONNECTED
    assert (state.tools, state.instructions, state.error) == (LIST, "Use search first.", None)
    assert state.last_connected == 100.0


def test_lazy_connect_after_failed_dial_is_a_no_op() -> None:
    # R-DIAL-4: the failed lazy dial leaves `error`; later turns do not retry it.
    executor = dialed(LAZY, DialFailed(1, "command not found: srv"))
    assert (executor.state.state, executor.state.error, executor.state.live) == (ERROR, "command not found: srv", None)
    before = executor.state
    assert executor.post(LAZY) is before
    assert executor.effects == [StartTransport()]


def test_lazy_connect_after_giving_up_is_a_no_op() -> None:
    # R-DIAL-2, R-DIAL-4: a server dialed once in this session is never lazily dialed again.
    executor = lost()
    executor.post(GaveUp(2, "connection refused"))
    before = executor.state
    assert executor.post(LAZY) is before
    assert before.state is ERROR


def test_explicit_connect_retries_after_error() -> None:
    # R-DIAL-5
    executor = dialed(LAZY, DialFailed(1, "command not found: srv"), EXPLICIT)
    assert executor.effects == [StartTransport(), StartTransport()]
    assert (executor.state.state, executor.state.live, executor.state.error) == (CONNECTING, 2, None)
    assert executor.post(Up(2, LIST, None, 200.0)).state is CONNECTED


def test_explicit_connect_of_a_never_dialed_server_dials() -> None:
    # R-DIAL-5
    executor = dialed(EXPLICIT)
    assert executor.effects == [StartTransport()]
    assert executor.state.state is CONNECTING


def test_lazy_connect_after_manual_disconnect_is_a_no_op() -> None:
    # R-DIAL-6: even for a server that was never dialed.
    for executor in (dialed(Disconnect()), connected()):
        executor.post(Disconnect())
        before = executor.state
        assert executor.post(LAZY) is before
        assert (before.state, before.manually_disconnected) == (DISCONNECTED, True)


def test_explicit_connect_undoes_a_manual_disconnect() -> None:
    # R-DIAL-5, R-DIAL-6
    executor = connected()
    executor.post(Disconnect(), EXPLICIT)
    assert (executor.state.state, executor.state.manually_disconnected, executor.state.live) == (CONNECTING, False, 2)


@pytest.mark.parametrize("command", [LAZY, EXPLICIT], ids=["lazy", "explicit"])
def test_connected_server_is_not_redialed(command: Connect) -> None:
    # R-DIAL-3
    executor = connected()
    before = executor.state
    assert executor.post(command) is before
    assert executor.effects == [StartTransport()]


@pytest.mark.parametrize("command", [LAZY, EXPLICIT], ids=["lazy", "explicit"])
def test_connect_while_connecting_does_not_start_a_second_transport(command: Connect) -> None:
    # R-DIAL-3, R-RACE-6: at most one live transport per actor.
    executor = dialed(LAZY)
    before = executor.state
    assert executor.post(command) is before
    assert executor.effects == [StartTransport()]


# R-RACE-1: generations.


def every_event(generation: int) -> list[Message]:
    return [
        Up(generation, (WRITE,), "other", 999.0),
        ToolsListed(generation, ()),
        DialFailed(generation, "stale failure"),
        Lost(generation, "stale loss"),
        restarting(generation, 1.0),
        GaveUp(generation, "stale give-up"),
    ]


@pytest.mark.parametrize("event", every_event(1), ids=lambda event: type(event).__name__)
def test_events_of_a_stale_generation_are_dropped(event: Message) -> None:
    # R-RACE-1: generation 1 was superseded by an explicit redial (generation 3 after a restart to 2).
    executor = lost()
    executor.post(EXPLICIT, Up(3, LIST, None, 300.0))
    before = executor.state
    assert before.live == 3
    state, effects = reduce(before, event)
    assert state is before
    assert effects == ()


@pytest.mark.parametrize("event", every_event(1), ids=lambda event: type(event).__name__)
def test_events_before_any_dial_are_dropped(event: Message) -> None:
    # R-RACE-1: no generation is live yet, so none counts.
    before = initial_state(enabled=True)
    assert reduce(before, event) == (before, ())


@pytest.mark.parametrize("event", every_event(2), ids=lambda event: type(event).__name__)
def test_events_of_a_future_generation_are_dropped(event: Message) -> None:
    # R-RACE-1: only the *current* generation counts, not a newer number.
    before = connected().state
    assert reduce(before, event) == (before, ())


@pytest.mark.parametrize("state", list(ServerState), ids=lambda state: state.value)
def test_a_started_report_outside_a_dial_is_ignored(state: ServerState) -> None:
    # Started is the executor's answer to StartTransport, which always enters CONNECTING.
    before = attrs.evolve(connected().state, state=state)
    after, effects = reduce(before, Started(7))
    assert effects == ()
    if state in (CONNECTING, RECONNECTING):
        assert (after.generation, after.live) == (7, 7)
    else:
        assert after is before


def test_close_after_manual_disconnect_never_reconnects() -> None:
    # R-RACE-3: the disconnect retires generation 1 before the transport is stopped.
    executor = connected()
    executor.post(Disconnect())
    assert executor.effects == [StartTransport(), StopTransport()]
    assert executor.state.live is None
    after_disconnect = executor.state
    for event in every_event(1):
        assert executor.post(event) is after_disconnect
    assert (after_disconnect.state, after_disconnect.manually_disconnected) == (DISCONNECTED, True)
    assert executor.effects == [StartTransport(), StopTransport()]


def test_close_after_manual_disconnect_during_a_restart_backoff_never_reconnects() -> None:
    # R-RACE-3: the restart the supervisor had scheduled (generation 2) is stale as well.
    executor = lost()
    assert executor.state.live == 2
    executor.post(Disconnect())
    stopped = executor.state
    for event in every_event(2) + every_event(1):
        assert executor.post(event) is stopped
    assert stopped.state is DISCONNECTED


def test_disconnect_stops_the_transport_and_forgets_the_tools() -> None:
    # R-DIAL-6, R-TOOL-3: a disconnected server lists no live tools.
    executor = connected()
    state = executor.post(Disconnect())
    assert executor.effects[-1] == StopTransport(drain_calls=False)
    assert (state.state, state.tools, state.error, state.live) == (DISCONNECTED, (), None, None)


# R-RACE-4, R-RACE-5: unexpected loss and reconnecting.


def test_loss_keeps_tools_while_reconnecting() -> None:
    # R-RACE-4, R-RACE-5: the exit code travels in the reason.
    executor = connected()
    state = executor.post(Lost(1, "server exited with code 1"))
    assert (state.state, state.tools, state.error) == (RECONNECTING, LIST, "server exited with code 1")
    state = executor.post(restarting(1, 0.5))
    assert (state.state, state.tools) == (RECONNECTING, LIST)


def test_a_restart_makes_the_next_incarnation_current() -> None:
    # R-RACE-1, R-RACE-4: the supervisor restarts generation 1 as generation 2.
    state = lost().state
    assert (state.generation, state.live) == (2, 2)
    assert reduce(state, Up(1, (), None, 0.0)) == (state, ())
    reconnected, _ = reduce(state, Up(2, (WRITE,), "v2", 150.0))
    assert (reconnected.state, reconnected.tools, reconnected.instructions) == (CONNECTED, (WRITE,), "v2")
    assert (reconnected.error, reconnected.last_connected) == (None, 150.0)


def test_a_failed_reconnect_attempt_keeps_reconnecting_with_its_reason() -> None:
    # R-RACE-4: only the retry budget ends reconnecting.
    executor = lost()
    state = executor.post(DialFailed(2, "connection refused"), restarting(2, 1.0))
    assert (state.state, state.error, state.tools, state.live) == (RECONNECTING, "connection refused", LIST, 3)


def test_give_up_turns_error_with_last_reason() -> None:
    # R-RACE-4
    executor = lost()
    executor.post(DialFailed(2, "connection refused"), restarting(2, 1.0))
    state = executor.post(GaveUp(3, "connection refused again"))
    assert (state.state, state.live) == (ERROR, None)
    assert state.error is not None and state.error.startswith("connection refused again")
    assert "gave up" in state.error


def test_give_up_is_said_on_the_first_line_of_the_error_above_the_stderr_tail() -> None:
    # R-RACE-4, R-WS-5: the first line is what a model may be told; the stderr tail under it is for people.
    executor = lost()
    executor.post(DialFailed(2, "connection refused"), restarting(2, 1.0))
    state = executor.post(GaveUp(3, "connect failed: exit 1\n  stderr:\n    /home/ann/.npm/_logs/x.log"))
    assert state.error == "connect failed: exit 1 (gave up reconnecting)\n  stderr:\n    /home/ann/.npm/_logs/x.log"


def test_give_up_right_after_a_loss_turns_error() -> None:
    # R-RACE-4: a budget of zero restarts gives up on the generation that was lost.
    executor = connected()
    state = executor.post(Lost(1, "killed by signal 9"), GaveUp(1, "killed by signal 9"))
    assert state.state is ERROR
    assert state.error is not None and "killed by signal 9" in state.error


def test_explicit_connect_while_reconnecting_dials_afresh() -> None:
    # R-DIAL-5: a new transport replaces the restarting one; the old generations go stale.
    executor = lost()
    state = executor.post(EXPLICIT)
    assert executor.effects[-1] == StartTransport()
    assert (state.state, state.live) == (CONNECTING, executor.incarnation)
    assert state.live is not None and state.live > 2
    for event in every_event(2) + every_event(1):
        assert reduce(state, event) == (state, ())


def test_loss_while_connecting_is_not_a_reconnect() -> None:
    # R-RACE-4 is about *connected* servers; a first dial reports DialFailed instead.
    state = dialed(LAZY).state
    assert reduce(state, Lost(1, "eof")) == (state, ())


def test_tools_list_changed_refreshes_the_tools() -> None:
    # R-RACE-7
    executor = connected()
    assert executor.post(ToolsListed(1, (WRITE,))).tools == (WRITE,)


def test_a_tool_refresh_is_ignored_unless_connected() -> None:
    # R-RACE-4: a late refresh does not replace the kept list while reconnecting.
    executor = connected()
    executor.post(Lost(1, "eof"))
    before = executor.state
    assert executor.post(ToolsListed(1, ())) is before


# Reconnect: tear down and dial again now, a new generation, never a manual disconnect.


def test_reconnect_of_a_connected_server_starts_a_new_generation_and_keeps_the_tools_listed() -> None:
    executor = connected()
    state = executor.post(Reconnect())
    assert executor.effects[-1] == StartTransport()  # stops generation 1 and waits for it first
    assert (state.state, state.live, state.generation, state.tools) == (CONNECTING, 2, 2, LIST)
    # Whatever the old transport still reports is stale (R-RACE-1): its close never counts as a loss.
    for event in every_event(1):
        assert reduce(state, event) == (state, ())
    assert executor.post(Up(2, (WRITE,), None, 200.0)).tools == (WRITE,)
    assert executor.state.state is CONNECTED


def test_reconnect_is_not_a_manual_disconnect() -> None:
    # R-DIAL-6 stays untouched: a later loss of the new generation is reconnected as usual (R-RACE-4).
    executor = connected()
    state = executor.post(Reconnect(), Up(2, LIST, None, 200.0), Lost(2, "eof"), restarting(2, 0.5))
    assert not state.manually_disconnected
    assert (state.state, state.live) == (RECONNECTING, 3)


def test_reconnect_lifts_a_manual_disconnect_like_an_explicit_connect() -> None:
    # R-DIAL-5, R-DIAL-6
    executor = connected()
    state = executor.post(Disconnect(), Reconnect())
    assert executor.effects[-2:] == [StopTransport(), StartTransport()]
    assert (state.state, state.manually_disconnected) == (CONNECTING, False)


def test_reconnect_of_a_never_dialed_or_failed_server_dials_it() -> None:
    # R-DIAL-5
    for executor in (dialed(), dialed(LAZY, DialFailed(1, "refused"))):
        state = executor.post(Reconnect())
        assert executor.effects[-1] == StartTransport()
        assert (state.state, state.dialed) == (CONNECTING, True)


def test_reconnect_while_reconnecting_dials_afresh() -> None:
    # R-RACE-6: the restart the supervisor scheduled is stopped; one transport at a time.
    executor = lost()
    state = executor.post(Reconnect())
    assert executor.effects[-1] == StartTransport()
    assert state.state is CONNECTING and state.live == executor.incarnation
    for event in every_event(2) + every_event(1):
        assert reduce(state, event) == (state, ())


def test_reconnect_of_a_disabled_or_retired_server_does_nothing() -> None:
    # R-CFG-6, R-STORE-5
    for state in (dialed(enabled=False).state, connected().post(Retire())):
        assert reduce(state, Reconnect()) == (state, ())


def test_a_failed_reconnect_is_an_error_with_nothing_listed() -> None:
    # R-DIAL-4: the first attempt of a dial is final, and no stale tool stays callable-looking.
    executor = connected()
    state = executor.post(Reconnect(), DialFailed(2, "connection refused"))
    assert (state.state, state.error, state.tools, state.live) == (ERROR, "connection refused", (), None)


# R-DIAL-4, R-RACE-4: which failures are retried is the reducer's rule, asked by the transport too.


@pytest.mark.parametrize(
    ("history", "retried"),
    [
        ((LAZY,), False),  # a lazy dial's first attempt
        ((EXPLICIT,), False),  # an explicit connect's
        ((LAZY, Up(1, LIST, None, 1.0), Reconnect()), False),  # a reconnect's
        ((LAZY, Up(1, LIST, None, 1.0), Reload(enabled=True)), False),  # a reload's
        ((LAZY, Up(1, LIST, None, 1.0)), True),  # the loss of an established connection
        ((LAZY, Up(1, LIST, None, 1.0), Lost(1, "eof"), restarting(1, 0.5)), True),  # a reconnect attempt
    ],
    ids=["lazy", "explicit", "reconnect", "reload", "connected", "reconnecting"],
)
def test_a_dial_a_command_started_is_final_and_every_attempt_after_a_loss_is_retried(
    history: tuple[Message, ...], retried: bool
) -> None:
    executor = dialed(*history)
    assert failure_retried(executor.state) is retried
    state = executor.post(DialFailed(executor.state.live or 0, "refused"))
    if retried:
        assert (state.state, state.error) == (RECONNECTING, "refused")
        assert executor.running  # the transport raised: the supervisor restarts it
    else:
        assert (state.state, state.error, state.live) == (ERROR, "refused", None)
        assert not executor.running  # the transport returned: no restart


@pytest.mark.parametrize("state", [DISCONNECTED, DISABLED, ERROR, CONNECTING], ids=lambda state: state.value)
def test_nothing_is_retried_outside_an_established_connection(state: ServerState) -> None:
    assert not failure_retried(ActorState(state=state, live=1, generation=1))


# R-TOOL-1, R-CACHE-2: what the server listed is state, changed only by a listing.


def test_the_newest_listing_is_remembered_while_the_server_is_down() -> None:
    executor = connected()
    assert executor.state.listed == {"search", "write"}
    for command in (Disconnect(), EXPLICIT, Reconnect()):
        state = executor.post(command)
        assert state.listed == {"search", "write"} and state.withdrawn == frozenset()
    state = executor.post(DialFailed(state.live or 0, "refused"))
    assert (state.state, state.tools, state.listed) == (ERROR, (), {"search", "write"})


def test_a_tool_a_later_listing_lacks_is_withdrawn_until_it_is_listed_again() -> None:
    executor = connected()
    state = executor.post(ToolsListed(1, (SEARCH,)))
    assert (state.listed, state.withdrawn) == ({"search"}, {"write"})
    state = executor.post(Lost(1, "eof"), restarting(1, 0.1), Up(2, (WRITE,), None, 2.0))
    assert (state.listed, state.withdrawn) == ({"write"}, {"search"})
    state = executor.post(ToolsListed(2, LIST))
    assert (state.listed, state.withdrawn) == ({"search", "write"}, frozenset())


def test_a_server_renaming_its_tools_at_every_listing_cannot_grow_what_is_remembered() -> None:
    # A hostile server: 200 listings of 20 fresh names each, 3 980 names withdrawn in all.
    executor = connected()
    for listing in range(200):
        tools = tuple(ServerTool(f"t{listing}_{index}", "renamed") for index in range(20))
        state = executor.post(ToolsListed(1, tools))
        assert len(state.withdrawn) <= WITHDRAWN_KEPT
    assert state.listed == {f"t199_{index}" for index in range(20)}
    # The newest withdrawals are the ones remembered: a call by one is still refused as withdrawn.
    assert {f"t198_{index}" for index in range(20)} <= state.withdrawn
    assert len(state.withdrawn) == WITHDRAWN_KEPT and state.listed.isdisjoint(state.withdrawn)


def test_a_stale_listing_changes_no_known_name() -> None:
    executor = lost()
    before = executor.state
    assert reduce(before, ToolsListed(1, ()))[0] is before
    assert reduce(before, Up(1, (), None, 5.0))[0] is before


# R-SCOPE-2: a shared connection that is dead is rebuilt by the next session that attaches.


def test_a_connection_in_error_or_connected_too_long_without_a_tool_is_dead() -> None:
    assert dead(dialed(LAZY, DialFailed(1, "refused")).state, now=0.0, dead_after=5.0)
    empty = dialed(LAZY, Up(1, (), None, 100.0)).state
    assert not dead(empty, now=105.0, dead_after=5.0)
    assert dead(empty, now=105.5, dead_after=5.0)
    assert not dead(connected().state, now=1e9, dead_after=5.0)
    assert not dead(initial_state(enabled=True), now=1e9, dead_after=0.0)


# R-RACE-6: the last command wins.


def test_latest_command_decides_the_outcome_connect_last() -> None:
    # R-RACE-6
    executor = connected()
    executor.post(Disconnect(), EXPLICIT, Disconnect(), EXPLICIT)
    assert executor.effects == [StartTransport(), StopTransport(), StartTransport(), StopTransport(), StartTransport()]
    state = executor.state
    assert (state.state, state.live, state.manually_disconnected) == (CONNECTING, 3, False)
    # Whatever the superseded transports still report is dropped.
    for generation in (1, 2):
        for event in every_event(generation):
            assert reduce(state, event) == (state, ())


def test_latest_command_decides_the_outcome_disconnect_last() -> None:
    # R-RACE-6
    executor = connected()
    executor.post(Disconnect(), EXPLICIT, Up(2, LIST, None, 1.0), Disconnect())
    state = executor.state
    assert (state.state, state.live, state.manually_disconnected) == (DISCONNECTED, None, True)
    assert not executor.running


# R-STORE-5: retire.


def test_retire_drains_calls_then_stops_for_good() -> None:
    # R-STORE-5
    executor = connected()
    state = executor.post(Retire())
    assert executor.effects[-1] == StopTransport(drain_calls=True)
    assert (state.state, state.retiring, state.live, state.tools) == (DISCONNECTED, True, None, ())
    for message in [LAZY, EXPLICIT, Disconnect(), Retire(), Reload(enabled=True), Reload(enabled=False)]:
        assert executor.post(message) is state
    for event in every_event(1):
        assert executor.post(event) is state
    assert executor.effects[-1] == StopTransport(drain_calls=True)


def test_retire_of_a_never_dialed_server_stops_nothing_running() -> None:
    # R-STORE-5, R-DIAL-1
    executor = dialed(Retire())
    assert (executor.state.state, executor.state.retiring) == (DISCONNECTED, True)
    assert executor.post(LAZY) is executor.state
    assert not executor.running


def test_retire_of_a_disabled_server_keeps_it_disabled() -> None:
    # R-CFG-6, R-STORE-5
    executor = dialed(Retire(), enabled=False)
    assert (executor.state.state, executor.state.retiring) == (DISABLED, True)


# Reload: the same name, a changed entry.


def test_reload_of_a_running_server_redials_in_place() -> None:
    # R-STORE-5: changed entries reload in place under the same name.
    executor = connected()
    state = executor.post(Reload(enabled=True))
    assert executor.effects[-1] == StartTransport()
    assert (state.state, state.live, state.tools, state.instructions) == (CONNECTING, 2, (), None)
    assert reduce(state, Lost(1, "stopped for reload")) == (state, ())
    assert executor.post(Up(2, (WRITE,), None, 5.0)).state is CONNECTED


def test_reload_makes_a_failed_server_eligible_for_lazy_dial_again() -> None:
    # R-DIAL-2: a changed entry is a new server, never dialed in this session.
    executor = dialed(LAZY, DialFailed(1, "bad command"))
    state = executor.post(Reload(enabled=True))
    assert (state.state, state.dialed, state.error) == (DISCONNECTED, False, None)
    assert executor.post(LAZY).state is CONNECTING


def test_reload_keeps_a_manual_disconnect() -> None:
    # R-DIAL-6: only an explicit connect brings it back.
    executor = connected()
    executor.post(Disconnect(), Reload(enabled=True))
    before = executor.state
    assert (before.state, before.manually_disconnected) == (DISCONNECTED, True)
    assert executor.post(LAZY) is before


def test_reload_disabling_a_running_server_stops_it() -> None:
    # R-CFG-6
    executor = connected()
    state = executor.post(Reload(enabled=False))
    assert executor.effects[-1] == StopTransport()
    assert (state.state, state.live, state.tools) == (DISABLED, None, ())
    assert executor.post(EXPLICIT, LAZY) is state
    assert not executor.running


def test_reload_disabling_an_idle_server_stops_nothing() -> None:
    # R-CFG-6
    executor = dialed(Reload(enabled=False))
    assert executor.state.state is DISABLED
    assert executor.effects == []


def test_reload_enabling_a_disabled_server_makes_it_dialable() -> None:
    # R-CFG-6, R-DIAL-2
    executor = dialed(Reload(enabled=True), enabled=False)
    assert executor.state.state is DISCONNECTED
    assert executor.post(LAZY).state is CONNECTING


# Properties: any message, any state.

generations = st.integers(min_value=0, max_value=6)
tools = st.lists(
    st.builds(ServerTool, st.sampled_from(["search", "write", "a.b"]), read_only_hint=st.booleans()),
    max_size=3,
    unique_by=lambda tool: tool.name,
).map(tuple)
reasons = st.sampled_from(["eof", "exit code 1", "timeout"])

actor_states = st.builds(
    ActorState,
    state=st.sampled_from(ServerState),
    generation=generations,
    live=st.none() | generations,
    dialed=st.booleans(),
    manually_disconnected=st.booleans(),
    retiring=st.booleans(),
    error=st.none() | reasons,
    tools=tools,
    instructions=st.none() | st.text(max_size=5),
    last_connected=st.none() | st.floats(0, 1e9),
)


# R-AUTH-2: a dial refused for want of a login.


def test_a_dial_refused_for_a_login_needs_one_and_is_not_retried() -> None:
    executor = dialed(EXPLICIT)
    executor.post(LoginNeeded(1, "server 'x' needs a login"))
    state = executor.state
    assert (state.state, state.live, state.error) == (NEEDS_LOGIN, None, "server 'x' needs a login")
    assert not failure_retried(state) and not executor.running
    assert executor.post(LAZY) is state  # a later turn does not dial it again


def test_a_reconnect_refused_for_a_login_needs_one_and_stops_reconnecting() -> None:
    executor = lost()
    executor.post(LoginNeeded(2, "the login expired"))
    assert (executor.state.state, executor.state.tools) == (NEEDS_LOGIN, ())
    assert dead(executor.state, now=0.0, dead_after=5.0)  # a project rebuilds it for its next session


def test_a_login_dials_a_server_waiting_for_one_and_only_that() -> None:
    waiting = dialed(EXPLICIT)
    waiting.post(LoginNeeded(1, "needs a login"))
    waiting.post(LoggedIn())
    assert (waiting.state.state, waiting.state.live) == (CONNECTING, 2)
    for executor in (connected(), dialed(EXPLICIT, DialFailed(1, "boom")), dialed()):
        before = executor.state
        assert executor.post(LoggedIn()) is before


def test_a_login_does_not_lift_a_manual_disconnect() -> None:
    executor = dialed(EXPLICIT)
    executor.post(LoginNeeded(1, "needs a login"), Disconnect())
    before = executor.state
    assert executor.post(LoggedIn()) is before
    assert executor.post(EXPLICIT).state is CONNECTING


def test_a_stale_login_refusal_changes_nothing() -> None:
    executor = connected()
    before = executor.state
    assert executor.post(LoginNeeded(7, "an old generation")) is before


def events(generation: st.SearchStrategy[int]) -> st.SearchStrategy[Message]:
    return st.one_of(
        st.builds(Up, generation, tools, st.none() | st.text(max_size=5), st.floats(0, 1e9)),
        st.builds(ToolsListed, generation, tools),
        st.builds(DialFailed, generation, reasons),
        st.builds(LoginNeeded, generation, reasons),
        st.builds(Lost, generation, reasons),
        st.builds(restarting, generation, st.floats(0, 60)),
        st.builds(GaveUp, generation, reasons),
    )


commands: st.SearchStrategy[Message] = st.one_of(
    st.builds(Connect, st.booleans()),
    st.just(Disconnect()),
    st.just(Reconnect()),
    st.just(Retire()),
    st.builds(Reload, st.booleans()),
    st.just(LoggedIn()),
)
messages = st.one_of(commands, events(generations), st.builds(Started, generations))


@given(actor_states, messages)
def test_reduce_is_total_and_deterministic(state: ActorState, message: Message) -> None:
    first = reduce(state, message)
    assert reduce(state, message) == first
    new_state, effects = first
    assert isinstance(new_state, ActorState)
    assert all(isinstance(effect, StartTransport | StopTransport) for effect in effects)


@given(actor_states, events(generations))
def test_a_state_changes_on_an_event_only_if_its_generation_is_live(state: ActorState, event: Message) -> None:
    # R-RACE-1
    after, effects = reduce(state, event)
    assert effects == ()
    if event.generation != state.live:
        assert after is state


@given(actor_states, st.builds(Connect, st.booleans()))
def test_lazy_connect_dials_only_a_fresh_server(state: ActorState, command: Connect) -> None:
    # R-DIAL-2..6, R-CFG-6, R-STORE-5
    after, effects = reduce(state, command)
    fresh = state.state is DISCONNECTED and not state.dialed and not state.manually_disconnected
    allowed = state.state is not DISABLED and not state.retiring
    if command.explicit:
        should_dial = allowed and state.state not in (CONNECTED, CONNECTING)
    else:
        should_dial = allowed and fresh
    assert effects == ((StartTransport(),) if should_dial else ())
    if should_dial:
        assert (after.state, after.dialed, after.manually_disconnected, after.live) == (CONNECTING, True, False, None)
    else:
        assert after is state


# A stateful model: commands and (stale or current) events in any order.


class ActorModel(RuleBasedStateMachine):
    """Random histories of one server, checked after every message."""

    def __init__(self) -> None:
        super().__init__()
        self.executor = Executor(initial_state(enabled=True))
        self.last_command: Message | None = None  # the last command that took effect
        self.held_down = False  # a manual disconnect is in force (R-DIAL-6)
        self.highest_generation = 0

    @property
    def state(self) -> ActorState:
        return self.executor.state

    def post(self, message: Message) -> tuple[ActorState, ActorState, list[Effect]]:
        before = self.state
        already = len(self.executor.effects)
        after = self.executor.post(message)
        effects = self.executor.effects[already:]
        # Deterministic: the same message in the same state decides the same.
        replayed, replayed_effects = reduce(before, message)
        assert replayed_effects == tuple(effects)
        if StartTransport() not in effects:
            assert replayed == after
        # One command, at most one effect: never two transports at once (R-RACE-6).
        assert len(effects) <= 1
        # Generations never go back.
        assert after.generation >= before.generation
        self.highest_generation = max(self.highest_generation, after.generation)
        return before, after, effects

    # Commands.

    @rule(explicit=st.booleans())
    def connect(self, explicit: bool) -> None:
        before, after, effects = self.post(Connect(explicit=explicit))
        if before.state is DISABLED or before.retiring:
            assert after is before and effects == []  # R-CFG-6, R-STORE-5
            return
        if not explicit:
            if self.held_down:
                assert after is before and effects == []  # R-DIAL-6
            return
        self.last_command = Connect(explicit=True)
        self.held_down = False
        # R-RACE-6, R-DIAL-3, R-DIAL-5: dialing now, or reusing the connection.
        assert after.state in (CONNECTING, CONNECTED)
        assert not after.manually_disconnected
        if before.state in (CONNECTING, CONNECTED):
            assert after is before and effects == []
        else:
            assert effects == [StartTransport()]
            assert (after.state, after.live) == (CONNECTING, self.executor.incarnation)

    @rule()
    def reconnect(self) -> None:
        before, after, effects = self.post(Reconnect())
        if before.state is DISABLED or before.retiring:
            assert after is before and effects == []  # R-CFG-6, R-STORE-5
            return
        self.last_command = Reconnect()
        self.held_down = False
        # A new transport, whatever the state was (the next incarnation: a restart that never ran
        # gives its number up to it); never a manual disconnect.
        assert effects == [StartTransport()]
        assert (after.state, after.live, after.manually_disconnected) == (CONNECTING, self.executor.incarnation, False)

    @rule()
    def disconnect(self) -> None:
        before, after, effects = self.post(Disconnect())
        if before.retiring:
            assert after is before and effects == []
            return
        self.last_command = Disconnect()
        self.held_down = True
        assert after.manually_disconnected and after.live is None and after.tools == ()
        if before.state is DISABLED:
            assert after.state is DISABLED and effects == []  # nothing runs (R-CFG-6)
        else:
            # R-RACE-6, R-RACE-3: down, nothing current, the transport stopped.
            assert after.state is DISCONNECTED
            assert effects == [StopTransport()]

    @rule(enabled=st.booleans())
    def reload(self, enabled: bool) -> None:
        before, after, effects = self.post(Reload(enabled=enabled))
        if before.retiring:
            assert after is before and effects == []
            return
        self.last_command = Reload(enabled=enabled)
        # A reload keeps a manual disconnect: only an explicit connect lifts it (R-DIAL-6).
        assert after.manually_disconnected == before.manually_disconnected
        if not enabled:
            assert after.state is DISABLED
            assert effects == ([StopTransport()] if before.state in ACTIVE else [])
        elif before.state in ACTIVE:
            assert effects == [StartTransport()]
            assert after.state is CONNECTING
        else:
            assert effects == []
            assert (after.state, after.dialed) == (DISCONNECTED, False)

    @rule()
    def logged_in(self) -> None:
        # R-AUTH-2: a login dials a server that waits for one, and nothing else.
        before, after, effects = self.post(LoggedIn())
        if before.state is not NEEDS_LOGIN or before.retiring or before.manually_disconnected:
            assert after is before and effects == []
            return
        self.last_command = Connect(explicit=True)
        assert effects == [StartTransport()]
        assert (after.state, after.live) == (CONNECTING, self.executor.incarnation)

    @rule()
    def retire(self) -> None:
        before, after, effects = self.post(Retire())
        if before.retiring:
            assert after is before and effects == []
        else:
            self.last_command = Retire()
            assert effects == [StopTransport(drain_calls=True)]

    # Events, tagged with the live generation or any other one.

    @rule(data=st.data())
    def event(self, data: st.DataObject) -> None:
        numbers = st.integers(0, self.highest_generation + 2)
        live = self.state.live
        generation = data.draw(numbers if live is None else st.just(live) | numbers, label="generation")
        message = data.draw(events(st.just(generation)), label="event")
        self.executor.restarts_run = data.draw(st.booleans(), label="restart runs before the next command")
        before, after, effects = self.post(message)
        assert effects == []
        if generation != before.live:
            assert after is before  # R-RACE-1
        if self.held_down:
            assert after is before  # R-RACE-3, R-DIAL-6
        if generation == before.live:
            match message:
                case Restarting():
                    assert (after.state, after.live) == (RECONNECTING, generation + 1)
                case GaveUp(reason=reason):
                    assert after.state is ERROR and after.error is not None and reason in after.error
                case Lost() if before.state is CONNECTED:
                    assert (after.state, after.tools) == (RECONNECTING, before.tools)  # R-RACE-4
                case LoginNeeded(reason=reason) if before.state in (CONNECTING, RECONNECTING):
                    # R-AUTH-2: not retried, nothing listed, the reason shown.
                    assert (after.state, after.live, after.tools, after.error) == (NEEDS_LOGIN, None, (), reason)
                case _:
                    pass

    # Invariants, after every step.

    @invariant()
    def live_is_the_newest_generation_or_none(self) -> None:
        state = self.state
        assert state.live is None or state.live == state.generation

    @invariant()
    def a_generation_is_live_exactly_while_the_server_is_active(self) -> None:
        # The executor feeds Started back at once, so CONNECTING always has its generation.
        assert (self.state.live is not None) == (self.state.state in ACTIVE)

    @invariant()
    def no_transport_runs_for_a_server_that_is_down(self) -> None:
        # R-DIAL-6, R-CFG-6, R-STORE-5: leaving the active states always stops the transport.
        if self.state.state not in ACTIVE:
            assert not self.executor.running

    @invariant()
    def a_manual_disconnect_holds_until_an_explicit_connect(self) -> None:
        # R-DIAL-6, R-RACE-3, R-RACE-6
        state = self.state
        if self.held_down:
            assert state.manually_disconnected
            assert state.state in (DISCONNECTED, DISABLED)
        if state.manually_disconnected:
            assert state.state in (DISCONNECTED, DISABLED)
        if isinstance(self.last_command, Disconnect):
            assert state.state in (DISCONNECTED, DISABLED)

    @invariant()
    def the_last_explicit_connect_is_not_undone_by_stale_events(self) -> None:
        # R-RACE-6: after a final explicit connect, only its own generation's events move the state.
        explicit = isinstance(self.last_command, Connect | Reconnect)
        if explicit and not self.state.retiring and self.state.state is not DISABLED:
            assert self.state.state is not DISCONNECTED
            assert not self.state.manually_disconnected

    @invariant()
    def listed_names_are_the_live_tools_whenever_any_are_shown(self) -> None:
        # R-TOOL-1: a tool shown live is one the newest listing has; nothing is both listed and withdrawn.
        state = self.state
        if state.tools:
            assert frozenset(tool.name for tool in state.tools) == state.listed
        assert state.listed.isdisjoint(state.withdrawn)

    @invariant()
    def a_retired_server_stays_down_without_tools(self) -> None:
        # R-STORE-5
        state = self.state
        if state.retiring:
            assert state.state in (DISCONNECTED, DISABLED)
            assert (state.live, state.tools) == (None, ())

    @invariant()
    def public_states_carry_what_they_promise(self) -> None:
        state = self.state
        if state.state in (DISCONNECTED, DISABLED):
            assert state.tools == ()  # R-TOOL-3: nothing live to list
        if state.state in (ERROR, NEEDS_LOGIN):
            assert state.error is not None
        if state.state is CONNECTED:
            assert state.error is None and state.last_connected is not None
        if state.state in ACTIVE or state.state in (ERROR, NEEDS_LOGIN):
            assert state.dialed  # R-DIAL-2: so the lazy dial never repeats


ActorModel.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_actor_model = ActorModel.TestCase
