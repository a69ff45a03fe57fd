"""Progress notifications, delivered to the call that asked for them alone (R-TOOL-10).

Unit tests of ``wave_actors._transport.progress`` on SDK message objects, then
the same over a real stdio connection to the fault server (the http and sse
transports are in ``test_transport_remote_sessions.py``).
"""

from __future__ import annotations

import functools

import trio
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCResponse
from presets import FAST_TRANSPORT

from wave_actors import ServerConfig, Source
from wave_actors._transport import open_connection
from wave_actors._transport.answers import oversized_answer
from wave_actors._transport.failures import Failure, classify
from wave_actors._transport.progress import ProgressCallback, ProgressRoutes
from wave_actors.testing import entry_command, fault_server_entry

Update = tuple[float, float | None, str | None]


def progress(token: object, value: object, total: object = None, message: object = None) -> SessionMessage:
    params = {"progressToken": token, "progress": value, "total": total, "message": message}
    return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=params))


def collector(into: list[Update]) -> ProgressCallback:
    def on_progress(value: float, total: float | None, message: str | None) -> None:
        into.append((value, total, message))

    return on_progress


def test_progress_goes_to_the_route_of_its_token_and_no_further() -> None:
    routes = ProgressRoutes("s")
    first: list[Update] = []
    second: list[Update] = []
    with routes.route(collector(first)) as one, routes.route(collector(second)) as two:
        assert one != two
        assert routes.deliver(progress(one, 1, 4, "a"))
        assert routes.deliver(progress(two, 2))
        assert routes.deliver(progress(one, 2.5, 4))
    assert first == [(1.0, 4.0, "a"), (2.5, 4.0, None)]
    assert second == [(2.0, None, None)]


def test_anything_else_goes_on_untouched() -> None:
    routes = ProgressRoutes("s")
    with routes.route(collector([])) as token:
        assert not routes.deliver(progress("another-token", 1))
        assert not routes.deliver(progress(token, True))  # not a number
        assert not routes.deliver(progress(["unhashable"], 1))
        assert not routes.deliver(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={})))
        assert not routes.deliver(ValueError("a transport error"))
    assert not routes.deliver(progress(token, 1))  # the call is over


def test_an_oversized_answer_is_its_own_failure_naming_the_limit() -> None:
    answer = oversized_answer(9, 1024).message
    assert isinstance(answer, JSONRPCError) and answer.id == 9
    raised = MCPError(code=answer.error.code, message=answer.error.message, data=answer.error.data)
    assert classify(raised) is Failure.TOO_LARGE
    assert "limit of 1024 bytes" in str(raised) and "max_message_bytes" in str(raised)


async def test_progress_over_stdio_reaches_its_own_call_in_order() -> None:
    entry = fault_server_entry(progress_tool=True)
    config = ServerConfig(
        name="f",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type="stdio",
        command=entry_command(entry)[0],
        args=tuple(entry_command(entry)[1:]),
    )
    first: list[Update] = []
    second: list[Update] = []
    with trio.fail_after(20):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:

            async def run(steps: int, into: list[Update]) -> None:
                result = await connection.call_tool(
                    "progress", {"steps": steps}, timeout=10, on_progress=collector(into)
                )
                assert result.content[0].text == f"{steps} steps"  # type: ignore[union-attr]  # pyright: ignore[reportAttributeAccessIssue]

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run, 4, first)
                nursery.start_soon(run, 6, second)
                nursery.start_soon(functools.partial(connection.call_tool, "progress", {"steps": 3}, timeout=10))
    assert first == [(float(step), 4.0, f"step {step} of 4") for step in range(1, 5)]
    assert second == [(float(step), 6.0, f"step {step} of 6") for step in range(1, 7)]
