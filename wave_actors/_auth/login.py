"""A login in progress, as the host holds it: the authorization URL, the callback, the outcome (R-AUTH-2).

:class:`LoginFlow` is what :meth:`Session.login <wave_actors.Session.login>`
and :meth:`Host.login <wave_actors.Host.login>` yield; the steps behind it
(the listener, the MCP SDK's flow, the store) are :mod:`.flow`'s. It decides
about callbacks itself: only one whose ``state`` is this login's is taken,
and one that says the authorization server refused ends the login.

No SDK import: :mod:`wave_actors` exports this class.
"""

from __future__ import annotations

import logging
import secrets
from typing import Final, final
from urllib.parse import parse_qsl, urlsplit

import attrs
import trio

from wave_actors._auth.listener import Callback, CallbackVerdict
from wave_actors._errors import LoginFailed
from wave_actors._status import ServerStatus
from wave_actors._surface import NoPublicConstructor

__all__ = ["CallbackAnswer", "LoginFlow"]

logger = logging.getLogger(__name__)

_ACCEPTED: Final = "The login is complete; you can close this window."


@attrs.frozen
class CallbackAnswer:
    """The authorization server's answer the browser brought back: the code, with the state and issuer it came with.

    :param code: the authorization code (a secret until exchanged).
    :param state: the ``state`` it came with.
    :param iss: the issuer it named (RFC 9207), if it did.
    """

    code: str = attrs.field(repr=False)
    state: str | None = None
    iss: str | None = None


