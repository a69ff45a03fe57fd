"""The client that the MCP conformance suite drives: ``python -m conformance.driver URL``.

The suite starts a test server for a scenario, runs this command with the
server's URL as the last argument and the scenario's name in
``MCP_CONFORMANCE_SCENARIO``, then judges what the server saw. The driver does
what a host does, through the public ``wave_actors`` API only: open a session
with one remote entry, connect (``initialize`` and the first ``tools/list``),
call the tools the scenario names, and leave the session, which closes the
connection. With ``--transport sse`` or ``--transport http`` it also drives
servers outside the suite (the runner uses it on server-everything).

Exit codes: 0 every step held; 1 a step failed (the reason goes to stderr);
2 bad arguments or an unknown scenario.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from wave_actors import ServerState, Session, SessionOptions, WaveActorsError, open_session

SERVER = "conformance"
SCENARIO_VARIABLE = "MCP_CONFORMANCE_SCENARIO"


@attrs.frozen
class Call:
    """One tool call a scenario expects, and the text its result must contain.

    :param tool: the tool's raw name on the server.
    :param arguments: the call's arguments.
    :param expect: a piece of text the result's content must hold (empty: any result).
    """

    tool: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    expect: str = ""


# What each client scenario of the suite expects of a client beyond connect,
# list and close. A scenario missing here is refused (exit 2), so a new one is
# looked at before it is run.
SCENARIO_CALLS: dict[str, tuple[Call, ...]] = {
    "initialize": (),
    # The server checks the arguments arrived and adds them.
    "tools_call": (Call("add_numbers", {"a": 5, "b": 3}, expect="8"),),
    # The server ends the call's event stream after a priming event with
    # `retry: 500`; the client must resume with GET and Last-Event-ID, and the
    # result arrives on the resumed stream.
    "sse-retry": (Call("test_reconnection", expect="Reconnection test completed"),),
    # server-everything, driven by the runner outside the suite.
    "server-everything": (Call("echo", {"message": "conformance"}, expect="conformance"),),
}


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m conformance.driver", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("url", help="the server's URL (the suite appends it)")
    parser.add_argument(
        "--scenario",
        default=os.environ.get(SCENARIO_VARIABLE, ""),
        help=f"the scenario (default: ${SCENARIO_VARIABLE}); one of {', '.join(SCENARIO_CALLS)}",
    )
    parser.add_argument("--transport", choices=("http", "sse"), default="http", help="the entry's type")
    parser.add_argument("--dial-timeout", type=float, default=15.0, help="seconds the connect may take")
    # Below the suite's own client timeout, so that a hang reads as the driver's message, not a kill.
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds the whole run may take")
    return parser.parse_args(argv)


def result_text(result: Any) -> str:
    """The text parts of a ``CallToolResult``, joined."""
    return "\n".join(str(getattr(part, "text", "")) for part in result.content)


async def run_calls(session: Session, calls: Sequence[Call]) -> list[str]:
    """Connect, check the listing holds every tool the calls need, and make the calls in order.

    :returns: one line per step that did not hold (empty: all held).
    """
    problems: list[str] = []
    status = await session.connect(SERVER)
    print(f"connected: generation {status.generation}, {len(status.tools)} tools")
    names = {tool.tool: tool.name for tool in status.tools}
    for call in calls:
        if call.tool not in names:
            problems.append(f"tools/list has no {call.tool!r}; listed: {', '.join(sorted(names)) or 'none'}")
            continue
        result = await session.call_tool(names[call.tool], dict(call.arguments))
        text = result_text(result)
        print(f"called {call.tool}: is_error={result.is_error} {text[:200]!r}")
        if result.is_error:
            problems.append(f"{call.tool} answered with a tool error: {text[:500]}")
        elif call.expect not in text:
            problems.append(f"{call.tool} answered {text[:500]!r}, which lacks {call.expect!r}")
    if session.server(SERVER).state is not ServerState.CONNECTED:
        problems.append(f"the server ended {session.server(SERVER).state.value}: {session.server(SERVER).error}")
    return problems


async def drive(url: str, transport: str, calls: Sequence[Call], dial_timeout: float) -> list[str]:
    """One session with one remote entry, in a scratch workdir and home so no configuration file is read."""
    with tempfile.TemporaryDirectory(prefix="wave-conformance-") as scratch:
        async with open_session(
            workdir=Path(scratch),
            home=Path(scratch) / "home",
            mcp_servers={SERVER: {"type": transport, "url": url}},
            options=SessionOptions(dial_timeout=dial_timeout),
        ) as session:
            # Caught here, in the session's block: past it, the session's nursery wraps it in a group.
            try:
                problems = await run_calls(session, calls)
            except WaveActorsError as error:
                problems = [f"{type(error).__name__}: {error}"]
        print("closed")
        return problems


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    calls = SCENARIO_CALLS.get(arguments.scenario)
    if calls is None:
        known = ", ".join(SCENARIO_CALLS)
        print(f"driver: unknown scenario {arguments.scenario!r}; known: {known}", file=sys.stderr)
        return 2

    async def bounded() -> list[str]:
        with trio.fail_after(arguments.deadline):
            return await drive(arguments.url, arguments.transport, calls, arguments.dial_timeout)

    try:
        problems = trio.run(bounded)
    except trio.TooSlowError:
        print(f"driver: {arguments.scenario}: not done after {arguments.deadline:g} s", file=sys.stderr)
        return 1
    except WaveActorsError as error:
        print(f"driver: {arguments.scenario}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"driver: {arguments.scenario}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
