"""The fault-injection matrix: every fault, hitting while each kind of operation is in flight.

R-RACE-2..5, R-KILL-1..4, R-DIAL-4..6, R-TOOL-4..6, R-HOST-4.

Every cell runs the same frame (:func:`test_fault_matrix`): a host with two
sessions. Session ``faulty`` holds the misbehaving server ``faulty`` next to a
healthy stdio server ``healthy``; session ``bystander`` holds one healthy
server. The cell provokes its fault while its operation is in flight and
asserts the faulty server's state and a clear error (the message names the
server and says what happened: exit code, signal, timeout). Then the frame
checks, for every cell:

- the healthy server of the same session still answers a call, never
  re-dialed (for ``destroy`` cells the cell calls it while the fault is in
  progress, just before destroying: afterwards it is gone with its session);
- the bystander session's server still answers, same generation as before;
- once both sessions are destroyed, no fault server and no grandchild is
  alive, checked at once, with no settling time (the suite's autouse fixture
  checks again, ``setsid`` grandchildren included).

Operations (what is in flight when the fault hits):

- ``dial``: a dial of the faulty server: the lazy dial of ``prepare_turn``,
  an explicit ``connect``, or the reconnect dial that follows a loss. For
  faults that can only hit an established connection (a crash mid-call, a
  hung call, a huge response) the cell checks the dial around the fault: the
  reconnect after it, or that re-dialing and dialing another server are not
  held up by it.
- ``call``: a tool call on the faulty server is running when the fault hits.
- ``disconnect``: an explicit ``disconnect`` of the faulty server is issued
  at the moment of the fault.
- ``destroy``: ``host.destroy_session`` while the fault is in progress.

Two rows go beyond the faults the specification lists: ``sse_killed`` (the ``http_killed`` cells over SSE) and
``reconnect_hang`` (the first dial works, every reconnect dial hangs in
``initialize``: a reconnect is bounded like any dial, calls fail fast
meanwhile, disconnect and destroy cancel it).

``http_restarted`` brings the server back at the same URL while the session
reconnects. ``serve_reference_server`` binds a fresh ephemeral port at every
start, so that cell runs the reference server itself on a port picked up
front (``fault_matrix_support.FixedPortServer``).

What the matrix found about reporting a lost connection is pinned in
``tests/runtime/test_connection_loss_reporting.py``.

Combinations left out (``LEFT_OUT``, pinned by
:func:`test_the_matrix_covers_every_fault_and_operation_but_the_ones_left_out`), and why:

- ``exit_on_start`` x ``call``, ``init_hang`` x ``call``: the server never
  completes its handshake, so no call can be in flight. That a call on the
  failed server fails at once, with a clear error, is checked in the ``dial``
  cell.
- ``ignore_sigterm`` x ``call``: ignoring SIGTERM changes nothing until the
  server is stopped; a call in flight while it is stopped is exactly what the
  ``disconnect`` and ``destroy`` cells run.
- ``stderr_flood`` x ``call``: the flood is written before the server reads
  its first request, so no call can overlap it.
- ``http_restarted`` has only ``dial`` (the reconnect to the restarted
  server); its other operations are the ``http_killed`` cells'.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from fault_matrix_support import (
    FAULTY_MARK,
    HANG_DIAL_TIMEOUT,
    HANGING,
    HEALTHY_MARK,
    MATRIX,
    FixedPortServer,
    fixed_port_server,
    gated_entry,
    grandchild_processes,
    kill,
    reference_server_pids,
    server_processes,
    snapshot_where,
)
from mcp_types import CallToolResult, TextContent
from polling import poll_until
from session_support import assert_stays

from supervisors import Backoff, RestartIntensity
from wave_actors import (
    DialError,
    Host,
    ServerState,
    ServerStatus,
    ServerUnavailable,
    Session,
    SessionOptions,
    ToolTimeout,
    UnknownTool,
    WaveActorsError,
)
from wave_actors.testing import (
    CRASH_AFTER_CALLS_EXIT_CODE,
    fault_server_entry,
    is_alive,
    serve_reference_server,
    wait_for_state,
)

FAULTY = "faulty"
HEALTHY = "healthy"

# How long a cell watches that nothing comes back after a disconnect: several
# times the longest reconnect backoff of MATRIX, so a wrong reconnect would show.
QUIET_WINDOW = 0.45
# Upper bound for operations that should be quick (a destroy, a disconnect):
# generous for a loaded 2-core machine, still far below any timeout in play.
PROMPT = 3.0
# A hang that no test waits out.
FOREVER = 30

CONNECTED, CONNECTING, RECONNECTING, ERROR, DISCONNECTED = (
    ServerState.CONNECTED,
    ServerState.CONNECTING,
    ServerState.RECONNECTING,
    ServerState.ERROR,
    ServerState.DISCONNECTED,
)


def text_of(result: CallToolResult) -> str:
    """The text of a successful tool result of one text block."""
    assert not result.is_error, result
    (block,) = result.content
    assert isinstance(block, TextContent), block
    return block.text


def assert_clear(message: str | None, *what: str) -> None:
    """``message`` names the faulty server and says each of ``what``."""
    assert message is not None, "no error message"
    assert f"'{FAULTY}'" in message, f"the message does not name the server: {message!r}"
    for fragment in what:
        assert fragment in message, f"{fragment!r} missing from {message!r}"


@attrs.define(eq=False)
class Flight:
    """A tool call running in the background; its outcome once it ends."""

    tool: str
    done: trio.Event = attrs.Factory(trio.Event)
    result: str | None = None  # the text it answered
    error: WaveActorsError | None = None

    async def outcome(self, timeout: float = PROMPT) -> Flight:
        with trio.fail_after(timeout):
            await self.done.wait()
        return self

    async def failed(self, error_type: type[WaveActorsError] = ServerUnavailable, timeout: float = PROMPT) -> str:
        """Wait for the call to end and return its error message; it must have failed with ``error_type``."""
        await self.outcome(timeout)
        assert isinstance(self.error, error_type), f"call {self.tool!r} ended with {self.error!r} / {self.result!r}"
        return str(self.error)


@attrs.define(eq=False)
class Matrix:
    """What a cell works with: the host, both sessions, a nursery for background calls."""

    host: Host
    session: Session
    bystander: Session
    nursery: trio.Nursery
    tmp_path: Path
    log: pytest.LogCaptureFixture
    http_server: FixedPortServer | None = None
    peer_checked: bool = False
    peer_generation: int | None = None

    @property
    def faulty(self) -> ServerStatus:
        return self.session.server(FAULTY)

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Call ``tool`` on the faulty server; the text it answered."""
        return text_of(await self.session.call_tool(f"mcp__{FAULTY}__{tool}", arguments or {}))

    async def start_call(self, tool: str, arguments: Mapping[str, Any] | None = None, *, settle: bool = True) -> Flight:
        """Start a call on the faulty server in the background; ``settle``: return once it is sent and waiting."""
        flight = Flight(tool)

        async def run() -> None:
            try:
                flight.result = await self.call(tool, arguments)
            except WaveActorsError as error:
                flight.error = error
            finally:
                flight.done.set()

        self.nursery.start_soon(run)
        if settle:
            await trio.testing.wait_all_tasks_blocked(cushion=0.02)
        return flight

    def start(self, function: Callable[..., Awaitable[object]], *args: object) -> None:
        self.nursery.start_soon(function, *args)

    async def faulty_server_info(self) -> dict[str, Any]:
        """The fault server's own view: pid, process group, session, grandchildren."""
        return json.loads(await self.call("pid"))

    async def reconnected(self, generation: int) -> ServerStatus:
        """The faulty server's status once it is connected again on a generation newer than ``generation``."""
        snapshot = await snapshot_where(
            self.session,
            lambda snapshot: (
                snapshot.server(FAULTY).state is CONNECTED and snapshot.server(FAULTY).generation > generation
            ),
        )
        return snapshot.server(FAULTY)

    def faulty_pid(self) -> int:
        (process,) = server_processes(FAULTY_MARK)
        return process.pid

    async def faulty_pid_once_spawned(self) -> int:
        """The pid of the faulty server, once its dial has spawned it and is waiting for the handshake."""
        # trio spawns in a worker thread, and a task waiting for a thread counts as blocked: check the process too.
        await trio.testing.wait_all_tasks_blocked(cushion=0.02)
        await poll_until(
            lambda: len(server_processes(FAULTY_MARK)) == 1, limit=PROMPT, what="the faulty server spawned"
        )
        return self.faulty_pid()

    async def call_peer(self) -> None:
        """The healthy server of the faulty session answers, on its first connection (R-HOST-4)."""
        status = self.session.server(HEALTHY)
        assert status.state is CONNECTED and status.error is None, status
        if self.peer_generation is None:
            self.peer_generation = status.generation
        assert status.generation == self.peer_generation, "the healthy server was re-dialed"
        with trio.fail_after(PROMPT):
            result = await self.session.call_tool(f"mcp__{HEALTHY}__echo", {"text": "still here"})
        assert text_of(result) == "still here"
        self.peer_checked = True

    async def destroy(self, *, within: float = PROMPT) -> float:
        """Destroy the faulty session; it must be gone, processes included, the moment destroy returns."""
        started = trio.current_time()
        await self.host.destroy_session(self.session.id)
        elapsed = trio.current_time() - started
        assert self.session.closed
        assert [s.id for s in self.host.sessions()] == [self.bystander.id]
        assert server_processes(FAULTY_MARK) == [], "destroy returned before reclaiming the faulty server"
        assert elapsed < within, f"destroy took {elapsed:.2f} s"
        return elapsed

    async def disconnect(self, *, within: float = PROMPT) -> float:
        """Disconnect the faulty server; it must stay down and be gone the moment disconnect returns."""
        started = trio.current_time()
        status = await self.session.disconnect(FAULTY)
        elapsed = trio.current_time() - started
        assert status.state is DISCONNECTED and status.manually_disconnected, status
        assert server_processes(FAULTY_MARK) == [], "disconnect returned before reclaiming the faulty server"
        assert elapsed < within, f"disconnect took {elapsed:.2f} s"
        return elapsed

    async def stays_disconnected(self) -> None:
        """No reconnect and no lazy dial brings the faulty server back (R-RACE-3, R-DIAL-6)."""
        await assert_stays(
            self.session,
            FAULTY,
            lambda status: status.state is DISCONNECTED and status.manually_disconnected and not status.tools,
            duration=QUIET_WINDOW,
        )
        await self.session.prepare_turn()
        assert self.faulty.state is DISCONNECTED
        assert server_processes(FAULTY_MARK) == []