@final
class LoginFlow(metaclass=NoPublicConstructor):
    """A login in progress, from :meth:`Session.login <wave_actors.Session.login>` (R-AUTH-2).

    Show :attr:`authorization_url` to the user (or open a browser on it).
    The login completes from the loopback listener (:attr:`listening`), or
    from :meth:`complete` given the callback URL the browser ended on (or
    the code it showed). :meth:`wait` returns once the login is stored and
    the server connected.

    ``LoginFlow(...)`` raises :class:`TypeError`: a login is started by a session or a host.
    """

    def __init__(self, server: str, *, listening: bool, deadline: float, cancel_scope: trio.CancelScope) -> None:
        self._server = server
        self._listening = listening
        self._deadline = deadline
        self._cancel_scope = cancel_scope
        self._authorization_url: str | None = None
        self._redirect_uri = ""
        self._state: str | None = None
        self._url_known = trio.Event()
        self._answer: CallbackAnswer | None = None
        self._answered = trio.Event()
        self._finished = trio.Event()
        self._stopped = trio.Event()  # its listener and exchange are gone
        self._failure: BaseException | None = None
        self._result: ServerStatus | None = None
        self._refused_callbacks = 0

    def __repr__(self) -> str:
        # The authorization URL carries the state and the PKCE challenge: named, not shown.
        return f"<LoginFlow server={self._server!r} listening={self._listening} finished={self._finished.is_set()}>"

    @property
    def server(self) -> str:
        """The server being logged in to."""
        return self._server

    @property
    def authorization_url(self) -> str:
        """Where the user logs in: open it in a browser, or show it."""
        assert self._authorization_url is not None
        return self._authorization_url

    @property
    def redirect_uri(self) -> str:
        """Where the browser is sent back to when the user has logged in."""
        return self._redirect_uri

    @property
    def listening(self) -> bool:
        """Whether a loopback listener of this process waits for the browser at :attr:`redirect_uri`."""
        return self._listening and not self._stopped.is_set()

    @property
    def deadline(self) -> float:
        """The ``trio.current_time()`` at which the login expires (ten minutes after it started)."""
        return self._deadline

    @property
    def finished(self) -> bool:
        """Whether the login ended: stored, failed, expired or cancelled."""
        return self._finished.is_set()

    @property
    def refused_callbacks(self) -> int:
        """How many callbacks were refused because their ``state`` was not this login's."""
        return self._refused_callbacks

    async def complete(self, response: str) -> None:
        """Complete the browser step with what the browser ended on: the callback URL, or the code it showed.

        A URL is checked like a callback to the listener: its ``state`` must
        be this login's. Returns once the code is handed over; :meth:`wait`
        says how the exchange went.

        :param response: the whole callback URL (or its query), or the bare authorization code.
        :raises LoginFailed: the URL's ``state`` is not this login's (the login goes on
            waiting), the authorization server refused the login (its ``error``), or the
            login already has its answer or ended.
        :raises LoginExpired: the login's ten minutes are over.
        """
        if self._finished.is_set():
            self._raise_finished()
        if self._answer is not None:
            raise LoginFailed(f"server {self._server!r}: this login already has its answer")
        text = response.strip()
        if not text:
            raise LoginFailed(f"server {self._server!r}: the callback is empty")
        if "=" in text or "?" in text or "://" in text:
            verdict = self._callback(Callback(_query_parameters(text)))
            if not verdict.accepted:
                raise LoginFailed(f"server {self._server!r}: {verdict.message}")
        else:
            self._deliver(CallbackAnswer(code=text, state=self._state))
        await trio.lowlevel.checkpoint()

    async def wait(self) -> ServerStatus | None:
        """Wait until the login is stored (and the server connected); return what the login's owner made of it.

        :raises LoginFailed: discovery, registration, the browser step or the token exchange failed,
            or the login was cancelled; what was stored before is kept.
        :raises LoginExpired: it did not complete within ten minutes.
        :raises LoginSuperseded: a newer login or a logout of the server came after it started.
        """
        await self._finished.wait()
        await self._stopped.wait()
        if self._failure is not None:
            raise self._failure
        return self._result

    def cancel(self) -> None:
        """End the login now: its listener closes and it can no longer complete. Idempotent."""
        self._finish(failure=LoginFailed(f"server {self._server!r}: the login was cancelled"))

    # The flow's side.

    def _raise_finished(self) -> None:
        if self._failure is not None:
            raise self._failure
        raise LoginFailed(f"server {self._server!r}: this login is already complete")

    def _finish(self, *, failure: BaseException | None = None, result: ServerStatus | None = None) -> None:
        if self._finished.is_set():
            return
        self._failure, self._result = failure, result
        self._finished.set()
        self._url_known.set()
        self._cancel_scope.cancel()

    async def _publish(self, url: str) -> None:
        """The SDK's redirect handler: the authorization URL is known."""
        state = dict(parse_qsl(urlsplit(url).query)).get("state")
        self._authorization_url, self._state = url, state
        self._url_known.set()

    async def _await_answer(self) -> CallbackAnswer:
        """The SDK's callback handler: wait for the browser's answer (the flow's deadline bounds it)."""
        await self._answered.wait()
        assert self._answer is not None
        return self._answer

    def _deliver(self, answer: CallbackAnswer) -> None:
        self._answer = answer
        self._answered.set()

    def _callback(self, callback: Callback) -> CallbackVerdict:
        """Decide about a callback (from the listener or :meth:`complete`)."""
        parameters = callback.parameters
        state = parameters.get("state")
        if self._finished.is_set():
            return CallbackVerdict(False, "This login has ended; start a new one.")
        if self._state is None or state is None or not secrets.compare_digest(state, self._state):
            self._refused_callbacks += 1
            logger.warning("server %r: a login callback with another state was refused", self._server)
            return CallbackVerdict(False, "This page does not belong to the login in progress (state mismatch).")
        if self._answer is not None:
            return CallbackVerdict(True, _ACCEPTED)
        if "error" in parameters:
            said = parameters["error"]
            description = parameters.get("error_description")
            detail = f"{said}: {description}" if description else said
            self._finish(failure=LoginFailed(f"server {self._server!r}: the authorization server refused: {detail}"))
            return CallbackVerdict(False, f"The login failed: {detail}")
        code = parameters.get("code")
        if not code:
            return CallbackVerdict(False, "The callback carries no authorization code.")
        self._deliver(CallbackAnswer(code=code, state=state, iss=parameters.get("iss")))
        return CallbackVerdict(True, _ACCEPTED)


def _query_parameters(text: str) -> dict[str, str]:
    query = urlsplit(text).query if "://" in text else text.lstrip("?")
    parameters: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        parameters.setdefault(key, value)
    return parameters
