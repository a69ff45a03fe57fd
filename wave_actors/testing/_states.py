"""Waiting for a server to reach a state, the way a test does (R-HOST-2).

A test that provokes a crash, a disconnect or a slow dial wants to continue
once the server is, say, ``reconnecting``: not after a fixed sleep, which is
either too long or, on a loaded machine, too short. :func:`wait_for_state`
checks every snapshot the session makes (:meth:`Session.wait_for
<wave_actors.Session.wait_for>`, so even a state held only for a moment is
seen) and returns the first status in a wanted state; when the time is up it
says what it waited for and what it saw last.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from wave_actors import ServerState, ServerStatus, Session, SessionSnapshot, WaveActorsError

__all__ = ["StateNotReached", "wait_for_state"]


class StateNotReached(AssertionError):
    """:func:`wait_for_state` gave up: the server did not reach a wanted state.

    An :class:`AssertionError`, so that a test runner reports it as the failed
    expectation it is.

    :param server: the server's name.
    :param wanted: the states waited for.
    :param last: the last status seen, or ``None`` if the session never listed the server.
    :param why: ``"within N s"`` or ``"before its session closed"``.
    """

    def __init__(self, server: str, wanted: Sequence[ServerState], last: ServerStatus | None, why: str) -> None:
        self.server = server
        self.wanted = tuple(wanted)
        self.last = last
        states = " or ".join(state.value for state in self.wanted)
        super().__init__(f"server {server!r} did not become {states} {why}; last seen: {_seen(last)}")


def _seen(status: ServerStatus | None) -> str:
    if status is None:
        return "not in the session"
    seen = f"{status.state.value} (generation {status.generation}"
    if status.error:
        seen += f", error: {status.error}"
    return seen + ")"


async def wait_for_state(session: Session, name: str, *states: ServerState, timeout: float = 10.0) -> ServerStatus:
    """Wait until server ``name`` of ``session`` is in one of ``states``; its status at that moment.

    Returns at once if it is already. A server the session does not list (yet,
    or any more) is waited for like any other.

    :param session: the session holding the server.
    :param name: the server's name.
    :param states: the states to wait for, at least one.
    :param timeout: seconds to wait at most.
    :returns: the first status seen in one of ``states``.
    :raises StateNotReached: after ``timeout`` seconds, or when the session
        closes first, naming the server, the states and the last status seen.
    :raises ValueError: if no state is given.
    """
    if not states:
        raise ValueError(f"wait_for_state(session, {name!r}) needs at least one state to wait for")
    last: ServerStatus | None = None

    def reached(snapshot: SessionSnapshot) -> bool:
        nonlocal last
        last = next((status for status in snapshot.servers if status.name == name), None)
        return last is not None and last.state in states

    try:
        with trio.fail_after(timeout):
            snapshot = await session.wait_for(reached)
    except trio.TooSlowError:
        raise StateNotReached(name, states, last, f"within {timeout:g} s") from None
    except WaveActorsError:
        raise StateNotReached(name, states, last, "before its session closed") from None
    return snapshot.server(name)