Scenario = Callable[[Matrix], Awaitable[None]]


@attrs.frozen
class Cell:
    scenario: Scenario
    entry: Callable[[Path], dict[str, Any]]  # the faulty server's entry, from the test's tmp_path
    options: SessionOptions
    served: str | None  # for HTTP rows: "streamable-http" or "sse" (serve_reference_server), or "fixed-port"


# Per fault: the faulty server's fault_server_entry() keywords, or, for the HTTP rows, how the SDK's
# reference server is run.
FAULTS: dict[str, dict[str, Any] | str] = {
    "exit_on_start": {"exit_on_start": 7},
    "crash_mid_call": {},
    "crash_idle": {},
    "init_hang": {"init_delay": FOREVER},
    "call_hang": {},
    "ignore_sigterm": {"ignore_sigterm": True, "exit_on_eof": False},
    "grandchild": {"grandchild": True, "setsid_grandchild": True},
    "garbage_stdout": {"garbage_stdout": True},
    "stderr_flood": {"stderr_flood": 5_000_000},
    "huge_response": {"huge_response": 5_000_000},
    "list_changed_storm": {"list_changed_every": 0.01},
    "http_killed": "streamable-http",
    "sse_killed": "sse",
    "http_restarted": "fixed-port",
    # The first dial works; every reconnect dial hangs in initialize (see _reconnect_hang_entry).
    "reconnect_hang": {},
}
OPERATIONS = ("dial", "call", "disconnect", "destroy")

