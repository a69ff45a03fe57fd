"""How a server's login stands, as a host or the command line shows it, without any token (R-AUTH-3).

:class:`LoginStatus` is read from the record that coordinates the processes
of the machine (:class:`~wave_actors._auth.records.LoginRecord`), never from
the credential store: showing it needs no keyring, and it can never show a
secret. Pure: no I/O.
"""

from __future__ import annotations

import enum
import time

import attrs

from wave_actors._auth.records import LoginRecord, resource_digest, resource_of

__all__ = ["LoginState", "LoginStatus", "login_status"]


class LoginState(str, enum.Enum):
    """Where a server's login stands."""

    NONE = "none"
    """Nothing is known: no login was made, and the server never asked for one."""
    NEEDS_LOGIN = "needs_login"
    """The server asked for a login (or for more scope), the login is for another URL, or it expired for good."""
    LOGGED_IN = "logged_in"
    """A login for this server's URL is stored; its tokens are valid or can be refreshed."""


@attrs.frozen
class LoginStatus:
    """A server's login at one moment; never a token.

    :param state: where it stands.
    :param reason: for ``needs_login``, why.
    :param expires_at: when the access token expires (wall-clock, ``time.time()``), if said.
    :param refreshable: the tokens can be refreshed without a login.
    :param scope: the scope granted.
    """

    state: LoginState
    reason: str | None = None
    expires_at: float | None = None
    refreshable: bool = False
    scope: str | None = None

    @property
    def display(self) -> str:
        """One line: ``needs login: <why>``, ``logged in (expires 2025-06-01 14:05)``, or empty for ``none``."""
        if self.state is LoginState.NEEDS_LOGIN:
            return f"needs login: {self.reason}" if self.reason else "needs login"
        if self.state is LoginState.NONE:
            return ""
        if self.expires_at is None:
            return "logged in"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.expires_at))
        refresh = ", refreshed when needed" if self.refreshable else ""
        return f"logged in (expires {when}{refresh})"


_NOTHING = LoginStatus(LoginState.NONE)


def login_status(record: LoginRecord | None, url: str | None, *, now: float | None = None) -> LoginStatus:
    """The status a record gives a server whose entry has ``url``.

    :param record: the server's record, ``None`` when it has none.
    :param url: the entry's URL (a stdio server has none, and no login).
    :param now: wall-clock time (default: now).
    """
    if record is None or url is None:
        return _NOTHING
    if record.present:
        if record.resource_digest != resource_digest(resource_of(url)):
            return LoginStatus(
                LoginState.NEEDS_LOGIN, reason="the login was made for another URL; log in again for this one"
            )
        now = time.time() if now is None else now
        if record.expires_at is not None and now >= record.expires_at and not record.refreshable:
            return LoginStatus(LoginState.NEEDS_LOGIN, reason="the login expired", scope=record.scope)
        if record.needs_login is None:
            return LoginStatus(
                LoginState.LOGGED_IN,
                expires_at=record.expires_at,
                refreshable=record.refreshable,
                scope=record.scope,
            )
    if record.needs_login is not None:
        return LoginStatus(LoginState.NEEDS_LOGIN, reason=record.needs_login, scope=record.scope)
    return _NOTHING
