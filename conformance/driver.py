"""The client that the MCP conformance suite drives: ``python -m conformance.driver URL``.

The suite starts a test server for a scenario, runs this command with the
server's URL as the last argument and the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` (and what the scenario gives the client, such as
a registered client's id and secret, as JSON in ``MCP_CONFORMANCE_CONTEXT``),
then judges what the server saw. The driver does what a host does, through
the public ``wave_actors`` API only: open a session with one remote entry,
connect (``initialize`` and the first ``tools/list``), call the tools the
scenario names, and leave the session, which closes the connection. With
``--transport sse`` or ``--transport http`` it also drives servers outside the
suite (the runner uses it on server-everything).

For the ``auth/*`` scenarios it is a host whose user logs in: when a connect
or a call raises ``LoginRequired``, it starts ``session.login``, plays the
browser (opens the authorization URL, which the suite's authorization server
approves at once, and follows the redirect to the login's loopback
listener), waits for the login, and tries again; at most three logins per
run, so a server that keeps asking ends the run. Logins are kept in a file
store in a scratch home.

Exit codes: 0 every step held; 1 a step failed (the reason goes to stderr);
2 bad arguments or an unknown scenario.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from wave_actors import LoginRequired, ServerState, Session, SessionOptions, WaveActorsError, open_session

SERVER = "conformance"
SCENARIO_VARIABLE = "MCP_CONFORMANCE_SCENARIO"
CONTEXT_VARIABLE = "MCP_CONFORMANCE_CONTEXT"

# The client metadata document URL the suite's authorization servers accept as a client id
# (they never fetch it); used only by a server that says it takes such documents.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

# How many logins one run may start: a server that keeps refusing after that is refused for good.
MAX_LOGINS = 3


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

# The OAuth scenarios: a login, then the suite's protected server's one tool. Their
# authorization servers approve at once and check what the client sent.
AUTH_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
)
SCENARIO_CALLS.update({name: (Call("test-tool"),) for name in AUTH_SCENARIOS})


def oauth_settings(scenario: str, context: Mapping[str, Any]) -> dict[str, Any] | None:
    """The entry's ``oauth`` object for a scenario: what its context gives a client, else a metadata document URL.

    :param scenario: the scenario's name.
    :param context: the suite's ``MCP_CONFORMANCE_CONTEXT`` (empty when it gives none).
    """
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/client-credentials-basic":
        return {
            "grant_type": "client_credentials",
            "client_id": context["client_id"],
            "client_secret": context["client_secret"],
        }
    if scenario == "auth/client-credentials-jwt":
        return {
            "grant_type": "client_credentials",
            "client_id": context["client_id"],
            "private_key": context["private_key_pem"],
        }
    if "client_id" in context:
        return {"client_id": context["client_id"], "client_secret": context["client_secret"]}
    return {"client_metadata_url": CLIENT_METADATA_URL}


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


class Logins:
    """The user who logs in when the server asks: at most :data:`MAX_LOGINS` times in a run."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.started = 0

    async def log_in(self, why: LoginRequired) -> None:
        """Log in (the browser approves at once); raise ``why`` when the run's logins are spent."""
        if self.started >= MAX_LOGINS:
            raise why
        self.started += 1
        print(f"login {self.started}: {why}")
        async with self._session.login(SERVER) as login:
            await browse(login.authorization_url)
            status = await login.wait()
        print(f"logged in: {status.state.value if status is not None else 'stored'}")


async def browse(url: str) -> None:
    """Be the browser: open the authorization URL and follow its redirect to the login's loopback listener."""
    import httpx2

    async with httpx2.AsyncClient() as client:
        approved = await client.get(url)
        location = approved.headers.get("location")
        if approved.status_code not in (301, 302, 303, 307, 308) or location is None:
            raise WaveActorsError(f"the authorization server answered {approved.status_code}, not a redirect")
        back = await client.get(location)
        if back.status_code != 200:
            raise WaveActorsError(f"the login's listener answered {back.status_code}: {back.text[:200]}")


async def connect(session: Session, logins: Logins) -> Any:
    """Connect the server, logging in whenever it asks."""
    while True:
        try:
            return await session.connect(SERVER)
        except LoginRequired as why:
            await logins.log_in(why)
            status = session.server(SERVER)
            if status.state is ServerState.CONNECTED:
                return status


def result_text(result: Any) -> str:
    """The text parts of a ``CallToolResult``, joined."""
    return "\n".join(str(getattr(part, "text", "")) for part in result.content)


async def run_calls(session: Session, calls: Sequence[Call]) -> list[str]:
    """Connect, check the listing holds every tool the calls need, and make the calls in order.

    A server that asks for a login (to connect, or for more scope on a call)
    gets one, and the connect or the call is made again.

    :returns: one line per step that did not hold (empty: all held).
    """
    problems: list[str] = []
    logins = Logins(session)
    status = await connect(session, logins)
    print(f"connected: generation {status.generation}, {len(status.tools)} tools")
    names = {tool.tool: tool.name for tool in status.tools}
    for call in calls:
        if call.tool not in names:
            problems.append(f"tools/list has no {call.tool!r}; listed: {', '.join(sorted(names)) or 'none'}")
            continue
        while True:
            try:
                result = await session.call_tool(names[call.tool], dict(call.arguments))
                break
            except LoginRequired as why:  # a step-up: more scope for this call
                await logins.log_in(why)
        text = result_text(result)
        print(f"called {call.tool}: is_error={result.is_error} {text[:200]!r}")
        if result.is_error:
            problems.append(f"{call.tool} answered with a tool error: {text[:500]}")
        elif call.expect not in text:
            problems.append(f"{call.tool} answered {text[:500]!r}, which lacks {call.expect!r}")
    if session.server(SERVER).state is not ServerState.CONNECTED:
        problems.append(f"the server ended {session.server(SERVER).state.value}: {session.server(SERVER).error}")
    return problems


async def drive(
    url: str, transport: str, calls: Sequence[Call], dial_timeout: float, oauth: Mapping[str, Any] | None = None
) -> list[str]:
    """One session with one remote entry, in a scratch workdir and home so no configuration file is read."""
    entry: dict[str, Any] = {"type": transport, "url": url}
    if oauth is not None:
        entry["oauth"] = dict(oauth)
    with tempfile.TemporaryDirectory(prefix="wave-conformance-") as scratch:
        async with open_session(
            workdir=Path(scratch),
            home=Path(scratch) / "home",
            mcp_servers={SERVER: entry},
            options=SessionOptions(dial_timeout=dial_timeout),
            credentials="file",
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

    context: dict[str, Any] = json.loads(os.environ.get(CONTEXT_VARIABLE) or "{}")
    oauth = oauth_settings(arguments.scenario, context)

    async def bounded() -> list[str]:
        with trio.fail_after(arguments.deadline):
            return await drive(arguments.url, arguments.transport, calls, arguments.dial_timeout, oauth)

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