CELLS: dict[tuple[str, str], Cell] = {}


def cell(
    fault: str,
    operation: str,
    *,
    options: SessionOptions = MATRIX,
    tool_timeout_ms: int | None = None,
    entry: Callable[[Path], dict[str, Any]] | None = None,
    **keywords: Any,
) -> Callable[[Scenario], Scenario]:
    """Register a scenario as the matrix cell ``fault`` x ``operation``.

    ``keywords`` add to the fault's fault_server_entry() keywords; ``entry`` replaces the entry altogether.
    """
    assert fault in FAULTS and operation in OPERATIONS and (fault, operation) not in CELLS
    base = FAULTS[fault]

    def default_entry(tmp_path: Path) -> dict[str, Any]:
        if isinstance(base, str):
            return {}  # the frame fills in the HTTP server's url
        return fault_server_entry(instructions=FAULTY_MARK, **{**base, **keywords})

    def build(tmp_path: Path) -> dict[str, Any]:
        built = (entry or default_entry)(tmp_path)
        if tool_timeout_ms is not None:
            built["tool_timeout_ms"] = tool_timeout_ms
        return built

    def register(scenario: Scenario) -> Scenario:
        CELLS[(fault, operation)] = Cell(scenario, build, options, served=base if isinstance(base, str) else None)
        return scenario

    return register


# --- exit on start -------------------------------------------------------------------------------


@cell("exit_on_start", "dial")
async def _exit_on_start_dial(m: Matrix) -> None:
    # R-DIAL-4, R-RACE-5: error with the exit code and the stderr tail; not retried by later turns.
    await m.session.prepare_turn()
    status = m.faulty
    assert status.state is ERROR
    assert_clear(status.error, "connect failed", "exited with code 7", "exiting on start")
    assert m.session.server(HEALTHY).state is CONNECTED
    await m.session.prepare_turn()
    assert m.faulty.generation == status.generation and m.faulty.state is ERROR
    # Its tools were never listed: a call is refused at once, saying why.
    with trio.fail_after(PROMPT), pytest.raises(UnknownTool, match=f"'{FAULTY}' is error"):
        await m.call("echo", {"text": "x"})
    # Only an explicit connect retries, and it says what happened.
    with pytest.raises(DialError) as raised:
        await m.session.connect(FAULTY)
    assert_clear(str(raised.value), "exited with code 7")


@cell("exit_on_start", "disconnect")
async def _exit_on_start_disconnect(m: Matrix) -> None:
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING, ERROR)
    await m.disconnect()
    assert m.faulty.error is None
    await m.stays_disconnected()


@cell("exit_on_start", "destroy")
async def _exit_on_start_destroy(m: Matrix) -> None:
    await m.session.connect(HEALTHY)
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING, ERROR)
    await m.call_peer()
    await m.destroy()


# A first reconnect that waits long enough for a cell to act while it is pending, short enough to show
# within QUIET_WINDOW if it wrongly happens anyway.
_SLOW_FIRST_RECONNECT = Backoff(initial=0.25, multiplier=2.0, maximum=0.25, jitter=0.0, reset_after=5.0)


# --- crash in the middle of a call ---------------------------------------------------------------


@cell(
    "crash_mid_call",
    "dial",
    # A slower first backoff, so the "reconnecting" window is wide enough to call into.
    options=attrs.evolve(MATRIX, reconnect_backoff=Backoff(initial=0.5, maximum=0.5, jitter=0.0, reset_after=5.0)),
)
async def _crash_mid_call_dial(m: Matrix) -> None:
    # R-RACE-4, R-RACE-5: the crash is seen at once, calls fail fast, the reconnect dial brings it back.
    await m.session.prepare_turn()
    before = m.faulty
    old_pid = m.faulty_pid()
    with pytest.raises(ServerUnavailable) as raised:
        await m.call("crash", {"code": 5})
    assert_clear(str(raised.value), "exited with code 5")
    reconnecting = await wait_for_state(m.session, FAULTY, RECONNECTING)
    assert reconnecting.error is not None and "exited with code 5" in reconnecting.error
    assert [tool.tool for tool in reconnecting.tools] == [tool.tool for tool in before.tools]  # kept while reconnecting
    with trio.fail_after(0.3), pytest.raises(ServerUnavailable) as raised:
        await m.call("echo", {"text": "x"})
    assert_clear(str(raised.value), "reconnecting", "exited with code 5")
    after = await m.reconnected(before.generation)
    assert after.error is None
    assert not is_alive(old_pid)
    assert m.faulty_pid() != old_pid
    assert await m.call("echo", {"text": "back"}) == "back"


