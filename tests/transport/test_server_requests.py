"""Requests a server sends its client: answered in order, a bounded number at a time, and a flood closes the connection.

Unit tests of ``wave_actors._transport.server_requests`` on SDK message
objects, then a real stdio connection to the fault server, which sends
100 000 ``ping`` requests in the middle of a call without reading its stdin.

R-TOOL-13.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
from presets import FAST_TRANSPORT
from process_support import HostPeaks
from transport_support import config_for

from wave_actors import ServerUnavailable
from wave_actors._transport import open_connection
from wave_actors._transport.server_requests import MAX_UNANSWERED, ServerRequests
from wave_actors.testing import fault_server_entry

FLOOD = 100_000


def ping(request_id: int | str) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="ping"))


class Recorder:
    """A write stream that keeps what it is sent; it blocks while ``open`` is not set."""

    def __init__(self) -> None:
        self.sent: list[SessionMessage] = []
        self.open = trio.Event()

    async def send(self, item: SessionMessage) -> None:
        await self.open.wait()
        self.sent.append(item)


def test_only_requests_of_the_server_are_taken() -> None:
    requests = ServerRequests("s", lambda reason: None)
    notification = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed"))
    answer = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    assert not requests.received(notification)
    assert not requests.received(answer)
    assert not requests.received(ValueError("a transport error"))
    assert requests.received(ping(1)) and requests.unanswered == 1


async def test_pings_are_answered_in_order_and_other_methods_are_refused() -> None:
    requests = ServerRequests("s", lambda reason: None)
    recorder = Recorder()
    recorder.open.set()
    sampling = JSONRPCRequest(jsonrpc="2.0", id=4, method="sampling/createMessage", params={"messages": []})
    async with trio.open_nursery() as nursery:
        requests.attach(nursery, recorder)
        for request_id in ("a", 2, "c"):
            requests.received(ping(request_id))
        requests.received(SessionMessage(sampling))
        await trio.testing.wait_all_tasks_blocked()
        assert requests.unanswered == 0
        assert not nursery.child_tasks  # nothing left to answer: no task
        requests.received(ping(5))
        await trio.testing.wait_all_tasks_blocked()
    answers = [item.message for item in recorder.sent]
    assert [answer.id for answer in answers] == ["a", 2, "c", 4, 5]  # type: ignore[union-attr]  # pyright: ignore[reportAttributeAccessIssue]
    assert all(isinstance(answer, JSONRPCResponse) and answer.result == {} for answer in [*answers[:3], answers[4]])
    refused = answers[3]
    assert isinstance(refused, JSONRPCError) and refused.error.code == -32601
    assert "sampling/createMessage" in refused.error.message


async def test_one_request_more_than_the_bound_is_a_flood_reported_once() -> None:
    reasons: list[str] = []
    requests = ServerRequests("s", reasons.append)
    recorder = Recorder()  # never opened: the server reads none of its answers
    async with trio.open_nursery() as nursery:
        requests.attach(nursery, recorder)
        for request_id in range(MAX_UNANSWERED):
            assert requests.received(ping(request_id))
        await trio.testing.wait_all_tasks_blocked()
        assert reasons == [] and not requests.flooded and requests.unanswered == MAX_UNANSWERED
        for request_id in range(MAX_UNANSWERED, 3 * MAX_UNANSWERED):
            assert requests.received(ping(request_id))  # taken, never handed to the SDK
        assert requests.flooded and requests.unanswered == MAX_UNANSWERED
        [reason] = reasons
        assert f"more than {MAX_UNANSWERED} requests ('ping' and others)" in reason and "flood" in reason
        nursery.cancel_scope.cancel()


async def test_a_flood_of_pings_mid_call_closes_the_connection_naming_it_and_costs_neither_tasks_nor_memory() -> None:
    # The server sends 100 000 pings in the middle of a call without reading its stdin.
    config = config_for(fault_server_entry(ping_flood=FLOOD))
    with trio.fail_after(30):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            peaks = HostPeaks()
            async with trio.open_nursery() as sampler:
                sampler.start_soon(peaks.sample)
                started = trio.current_time()
                with pytest.raises(ServerUnavailable, match="flood") as raised:
                    await connection.call_tool("flood", {}, timeout=20)
                failed_after = trio.current_time() - started
                sampler.cancel_scope.cancel()
            assert "server 'fault'" in str(raised.value)
            assert f"more than {MAX_UNANSWERED} requests ('ping' and others)" in await connection.wait_lost()
    assert peaks.added_tasks <= 5, peaks
    assert peaks.added_rss < 32 * 1024 * 1024, peaks
    assert failed_after < 10


async def test_a_few_pings_mid_call_are_answered_and_the_call_completes() -> None:
    config = config_for(fault_server_entry(ping_flood=MAX_UNANSWERED, tools=1))
    with trio.fail_after(20):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            result = await connection.call_tool("flood", {}, timeout=10)
            assert result.content[0].text == f"sent {MAX_UNANSWERED} pings"  # type: ignore[union-attr]
            result = await connection.call_tool("tool_1", {"text": "after"}, timeout=10)
            assert result.content[0].text == "tool_1: after"  # type: ignore[union-attr]
            assert not connection.lost
