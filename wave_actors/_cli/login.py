"""``wave-actors login`` and ``logout``: log in to a remote server that requires OAuth, or remove its login (R-AUTH, R-CLI).

``login SERVER`` opens a session on the configuration (as ``tools`` does),
dials the server so that the login starts from what it says when it asks,
and starts :meth:`Session.login <wave_actors.Session.login>`: it prints the
authorization URL, opens a browser when one is available, and waits on the
login's loopback listener; with ``--manual`` it listens nowhere and reads
the URL the browser ended on (or the code it showed) from standard input,
for a browser on another machine. Then the server connects, and the command
says so. ``logout SERVER`` removes the login in every process of the
machine; it needs no session. Neither ever prints a token.

Exit codes: 0 logged in (out); 1 the login failed, expired or was refused,
or the credential store cannot be used; 2 an unknown or unusable server
(not remote, a machine client that needs no login).
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Any, TextIO, cast

from wave_actors._cli.arguments import configured_options, credentials, home
from wave_actors._config import TransportType
from wave_actors._console import EXIT_OK, EXIT_USAGE, PROGRAM, fail, printable, write_json

if TYPE_CHECKING:
    from wave_actors._auth.login import LoginFlow

__all__ = ["add_login_commands", "login", "logout"]


def add_login_commands(commands: Any, output: argparse.ArgumentParser) -> None:
    """Register ``login`` and ``logout`` on the command's subparsers.

    :param commands: the ``add_subparsers`` object.
    :param output: the ``--json`` parent parser.
    """
    configured = configured_options()
    login_command = commands.add_parser(
        "login",
        parents=[configured, output],
        help="log in to a remote SERVER that requires OAuth",
        description="Log in to SERVER: print the authorization URL, open a browser when one is available, and wait "
        "for the browser to come back to a listener on this machine (--manual: paste the URL it ended on instead). "
        "The login is kept in the credential store (--credentials), never in a configuration file; then the server "
        "is connected. A login not completed in ten minutes expires.",
    )
    login_command.add_argument("server", metavar="SERVER")
    login_command.add_argument(
        "--manual",
        action="store_true",
        help="listen nowhere: paste the URL the browser ended on (or the code it shows) on standard input",
    )
    login_command.add_argument("--no-browser", action="store_true", help="print the URL, do not open a browser")
    login_command.add_argument(
        "--redirect-uri", default=None, metavar="URI", help="where the browser comes back, instead of the entry's"
    )
    logout_command = commands.add_parser(
        "logout",
        parents=[configured, output],
        help="remove the login of SERVER, in every process of this machine",
        description="Remove SERVER's OAuth login from the credential store, in every process of this machine: "
        "logins in progress can no longer be saved, and refreshes in flight are dropped. The configuration is "
        "untouched.",
    )
    logout_command.add_argument("server", metavar="SERVER")


async def login(arguments: argparse.Namespace, out: TextIO) -> int:
    """Log in to SERVER, then connect it.

    :param arguments: the parsed command line.
    :param out: where the URL and the outcome go.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: an unusable server (exit 2), or a login that failed (exit 1).
    """
    import trio

    from wave_actors._cli.session_commands import check_usable, command_session
    from wave_actors._errors import LoginRequired, WaveActorsError

    name = cast(str, arguments.server)
    manual = cast(bool, arguments.manual)
    async with command_session(arguments) as session:
        check_usable(session, name)
        if session.server(name).type not in (TransportType.HTTP.value, TransportType.SSE.value):
            fail(f"server {name!r} is a {session.server(name).type} server: only remote servers log in", EXIT_USAGE)
        try:
            await session.connect(name)  # what the server says when it asks is where the login starts
            already = True
        except LoginRequired:
            already = False
        except WaveActorsError:
            already = False  # the login says better what is wrong, if it is about the login
        try:
            async with (
                session.login(name, listen=not manual, redirect_uri=cast(str | None, arguments.redirect_uri)) as flow,
                trio.open_nursery() as browser,
            ):
                _announce(flow, out, already=already, as_json=cast(bool, arguments.json))
                if not manual and not arguments.no_browser:
                    # A browser command may stay until its window closes: the login does not wait for it.
                    browser.start_soon(
                        functools.partial(trio.to_thread.run_sync, abandon_on_cancel=True),
                        _open_browser,
                        flow.authorization_url,
                    )
                if manual:
                    pasted = await trio.to_thread.run_sync(_read_pasted, flow.server)
                    await flow.complete(pasted)
                status = await flow.wait()
                browser.cancel_scope.cancel()
        except WaveActorsError as error:
            fail(error)
    state = status.state.value if status is not None else "stored"
    if arguments.json:
        write_json({"server": name, "logged_in": True, "state": state}, out)
    else:
        tools = f", {len(status.tools)} tools" if status is not None and status.tools else ""
        out.write(f"logged in to {printable(name)}; the server is {state}{tools}\n")
    return EXIT_OK


def _announce(flow: LoginFlow, out: TextIO, *, already: bool, as_json: bool) -> None:
    if as_json:
        write_json({"server": flow.server, "authorization_url": flow.authorization_url}, out)
    else:
        if already:
            out.write(f"{printable(flow.server)} is connected already; logging in again\n")
        out.write(
            f"To log in to {printable(flow.server)}, open this URL in a browser:\n\n  {flow.authorization_url}\n\n"
        )
        if flow.listening:
            out.write(f"Waiting for the browser to come back to {flow.redirect_uri} (Ctrl-C to give up) ...\n")
    out.flush()


def _open_browser(url: str) -> None:
    """Open ``url`` in a browser when one is available; nothing happens otherwise (the URL is printed)."""
    import webbrowser

    try:
        webbrowser.open(url)
    except Exception:  # no browser, no display: the URL is on the terminal
        pass


def _read_pasted(server: str) -> str:
    sys.stderr.write(f"{PROGRAM}: paste the URL the browser ended on for {server} (or the code it shows): ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line.strip():
        fail("nothing was pasted; the login was not completed")
    return line.strip()


async def logout(arguments: argparse.Namespace, out: TextIO) -> int:
    """Remove SERVER's login from the credential store, in every process of this machine.

    :param arguments: the parsed command line.
    :param out: where the outcome goes.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: the credential store cannot be written (exit 1).
    """
    from wave_actors._auth import Credentials
    from wave_actors._errors import WaveActorsError

    name = cast(str, arguments.server)
    try:
        removed = await Credentials(home(arguments), credentials(arguments)).logout(name)
    except WaveActorsError as error:
        fail(error)
    if arguments.json:
        write_json({"server": name, "logged_out": removed}, out)
    else:
        out.write(f"logged out of {printable(name)}\n" if removed else f"{printable(name)} had no login\n")
    return EXIT_OK