@cell("crash_mid_call", "call", crash_after_calls=2)
async def _crash_mid_call_call(m: Matrix) -> None:
    # R-RACE-5, R-TOOL-6: a call in flight fails at once with the exit code, not after its own timeout.
    await m.session.prepare_turn()
    generation = m.faulty.generation
    flight = await m.start_call("sleep", {"seconds": FOREVER})  # call 1
    with pytest.raises(ServerUnavailable) as raised:
        await m.call("echo", {"text": "x"})  # call 2: the server exits on receiving it
    assert_clear(str(raised.value), f"exited with code {CRASH_AFTER_CALLS_EXIT_CODE}")
    assert_clear(await flight.failed(), f"exited with code {CRASH_AFTER_CALLS_EXIT_CODE}")
    await m.reconnected(generation)
    assert await m.call("echo", {"text": "call 1 of the new process"}) == "call 1 of the new process"


@cell("crash_mid_call", "disconnect")
async def _crash_mid_call_disconnect(m: Matrix) -> None:
    # R-RACE-3: the close caused by a disconnect never reconnects, even when the server crashes at that moment.
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})

    async def crash() -> None:
        with pytest.raises(ServerUnavailable, match=f"'{FAULTY}'"):
            await m.call("crash", {"code": 5})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(crash)
        nursery.start_soon(m.disconnect)
    assert_clear(await flight.failed())
    await m.stays_disconnected()


@cell(
    "crash_mid_call",
    "destroy",
    options=attrs.evolve(MATRIX, reconnect_backoff=Backoff(initial=10.0, maximum=10.0, jitter=0.0, reset_after=5.0)),
)
async def _crash_mid_call_destroy(m: Matrix) -> None:
    # R-RACE-2: destroyed while the reconnect waits out a long backoff: destroy does not wait for it.
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    with pytest.raises(ServerUnavailable):
        await m.call("crash", {"code": 5})
    await wait_for_state(m.session, FAULTY, RECONNECTING)
    await m.call_peer()
    await m.destroy()
    assert_clear(await flight.failed(), "exited with code 5")


# --- crash while idle (killed from outside) ------------------------------------------------------


@cell("crash_idle", "dial", init_delay=0.5)
async def _crash_idle_dial(m: Matrix) -> None:
    # Killed in the middle of its handshake: the lazy dial fails with the signal, and is not retried.
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING)
    kill(await m.faulty_pid_once_spawned())
    status = await wait_for_state(m.session, FAULTY, ERROR, CONNECTED, timeout=PROMPT)
    assert status.state is ERROR
    assert_clear(status.error, "connect failed", "killed by signal 9")
    # An explicit connect dials again; killed while idle, the reconnect dial brings it back (R-RACE-4, R-RACE-5).
    before = await m.session.connect(FAULTY)
    kill(m.faulty_pid())
    reconnecting = await wait_for_state(m.session, FAULTY, RECONNECTING, timeout=PROMPT)
    assert reconnecting.error is not None and "killed by signal 9" in reconnecting.error
    await m.reconnected(before.generation)
    assert await m.call("echo", {"text": "back"}) == "back"


@cell("crash_idle", "call")
async def _crash_idle_call(m: Matrix) -> None:
    await m.session.prepare_turn()
    generation = m.faulty.generation
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    kill(m.faulty_pid())
    assert_clear(await flight.failed(), "killed by signal 9")
    await m.reconnected(generation)
    assert await m.call("echo", {"text": "back"}) == "back"


@cell("crash_idle", "disconnect", options=attrs.evolve(MATRIX, reconnect_backoff=_SLOW_FIRST_RECONNECT))
async def _crash_idle_disconnect(m: Matrix) -> None:
    # Disconnected the moment the server dies, before the loss is even noticed.
    await m.session.prepare_turn()
    kill(m.faulty_pid())
    await m.disconnect()
    await m.stays_disconnected()
    # Disconnected while the reconnect waits out its backoff: the pending reconnect must not happen (R-RACE-3).
    await m.session.connect(FAULTY)
    kill(m.faulty_pid())
    await wait_for_state(m.session, FAULTY, RECONNECTING, timeout=PROMPT)
    await m.disconnect()
    await m.stays_disconnected()


@cell("crash_idle", "destroy")
async def _crash_idle_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    await m.call_peer()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    kill(m.faulty_pid())
    await m.destroy()
    assert_clear(await flight.failed())


# --- hang in initialize --------------------------------------------------------------------------


@cell("init_hang", "dial", options=HANGING)
async def _init_hang_dial(m: Matrix) -> None:
    # R-DIAL-2, R-DIAL-4: bounded by the dial timeout, then ERROR; the hung process is reclaimed.
    started = trio.current_time()
    await m.session.prepare_turn()
    elapsed = trio.current_time() - started
    assert HANG_DIAL_TIMEOUT <= elapsed < HANG_DIAL_TIMEOUT + PROMPT
    status = m.faulty
    assert status.state is ERROR
    assert_clear(status.error, f"no answer within the dial timeout of {HANG_DIAL_TIMEOUT:g} s")
    assert server_processes(FAULTY_MARK) == []
    assert m.session.server(HEALTHY).state is CONNECTED
    await m.session.prepare_turn()
    assert m.faulty.generation == status.generation  # not retried (R-DIAL-4)


@cell("init_hang", "disconnect")
async def _init_hang_disconnect(m: Matrix) -> None:
    # The disconnect cancels the dial: it does not wait for the handshake or the dial timeout.
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING)
    await m.faulty_pid_once_spawned()
    await m.disconnect()
    await m.stays_disconnected()


