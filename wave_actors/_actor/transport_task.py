"""One transport attempt of one server: dial, report, serve until lost.

:func:`run_transport` is the body of the supervisor's transport child, one call
per generation. It knows nothing of the actor: everything it learns goes out
through one callback, ``report``, as the state machine's messages
(:class:`~wave_actors._actor.messages.Up` carrying the live connection,
:class:`~wave_actors._actor.messages.ToolsListed`,
:class:`~wave_actors._actor.messages.Lost`,
:class:`~wave_actors._actor.messages.DialFailed`), each tagged with its
generation. Leaving it, for any reason, leaves
:func:`~wave_actors._transport.open_connection`, which reclaims the server's
processes before it returns (R-KILL-1, R-KILL-2).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from wave_actors._actor.messages import DialFailed, LoginNeeded, Lost, Message, ToolsListed, Up
from wave_actors._config import ServerConfig
from wave_actors._errors import LoginRequired, ServerUnavailable, WaveActorsError
from wave_actors._listing import ServerTool
from wave_actors._transport import Connection, TransportOptions, open_connection

if TYPE_CHECKING:
    import mcp_types

    from wave_actors._auth.credentials import Credentials
__all__ = ["ConnectionLost", "list_server_tools", "run_transport"]

logger = logging.getLogger(__name__)


class ConnectionLost(Exception):
    """Raised by a transport attempt whose connection ended: the supervisor restarts it (R-RACE-4)."""


def _server_tool(tool: mcp_types.Tool) -> ServerTool:
    annotations = tool.annotations
    return ServerTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=tool.input_schema,
        read_only_hint=None if annotations is None else annotations.read_only_hint,
    )


async def list_server_tools(connection: Connection) -> tuple[tuple[ServerTool, ...], tuple[str, ...]]:
    """The server's tools, each name once, and what the listing skipped (R-TOOL-1, R-TOOL-9).

    A duplicate name would break the model's whole request; a tool the SDK
    rejects is skipped with a warning, and the server keeps the others.

    :returns: ``(tools, warnings)``.
    """
    if connection.initialize_result.capabilities.tools is None:
        return (), ()  # a server without tools (prompts or resources only) is still a server
    listing = await connection.list_tools()
    tools: dict[str, ServerTool] = {}
    for tool in listing.tools:
        if tool.name in tools:
            logger.warning("server %r lists tool %r twice; the first is kept", connection.server, tool.name)
            continue
        tools[tool.name] = _server_tool(tool)
    return tuple(tools.values()), listing.skipped


async def run_transport(
    config: ServerConfig,
    generation: int,
    *,
    retried: Callable[[], bool],
    dial_timeout: float,
    options: TransportOptions,
    report: Callable[[Message], None],
    credentials: Credentials | None = None,
) -> None:
    """One transport attempt: dial, report ``Up``, serve until lost.

    A lost connection reports ``Lost`` and raises :class:`ConnectionLost`, so
    the supervisor restarts it with backoff (R-RACE-4). A failed dial reports
    ``DialFailed``, then asks ``retried`` (the state machine's
    :func:`~wave_actors._actor.machine.failure_retried`): raised when it is
    retried, returned when it is final, so the supervisor does not restart
    it (R-DIAL-4). A dial refused for want of an OAuth login reports
    ``LoginNeeded`` and returns: it is never retried (R-AUTH-2).

    :param config: the server's entry, ``cwd`` resolved.
    :param generation: this attempt's generation; every report carries it (R-RACE-1).
    :param retried: whether a failed dial is retried, asked when it fails.
    :param dial_timeout: seconds for spawn, handshake and the first tool listing.
    :param options: transport settings.
    :param report: receives every message, synchronously; must not block.
    :param credentials: where a remote server's OAuth login is (R-AUTH-1).
    """
    refresh = _RefreshDue()

    up = False
    dial_scope = trio.CancelScope(deadline=trio.current_time() + dial_timeout)
    try:
        with dial_scope:
            async with open_connection(
                config, options=options, on_notification=refresh.notice, credentials=credentials
            ) as connection:
                tools, warnings = await list_server_tools(connection)
                dial_scope.deadline = math.inf
                up = True
                info = connection.initialize_result.server_info
                purpose = info.description or info.title or None
                instructions, now = connection.instructions, time.time()
                report(Up(generation, tools, instructions, now, connection, warnings, purpose, config.fingerprint))
                why = await _serve(connection, generation, refresh, dial_timeout, report)
                reason = f"server {config.name!r}: connection lost: {why}"
                report(Lost(generation, reason))
                raise ConnectionLost(reason)
        reason = f"server {config.name!r}: no answer within the dial timeout of {dial_timeout:g} s"
    except LoginRequired as error:
        if up:
            report(Lost(generation, str(error)))
            raise ConnectionLost(str(error)) from error
        report(LoginNeeded(generation, str(error)))
        return  # only a login dials it again
    except (WaveActorsError, OSError) as error:
        reason = str(error)
        if up:
            report(Lost(generation, reason))
            raise ConnectionLost(reason) from error
    except ConnectionLost:
        raise  # the ordinary end of a connection; the supervisor restarts it
    except Exception as error:
        # Not a server's misbehaviour but ours: say so loudly. It is still
        # contained (a failed dial, or a restart), so it cannot take the host down.
        logger.exception("server %r: unexpected error in transport generation %d", config.name, generation)
        if up:
            raise
        reason = f"server {config.name!r}: connect failed: unexpected {type(error).__name__}: {error}"
    retry = retried()
    report(DialFailed(generation, reason))
    if retry:
        raise ConnectionLost(reason)


class _RefreshDue:
    """Whether the server said its tools changed since the last listing; wakes the serving task.

    A flag, not a queue: a storm of notifications coalesces into one refresh.
    """

    __slots__ = ("_due", "_waiting")

    def __init__(self) -> None:
        self._due = False
        self._waiting: Connection | None = None

    def notice(self, notification: mcp_types.ServerNotification) -> None:
        """A server notification: a refresh is due if it says the tools changed."""
        if getattr(notification, "method", None) == "notifications/tools/list_changed":
            self.request()

    def request(self) -> None:
        self._due = True
        if self._waiting is not None:
            self._waiting.wake()

    async def wait_or_lost(self, connection: Connection) -> str | None:
        """Wait for a refresh request (``None``) or the loss of ``connection`` (why it was lost)."""
        if not self._due:
            self._waiting = connection
            try:
                while not self._due:
                    if (lost := await connection.wait_lost_or_woken()) is not None:
                        return lost
            finally:
                self._waiting = None
        self._due = False
        return None


async def _serve(
    connection: Connection,
    generation: int,
    refresh: _RefreshDue,
    refresh_timeout: float,
    report: Callable[[Message], None],
) -> str:
    """Keep the tool list fresh until the connection is lost; return why it was (R-RACE-7).

    In the transport's own task: a refresh needs no task of its own.
    """
    while (lost := await refresh.wait_or_lost(connection)) is None:
        listed: tuple[tuple[ServerTool, ...], tuple[str, ...]] | None = None
        with trio.move_on_after(refresh_timeout):
            try:
                listed = await list_server_tools(connection)
            except ServerUnavailable:
                continue  # the loss is reported by wait_lost
            except WaveActorsError as error:
                logger.warning("server %r: refreshing tools failed: %s", connection.server, error)
        if listed is not None:
            report(ToolsListed(generation, *listed))
    return lost
