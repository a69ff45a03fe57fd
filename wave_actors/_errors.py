"""The exceptions wave-actors raises, and nothing else.

Every error a host can see from this library is a :class:`WaveActorsError`.
Transport failures from the MCP SDK, anyio, httpx or the operating system are
mapped at the boundary (``transport``) so that callers never have to know which
library a failure came from. Each message names the server, file or field
involved and, where there is one, what to do about it.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "CredentialStoreError",
    "DialError",
    "EntryChanged",
    "LoginExpired",
    "LoginFailed",
    "LoginRequired",
    "LoginSuperseded",
    "ServerDisabled",
    "ServerUnavailable",
    "ToolCallError",
    "ToolTimeout",
    "UnknownServer",
    "UnknownTool",
    "WaveActorsError",
]


class WaveActorsError(Exception):
    """Base class of every error raised by wave-actors."""


class ConfigError(WaveActorsError):
    """A configuration entry, file or edit is invalid.

    Raised when a server is *used* with a configuration that cannot work (an
    unknown ``type`` at connect time, R-CFG-3) and by configuration edits.
    Loading configuration never raises this: problems found while loading are
    reported as diagnostics and the offending source or entry is skipped
    (R-CFG-4).
    """


class ServerUnavailable(WaveActorsError):
    """The server has no live connection to carry a request.

    It may be disconnected, reconnecting, in error, or its transport may have
    been lost while the request was in flight (R-RACE-4). A request that fails
    this way was not answered; whether the server saw it is unknown, and it is
    never replayed.
    """


class DialError(ServerUnavailable):
    """Opening a transport to a server failed (spawn, handshake or network)."""


class EntryChanged(WaveActorsError):
    """A call required the server's entry it was approved for, and the server's entry is another now (R-TOOL-11).

    Raised by :meth:`Session.call_tool <wave_actors.Session.call_tool>` given
    ``expected_fingerprint``, when the server's current entry has another
    fingerprint (R-CFG-8): a reload or a reconfigure changed what runs under
    that name since the caller looked. Nothing was sent. Look again (the
    server's status has the new fingerprint) before calling it.

    :param server: the server's name.
    :param expected: the fingerprint the caller expected.
    :param current: the fingerprint of the server's entry now.
    """

    def __init__(self, message: str, *, server: str = "", expected: str = "", current: str = "") -> None:
        super().__init__(message)
        self.server = server
        self.expected = expected
        self.current = current


class ServerDisabled(WaveActorsError):
    """The server is configured with ``enabled: false`` and cannot be connected (R-CFG-6)."""


class ToolCallError(WaveActorsError):
    """The server answered a tool call with a protocol error, or with a result the SDK rejected.

    Unlike :class:`ServerUnavailable`, the connection is fine: the server
    refused this request (invalid params, say) or broke its own declared
    output schema. A tool that *fails* answers with ``isError`` instead, which
    is returned as a result (R-TOOL-6).

    :param code: the JSON-RPC error code, when the server sent one.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class ToolTimeout(WaveActorsError):
    """A tool call ran past its server's ``tool_timeout_ms`` (R-TOOL-4).

    The request was cancelled on the server (``notifications/cancelled``) and is
    never replayed.
    """


class UnknownServer(WaveActorsError):
    """No server of that name is configured in this session."""


class UnknownTool(WaveActorsError):
    """No tool of that name is known in this session."""


class LoginRequired(ServerUnavailable):
    """The server asks for an OAuth login, or for more scope than the login granted, before it serves (R-AUTH-2).

    Raised by a connect (the server is left ``needs_login``) and by a call the
    server refused for its scope (a step-up: the connection stays up). The
    request was refused, not processed, and is never replayed. Start a login
    with :meth:`Session.login <wave_actors.Session.login>`; the server connects
    by itself once it completes.

    :param server: the server's name.
    :param scope: the scope the server asked for, when it said.
    """

    def __init__(self, message: str, *, server: str = "", scope: str | None = None) -> None:
        super().__init__(message)
        self.server = server
        self.scope = scope


class LoginFailed(WaveActorsError):
    """A login did not complete: discovery, registration, the browser step or the token exchange failed (R-AUTH-2).

    Credentials stored before the login are kept as they were (R-AUTH-3).
    """


class LoginExpired(LoginFailed):
    """A login was not completed within its time (ten minutes): its listener is closed and it can no longer complete."""


class LoginSuperseded(LoginFailed):
    """A newer login of the same server, or a logout, came after this login started: it is not saved (R-AUTH-3)."""


class CredentialStoreError(WaveActorsError):
    """The credential store cannot be used: the keyring is missing, locked or failing, or a file cannot be written.

    Never answered by falling back to another store (R-AUTH-3).
    """