@cell("init_hang", "destroy")
async def _init_hang_destroy(m: Matrix) -> None:
    # R-RACE-2: the dial in flight is cancelled and its process reclaimed before destroy returns.
    await m.session.connect(HEALTHY)
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING)
    await m.faulty_pid_once_spawned()
    await m.call_peer()
    await m.destroy()


# --- hang in a call ------------------------------------------------------------------------------


@cell("call_hang", "dial", tool_timeout_ms=1000)
async def _call_hang_dial(m: Matrix) -> None:
    # R-TOOL-5, R-DIAL-3: a hung call holds up neither a re-dial request (reused at once) nor another server's dial.
    connected = await m.session.connect(FAULTY)
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    again = await m.session.connect(FAULTY)
    assert not flight.done.is_set(), "connect waited for the hung call"
    assert again.generation == connected.generation
    with trio.fail_after(PROMPT):
        await m.session.connect(HEALTHY)
    assert_clear(await flight.failed(ToolTimeout), "timed out after 1 s")
    assert m.faulty.state is CONNECTED and m.faulty.generation == connected.generation


@cell("call_hang", "call", tool_timeout_ms=300)
async def _call_hang_call(m: Matrix) -> None:
    # R-TOOL-4, R-TOOL-5: ToolTimeout after tool_timeout_ms, other calls go on, the connection stays usable.
    await m.session.prepare_turn()
    before = m.faulty
    pid = m.faulty_pid()
    started = trio.current_time()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    assert await m.call("echo", {"text": "meanwhile"}) == "meanwhile"
    assert_clear(await flight.failed(ToolTimeout), "timed out after 0.3 s", "will not be retried")
    assert trio.current_time() - started < PROMPT
    assert m.faulty.state is CONNECTED and m.faulty.generation == before.generation
    assert m.faulty_pid() == pid
    assert await m.call("echo", {"text": "after"}) == "after"


@cell("call_hang", "disconnect", tool_timeout_ms=FOREVER * 1000)
async def _call_hang_disconnect(m: Matrix) -> None:
    # R-TOOL-5: a hung call does not block a disconnect; the call fails instead of hanging.
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    await m.disconnect()
    assert_clear(await flight.failed())
    await m.stays_disconnected()


@cell("call_hang", "destroy", tool_timeout_ms=FOREVER * 1000)
async def _call_hang_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    await m.call_peer()
    await m.destroy()
    assert_clear(await flight.failed())


# --- ignores SIGTERM (and stdin EOF) -------------------------------------------------------------

# Reclaiming such a server must escalate: stdin EOF (ignored), SIGTERM (ignored), SIGKILL (R-KILL-1).
_GRACES = MATRIX.transport.graces


@cell("ignore_sigterm", "dial", options=HANGING, init_delay=FOREVER)
async def _ignore_sigterm_dial(m: Matrix) -> None:
    # A hung dial of a server that ignores SIGTERM: bounded by the dial timeout plus the kill stages.
    started = trio.current_time()
    await m.session.prepare_turn()
    elapsed = trio.current_time() - started
    assert HANG_DIAL_TIMEOUT + _GRACES.term <= elapsed < HANG_DIAL_TIMEOUT + _GRACES.total + PROMPT
    assert_clear(m.faulty.error, "no answer within the dial timeout")
    assert m.faulty.state is ERROR
    assert server_processes(FAULTY_MARK) == []


@cell("ignore_sigterm", "disconnect")
async def _ignore_sigterm_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    elapsed = await m.disconnect(within=_GRACES.total + PROMPT)
    assert elapsed >= _GRACES.eof + _GRACES.term, "reclaimed before SIGTERM could have been ignored"
    assert_clear(await flight.failed())
    await m.stays_disconnected()


@cell("ignore_sigterm", "destroy")
async def _ignore_sigterm_destroy(m: Matrix) -> None:
    # Destroyed while a disconnect is already reclaiming the stubborn server: both end, nothing survives.
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    await m.call_peer()
    disconnected = trio.Event()

    async def disconnect() -> None:
        try:
            await m.session.disconnect(FAULTY)
        except WaveActorsError:
            pass  # "session closed" is a fine answer to a disconnect overtaken by destroy
        disconnected.set()

    m.start(disconnect)
    await snapshot_where(m.session, lambda snapshot: snapshot.server(FAULTY).state is DISCONNECTED)
    assert server_processes(FAULTY_MARK), "the server was gone before the destroy: nothing left to race"
    await m.destroy(within=_GRACES.total + PROMPT)
    with trio.fail_after(PROMPT):
        await disconnected.wait()
    assert_clear(await flight.failed())


# --- grandchildren, one of them in its own session -----------------------------------------------


async def _grandchildren(m: Matrix) -> list[int]:
    info = await m.faulty_server_info()
    pids: list[int] = info["grandchildren"]
    assert len(pids) == 2 and all(is_alive(pid) for pid in pids)
    return pids


async def _until_grandchildren_spawned(count: int) -> None:
    await poll_until(lambda: len(grandchild_processes()) >= count, limit=PROMPT, what=f"{count} grandchildren")


@cell("grandchild", "dial", options=HANGING, init_delay=FOREVER)
async def _grandchild_dial(m: Matrix) -> None:
    # R-KILL-1: a dial that times out reclaims the server's grandchildren too, setsid included.
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING)
    await _until_grandchildren_spawned(2)
    status = await wait_for_state(m.session, FAULTY, ERROR, timeout=HANG_DIAL_TIMEOUT + PROMPT)
    assert_clear(status.error, "no answer within the dial timeout")
    assert grandchild_processes() == []


@cell("grandchild", "call")
async def _grandchild_call(m: Matrix) -> None:
    # A crash mid-call orphans the grandchildren; the lost generation's family is reclaimed before the reconnect.
    await m.session.prepare_turn()
    old = await _grandchildren(m)
    generation = m.faulty.generation
    with pytest.raises(ServerUnavailable):
        await m.call("crash", {"code": 5})
    await m.reconnected(generation)
    assert not any(is_alive(pid) for pid in old), "the crashed server's grandchildren outlived it"
    new = await _grandchildren(m)
    assert not set(new) & set(old)


@cell("grandchild", "disconnect")
async def _grandchild_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    pids = await _grandchildren(m)
    await m.disconnect()
    assert not any(is_alive(pid) for pid in pids)
    await m.stays_disconnected()


@cell("grandchild", "destroy")
async def _grandchild_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    pids = await _grandchildren(m)
    await m.call_peer()
    with trio.CancelScope() as scope:
        scope.cancel()  # the caller gives up at once: reclamation still runs to the end first (R-KILL-2)
        await m.host.destroy_session(m.session.id)
    assert m.session.closed
    assert server_processes(FAULTY_MARK) == []
    assert not any(is_alive(pid) for pid in pids)
    assert grandchild_processes() == []


# --- garbage on stdout ---------------------------------------------------------------------------


@cell("garbage_stdout", "dial")
async def _garbage_stdout_dial(m: Matrix) -> None:
    # Non-JSON lines are logged and skipped (R-CFG-9 puts logs on stderr, but servers break that rule).
    m.log.set_level(logging.WARNING)
    await m.session.prepare_turn()
    assert m.faulty.state is CONNECTED
    assert {tool.tool for tool in m.faulty.tools} >= {"echo", "sleep"}
    warnings = [r.getMessage() for r in m.log.records if r.levelno == logging.WARNING]
    assert any(f"'{FAULTY}'" in warning and "not JSON-RPC" in warning for warning in warnings), warnings


@cell("garbage_stdout", "call")
async def _garbage_stdout_call(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": 0.2})
    for index in range(5):
        assert await m.call("echo", {"text": f"#{index}"}) == f"#{index}"
    await flight.outcome()
    assert flight.error is None and flight.result == "slept 0.2"
    assert m.faulty.state is CONNECTED


@cell("garbage_stdout", "disconnect")
async def _garbage_stdout_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    await m.disconnect()
    assert_clear(await flight.failed())
    await m.stays_disconnected()


@cell("garbage_stdout", "destroy")
async def _garbage_stdout_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    await m.call_peer()
    await m.destroy()
    assert_clear(await flight.failed())


# --- stderr flood --------------------------------------------------------------------------------


@cell("stderr_flood", "dial", options=attrs.evolve(MATRIX, dial_timeout=5.0))
async def _stderr_flood_dial(m: Matrix) -> None:
    # stderr is drained while dialing: a server blocked on a full stderr pipe would never answer initialize.
    await m.session.prepare_turn()
    assert m.faulty.state is CONNECTED
    assert await m.call("echo", {"text": "heard"}) == "heard"


@cell("stderr_flood", "disconnect")
async def _stderr_flood_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    await m.disconnect()
    await m.stays_disconnected()


@cell("stderr_flood", "destroy")
async def _stderr_flood_destroy(m: Matrix) -> None:
    # Destroyed while the dial is in flight and the server is flooding.
    await m.session.connect(HEALTHY)
    m.start(m.session.prepare_turn)
    await wait_for_state(m.session, FAULTY, CONNECTING)
    await m.call_peer()
    await m.destroy()


# --- huge response -------------------------------------------------------------------------------

HUGE = 5_000_000


@cell("huge_response", "dial")
async def _huge_response_dial(m: Matrix) -> None:
    # A 5 MB answer in transfer holds up neither a re-dial request nor another server's dial.
    connected = await m.session.connect(FAULTY)
    flight = await m.start_call("echo", {"text": "x"}, settle=False)
    with trio.fail_after(PROMPT):
        assert (await m.session.connect(FAULTY)).generation == connected.generation
        await m.session.connect(HEALTHY)
    await flight.outcome()
    assert flight.error is None and flight.result is not None and len(flight.result) == HUGE


@cell("huge_response", "call", tools=1)
async def _huge_response_call(m: Matrix) -> None:
    await m.session.prepare_turn()
    huge = await m.start_call("echo", {"text": "ab"}, settle=False)
    small = await m.start_call("tool_1", {"text": "small"}, settle=False)
    await huge.outcome()
    await small.outcome()
    assert huge.error is None and huge.result == "ab" * (HUGE // 2)
    assert small.error is None and small.result == "tool_1: small"
    assert m.faulty.state is CONNECTED


@cell("huge_response", "disconnect")
async def _huge_response_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("echo", {"text": "x"}, settle=False)
    await trio.testing.wait_all_tasks_blocked()
    await m.disconnect()
    await flight.outcome()
    # Either the answer made it before the close, whole, or the call failed clearly.
    if flight.error is None:
        assert flight.result is not None and len(flight.result) == HUGE
    else:
        assert isinstance(flight.error, ServerUnavailable)
        assert_clear(str(flight.error))
    await m.stays_disconnected()


@cell("huge_response", "destroy")
async def _huge_response_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("echo", {"text": "x"}, settle=False)
    await trio.testing.wait_all_tasks_blocked()
    await m.call_peer()
    await m.destroy()
    await flight.outcome()
    assert flight.error is None or isinstance(flight.error, ServerUnavailable)


# --- tools/list_changed storm --------------------------------------------------------------------

# Extra tools registered with every list_changed storm cell, for the refreshes to carry.
_STORM_TOOLS = 3


def _storm_tool_names(status: ServerStatus) -> set[str]:
    return {tool.tool for tool in status.tools}


@cell("list_changed_storm", "dial", tools=_STORM_TOOLS)
async def _storm_dial(m: Matrix) -> None:
    # R-RACE-7: the storm is coalesced into refreshes; the server stays connected, and a real change of its
    # tool list still shows up in the middle of the storm.
    await m.session.prepare_turn()
    connected = m.faulty
    assert connected.state is CONNECTED
    await assert_stays(
        m.session,
        FAULTY,
        lambda status: status.state is CONNECTED and _storm_tool_names(status) >= {"echo", "tool_3"},
        duration=QUIET_WINDOW,
    )
    await m.call("notify_list_changed", {"add_tool": "late_tool"})
    await snapshot_where(m.session, lambda snapshot: "late_tool" in _storm_tool_names(snapshot.server(FAULTY)))
    assert m.faulty.generation == connected.generation
    assert await m.call("late_tool", {"text": "new"}) == "late_tool: new"


@cell("list_changed_storm", "call", tools=_STORM_TOOLS)
async def _storm_call(m: Matrix) -> None:
    await m.session.prepare_turn()
    flights = [await m.start_call("echo", {"text": f"#{index}"}, settle=False) for index in range(20)]
    for index in range(20):
        assert await m.call("tool_2", {"text": str(index)}) == f"tool_2: {index}"
    for index, flight in enumerate(flights):
        await flight.outcome()
        assert flight.error is None and flight.result == f"#{index}"
    assert m.faulty.state is CONNECTED


@cell("list_changed_storm", "disconnect", tools=_STORM_TOOLS)
async def _storm_disconnect(m: Matrix) -> None:
    # A refresh of the closed generation must not bring its tools back.
    await m.session.prepare_turn()
    await m.disconnect()
    await m.stays_disconnected()


@cell("list_changed_storm", "destroy", tools=_STORM_TOOLS)
async def _storm_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    await m.call_peer()
    await m.destroy()


# --- HTTP (streamable or SSE) server killed, and restarted ----------------------------------------------------------


def _kill_http_server() -> None:
    (pid,) = reference_server_pids()
    kill(pid)


@cell("sse_killed", "dial")
@cell("http_killed", "dial")
async def _http_killed_dial(m: Matrix) -> None:
    # R-RACE-4: a dropped HTTP server is detected by the heartbeat, retried, then ERROR; a later dial fails fast.
    await m.session.prepare_turn()
    assert m.faulty.state is CONNECTED
    _kill_http_server()
    reconnecting = await wait_for_state(m.session, FAULTY, RECONNECTING, ERROR, timeout=PROMPT)
    assert reconnecting.error is not None
    status = await wait_for_state(m.session, FAULTY, ERROR)
    assert_clear(status.error, "gave up reconnecting")
    with trio.fail_after(PROMPT), pytest.raises(DialError) as raised:
        await m.session.connect(FAULTY)
    assert_clear(str(raised.value), "connect failed")


@cell("sse_killed", "call")
@cell("http_killed", "call")
async def _http_killed_call(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    _kill_http_server()
    assert_clear(await flight.failed())
    await wait_for_state(m.session, FAULTY, RECONNECTING, ERROR, timeout=PROMPT)
    status = await wait_for_state(m.session, FAULTY, ERROR)
    assert_clear(status.error, "gave up reconnecting")


@cell("sse_killed", "disconnect")
@cell("http_killed", "disconnect")
async def _http_killed_disconnect(m: Matrix) -> None:
    await m.session.prepare_turn()
    _kill_http_server()
    await m.disconnect()
    await m.stays_disconnected()


@cell("sse_killed", "destroy")
@cell("http_killed", "destroy")
async def _http_killed_destroy(m: Matrix) -> None:
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    _kill_http_server()
    await wait_for_state(m.session, FAULTY, RECONNECTING, ERROR, timeout=PROMPT)
    await m.call_peer()
    await m.destroy()
    assert_clear(await flight.failed())


@cell(
    "http_restarted",
    "dial",
    # A budget that outlasts the restart of the reference server (about a second).
    options=attrs.evolve(
        MATRIX,
        reconnect_backoff=Backoff(initial=0.1, multiplier=2.0, maximum=0.4, jitter=0.0, reset_after=5.0),
        reconnect_intensity=RestartIntensity(max_restarts=50, period=60.0),
    ),
)
async def _http_restarted_dial(m: Matrix) -> None:
    # The server comes back at the same URL while reconnecting: the reconnect dial picks it up.
    server = m.http_server
    assert server is not None
    await m.session.prepare_turn()
    before = m.faulty
    await server.kill()
    await wait_for_state(m.session, FAULTY, RECONNECTING, timeout=PROMPT)
    await server.start()
    after = await m.reconnected(before.generation)
    assert after.error is None
    assert await m.call("add", {"a": 2, "b": 3}) == "5"


# --- the reconnect dial hangs in initialize ------------------------------------------------------

_HANG_GATE = "hang-on-start"


def _reconnect_hang_entry(tmp_path: Path) -> dict[str, Any]:
    return gated_entry(
        tmp_path, tmp_path / _HANG_GATE, normal={"instructions": FAULTY_MARK}, gated={"init_delay": FOREVER}
    )


async def _lose_then_hang(m: Matrix) -> ServerStatus:
    """Dial, make every later start hang in initialize, kill the server; return once the reconnect hangs."""
    await m.session.prepare_turn()
    connected = m.faulty
    (m.tmp_path / _HANG_GATE).touch()
    kill(m.faulty_pid())
    await wait_for_state(m.session, FAULTY, RECONNECTING, timeout=PROMPT)
    await poll_until(lambda: len(server_processes("--init-delay")) == 1, limit=PROMPT, what="the reconnect spawned")
    return connected


@cell(
    "reconnect_hang",
    "dial",
    entry=_reconnect_hang_entry,
    # One reconnect attempt, then give up. The gate costs a second interpreter start per dial: a little more time.
    options=attrs.evolve(HANGING, dial_timeout=2.0, reconnect_intensity=RestartIntensity(max_restarts=1, period=30.0)),
)
async def _reconnect_hang_dial(m: Matrix) -> None:
    # R-RACE-4: a reconnect dial is bounded by the dial timeout like any dial; past the budget, ERROR.
    await _lose_then_hang(m)
    status = await wait_for_state(m.session, FAULTY, ERROR, timeout=2.0 + PROMPT)
    assert_clear(status.error, "no answer within the dial timeout of 2 s", "gave up reconnecting")
    assert server_processes(FAULTY_MARK) == []


@cell("reconnect_hang", "call", entry=_reconnect_hang_entry)
async def _reconnect_hang_call(m: Matrix) -> None:
    # R-RACE-4: while the reconnect hangs the tools stay listed and calls fail fast, saying why.
    await m.session.prepare_turn()
    flight = await m.start_call("sleep", {"seconds": FOREVER})
    connected = await _lose_then_hang(m)
    assert_clear(await flight.failed(), "killed by signal 9")
    assert [tool.name for tool in m.faulty.tools] == [tool.name for tool in connected.tools]
    with trio.fail_after(0.5), pytest.raises(ServerUnavailable) as raised:
        await m.call("echo", {"text": "x"})
    assert_clear(str(raised.value), "reconnecting", "killed by signal 9")


@cell("reconnect_hang", "disconnect", entry=_reconnect_hang_entry)
async def _reconnect_hang_disconnect(m: Matrix) -> None:
    # The disconnect cancels the hung reconnect dial instead of waiting for its timeout.
    await _lose_then_hang(m)
    await m.disconnect()
    await m.stays_disconnected()


@cell("reconnect_hang", "destroy", entry=_reconnect_hang_entry)
async def _reconnect_hang_destroy(m: Matrix) -> None:
    await _lose_then_hang(m)
    await m.call_peer()
    await m.destroy()


# --- the matrix's own shape --------------------------------------------------------------------

# The combinations the module docstring explains away; everything else is a cell.
LEFT_OUT = {
    ("exit_on_start", "call"),
    ("init_hang", "call"),
    ("ignore_sigterm", "call"),
    ("stderr_flood", "call"),
    ("http_restarted", "call"),
    ("http_restarted", "disconnect"),
    ("http_restarted", "destroy"),
}


def test_the_matrix_covers_every_fault_and_operation_but_the_ones_left_out() -> None:
    every = {(fault, operation) for fault in FAULTS for operation in OPERATIONS}
    assert every - set(CELLS) == LEFT_OUT
    for fault in FAULTS:
        assert (fault, "dial") in CELLS
        assert (fault, "destroy") in CELLS or fault == "http_restarted"


# --- the frame every cell runs in ----------------------------------------------------------------


def _healthy_entry() -> dict[str, object]:
    return fault_server_entry(instructions=HEALTHY_MARK)


MATRIX = sorted(CELLS, key=lambda key: (list(FAULTS).index(key[0]), OPERATIONS.index(key[1])))


@pytest.mark.parametrize(("fault", "operation"), MATRIX, ids=[f"{fault}-{operation}" for fault, operation in MATRIX])
async def test_fault_matrix(fault: str, operation: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cell = CELLS[(fault, operation)]
    async with AsyncExitStack() as stack:
        entry = cell.entry(tmp_path)
        http_server = None
        if cell.served == "fixed-port":
            http_server = await stack.enter_async_context(fixed_port_server())
            entry = {"type": "http", "url": http_server.url, **entry}
        elif cell.served is not None:
            url = await stack.enter_async_context(serve_reference_server(cell.served))  # type: ignore[arg-type]
            entry = {"type": "http" if cell.served == "streamable-http" else "sse", "url": url, **entry}
        host = await stack.enter_async_context(Host.open(home=tmp_path / "home", options=cell.options))
        bystander = await host.create_session(tmp_path, {HEALTHY: _healthy_entry()}, session_id="bystander")
        await bystander.prepare_turn()
        bystander_before = bystander.server(HEALTHY)
        assert bystander_before.state is CONNECTED
        session = await host.create_session(tmp_path, {FAULTY: entry, HEALTHY: _healthy_entry()}, session_id="faulty")

        with trio.fail_after(40):  # the cell, and every call and dial it left running in the background
            async with trio.open_nursery() as nursery:
                m = Matrix(host, session, bystander, nursery, tmp_path, caplog, http_server)
                await cell.scenario(m)
                # The healthy server of the same session still works after the fault.
                if not session.closed:
                    peer = session.server(HEALTHY)
                    if peer.state is DISCONNECTED and peer.generation == 0:
                        await session.connect(HEALTHY)  # the cell never dialed it
                    await m.call_peer()
        assert m.peer_checked, "the cell never checked the healthy server of its session"

        # The other session never noticed.
        after = bystander.server(HEALTHY)
        assert after.state is CONNECTED and after.generation == bystander_before.generation
        result = await bystander.call_tool(f"mcp__{HEALTHY}__echo", {"text": "bystander"})
        assert text_of(result) == "bystander"

        await host.destroy_session(session.id)
        await host.destroy_session(bystander.id)
        assert host.sessions() == []
        assert server_processes() == []
        assert grandchild_processes() == []
