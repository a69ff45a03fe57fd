"""A login the host drives: the authorization URL out, the callback back in, the tokens stored (R-AUTH-2, R-AUTH-3).

:func:`open_login` runs the MCP SDK's OAuth flow (``OAuthClientProvider``:
protected resource and authorization server discovery with the 2025-03-26
fallbacks, scope selection and step-up, dynamic client registration or a
client metadata document or the entry's own client, PKCE, the code exchange
with the client authentication the server asks for) from the refusal the
server last gave (:class:`~wave_actors._auth.challenge.Challenge`), or from
a bare ``401`` when it gave none in this process. What is written here:

- **The host drives the browser step.** The flow stops at the authorization
  URL and yields a :class:`LoginFlow`: the host shows the URL or opens a
  browser; the callback comes back to a loopback listener the flow runs
  (:mod:`.listener`, on the entry's fixed ``redirect_uri`` or a free port),
  or the host passes the callback URL (or the bare code) to
  :meth:`LoginFlow.complete` (browser hosts, redirect URIs that are not this
  machine's). A callback whose ``state`` is not this login's is refused and
  the login goes on waiting.
- **Bounded.** Ten minutes from its start (:data:`LOGIN_TIMEOUT`), a login
  ends: its listener closes and it can no longer complete. Leaving the
  ``async with`` block, or :meth:`LoginFlow.cancel`, ends it the same way.
- **Stored under the rules of the credential store.** Nothing is written
  until the token exchange succeeded; then the login is committed only if it
  is still the newest of its server (a newer login or a logout wins), bound
  to the entry's URL. A failed browser step or exchange leaves what was
  stored as it was.
- **Configured settings win.** The entry's ``scopes`` are asked for in place
  of what the server suggests (a step-up adds what the server asks); a
  client registered in advance authenticates at the token endpoint with the
  method the authorization server lists first of ``client_secret_basic``
  and ``client_secret_post``.

Imports the SDK: imported when a login starts.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final, final
from urllib.parse import urlsplit

import httpx2
import trio
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import LATEST_PROTOCOL_VERSION
from pydantic import ValidationError

from wave_actors._auth.challenge import Challenge
from wave_actors._auth.credentials import Credentials, Vault, vault_of
from wave_actors._auth.listener import loopback_bind, serve_callback
from wave_actors._auth.login import LoginFlow
from wave_actors._auth.provider import (
    TokenStash,
    client_metadata,
    configured_client,
    flow_after_refusal,
    restore_context,
    stored_login,
)
from wave_actors._auth.records import StoredLogin, resource_of
from wave_actors._config import ServerConfig, TransportType, redact_url
from wave_actors._config.model import OAuthGrant, OAuthSettings
from wave_actors._errors import LoginExpired, LoginFailed, WaveActorsError
from wave_actors._status import ServerStatus
from wave_actors._transport.redaction import install_log_redaction, redact_text

__all__ = ["LOGIN_TIMEOUT", "open_login"]

logger = logging.getLogger(__name__)

LOGIN_TIMEOUT: Final = 600.0
"""Seconds a login may take from its start, the browser step included: ten minutes."""

_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})
_DEFAULT_PATH: Final = "/callback"


def _is_loopback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and (parts.hostname or "").lower() in _LOOPBACK


def _free_port(address: str) -> int:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def _loopback_uri(address: str, port: int, path: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}{path}"


class _LoginProvider(OAuthClientProvider):
    """The SDK's OAuth client, with the entry's scopes and its registered client's token endpoint authentication."""

    def __init__(self, *args: object, oauth: OAuthSettings, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # pyright: ignore[reportArgumentType]
        self._oauth = oauth

    async def _perform_authorization(self) -> httpx2.Request:
        configured = self._oauth.scopes
        if configured is not None:
            metadata = self.context.client_metadata
            chosen = " ".join(configured)
            # The SDK chose from the challenge and the metadata; the entry's scopes win, and a step-up adds to them.
            metadata.scope = union_scopes(chosen, metadata.scope) if self._step_up else chosen
        return await super()._perform_authorization()

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        client = self.context.client_info
        oauth = self._oauth
        if client is not None and oauth.client_secret is not None and client.client_id == oauth.client_id:
            metadata = self.context.oauth_metadata
            supported = (metadata.token_endpoint_auth_methods_supported if metadata is not None else None) or []
            method = next(
                (each for each in supported if each in ("client_secret_basic", "client_secret_post")),
                "client_secret_basic",
            )
            self.context.client_info = client.model_copy(update={"token_endpoint_auth_method": method})
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    _step_up = False


@asynccontextmanager
async def open_login(
    config: ServerConfig,
    credentials: Credentials,
    *,
    client_name: str,
    redirect_uri: str | None = None,
    listen: bool = True,
    http_timeout: float = 30.0,
    timeout: float = LOGIN_TIMEOUT,
    on_stored: Callable[[StoredLogin], Awaitable[ServerStatus | None]],
) -> AsyncGenerator[LoginFlow, None]:
    """Start a login of ``config``'s server; yield it once its authorization URL is known.

    The login's listener and its exchange run in tasks of this block: leaving
    it ends the login (its listener closes). An exception of the block is
    raised as it is, never inside a group.

    :param config: an http or sse entry.
    :param credentials: where the login is stored.
    :param client_name: how this client names itself when it registers.
    :param redirect_uri: where the browser comes back; default the entry's
        ``oauth.redirect_uri``, else a loopback URI on a free port (the port of
        the client registered last time, if it is free).
    :param listen: run the loopback listener when the redirect URI is a loopback one.
    :param http_timeout: seconds each request of the flow may take.
    :param timeout: seconds the whole login may take (ten minutes).
    :param on_stored: called with the stored login before :meth:`LoginFlow.wait` returns; its result is returned.
    :raises LoginFailed: the server cannot be logged in to (not remote, a machine
        client), the listener cannot listen, or the flow failed before the URL was known.
    :raises CredentialStoreError: the credential store cannot be used.
    """
    install_log_redaction()  # before the SDK's first record: its HTTP client logs every URL (R-CFG-12)
    name = config.name
    if config.transport not in (TransportType.HTTP, TransportType.SSE) or config.url is None:
        raise LoginFailed(f"server {name!r} is not a remote (http or sse) server: it has no login")
    oauth = config.oauth or OAuthSettings()
    if oauth.grant is OAuthGrant.CLIENT_CREDENTIALS:
        raise LoginFailed(
            f"server {name!r} is a machine client (grant_type client_credentials): it gets its tokens by itself"
        )
    vault = vault_of(credentials)
    found = await vault.read(name)
    base = found[1] if found is not None and found[1].resource == resource_of(config.url) else None
    started = trio.current_time()
    flow: LoginFlow = LoginFlow._create(  # pyright: ignore[reportPrivateUsage]  # the private constructor
        name, listening=False, deadline=started + timeout, cancel_scope=trio.CancelScope()
    )
    steps = _Steps(config, vault, oauth, base, client_name, http_timeout, on_stored)
    held: BaseException | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(steps.run, flow, redirect_uri or oauth.redirect_uri, listen, started + timeout)
        await flow._url_known.wait()  # pyright: ignore[reportPrivateUsage]  # set by a failure too
        if flow._failure is not None:  # pyright: ignore[reportPrivateUsage]
            held = flow._failure  # pyright: ignore[reportPrivateUsage]
        else:
            try:
                yield flow
            except BaseException as error:
                held = error  # raised below, outside the nursery, as it is
            finally:
                flow.cancel()
        nursery.cancel_scope.cancel()
    if held is not None:
        raise held


@final
class _Steps:
    """What a login does, in its own cancel scope: listen, drive the SDK's flow, expire."""

    def __init__(
        self,
        config: ServerConfig,
        credentials: Vault,
        oauth: OAuthSettings,
        base: StoredLogin | None,
        client_name: str,
        http_timeout: float,
        on_stored: Callable[[StoredLogin], Awaitable[ServerStatus | None]],
    ) -> None:
        self._config = config
        self._credentials = credentials
        self._oauth = oauth
        self._base = base
        self._client_name = client_name
        self._http_timeout = http_timeout
        self._on_stored = on_stored

    async def run(self, flow: LoginFlow, fixed: str | None, listen: bool, deadline: float) -> None:
        try:
            with flow._cancel_scope:  # pyright: ignore[reportPrivateUsage]  # cancelled when the login ends
                await self._steps(flow, fixed, listen, deadline)
        finally:
            flow._finish(failure=LoginFailed(f"server {flow.server!r}: the login ended"))  # pyright: ignore[reportPrivateUsage]  # if nothing else did
            flow._stopped.set()  # pyright: ignore[reportPrivateUsage]

    async def _steps(self, flow: LoginFlow, fixed: str | None, listen: bool, deadline: float) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_expire, flow, deadline)
            try:
                uri = await self._listen_or_choose(nursery, flow, fixed, listen)
            except LoginFailed as error:
                flow._finish(failure=error)  # pyright: ignore[reportPrivateUsage]
                return
            flow._redirect_uri = uri  # pyright: ignore[reportPrivateUsage]
            await self._drive(flow, uri)

    async def _listen_or_choose(self, nursery: trio.Nursery, flow: LoginFlow, fixed: str | None, listen: bool) -> str:
        """Start the listener for a loopback redirect URI (and return it with its port), or take the URI as it is."""
        if fixed is not None and not _is_loopback(fixed):
            return fixed  # another machine's: the host passes the callback back
        remembered = None if fixed is not None else _registered_loopback(self._base)
        address, port, path = loopback_bind(fixed or remembered or _loopback_uri("127.0.0.1", 0, _DEFAULT_PATH))
        if not listen:
            return _loopback_uri(address, port or _free_port(address), path)
        try:
            bound: int = await nursery.start(serve_callback, address, port, path, flow._callback)  # pyright: ignore[reportPrivateUsage]
        except OSError as error:
            if fixed is not None:
                raise LoginFailed(
                    f"server {flow.server!r}: cannot listen for the login's callback at {redact_url(fixed)}: "
                    f"{error.strerror or error}"
                ) from None
            # The port of the last registration is taken: a free one, and a new registration.
            bound = await nursery.start(serve_callback, address, 0, path, flow._callback)  # pyright: ignore[reportPrivateUsage]
        flow._listening = True  # pyright: ignore[reportPrivateUsage]
        host = urlsplit(fixed).hostname if fixed is not None else address
        return _loopback_uri(host or address, bound, path)

    async def _drive(self, flow: LoginFlow, redirect_uri: str) -> None:
        """Run the SDK's flow from the server's challenge to the stored login; finish ``flow`` with how it went."""
        config, credentials, oauth, base = self._config, self._credentials, self._oauth, self._base
        name = config.name
        assert config.url is not None
        try:
            ticket = await credentials.begin_login(name)
            challenge = credentials.challenge(name) or Challenge(401)
            client = _client_for(base, oauth, redirect_uri)
            storage = TokenStash(client=client)
            provider = _LoginProvider(
                config.url,
                client_metadata(oauth, client_name=self._client_name, redirect_uri=redirect_uri),
                storage,
                flow._publish,  # pyright: ignore[reportPrivateUsage]
                _answer_of(flow),
                oauth.client_metadata_url,
                oauth=oauth,
            )
            if base is not None:
                # The granted scope (a step-up adds to it) and what discovery found; never a refresh here.
                restore_context(provider, base)
                provider.context.token_expiry_time = None
            provider.context.client_info = client
            provider._initialized = True  # pyright: ignore[reportPrivateUsage]
            provider._step_up = challenge.step_up  # pyright: ignore[reportPrivateUsage]
            await _run_sdk_flow(provider, config.url, challenge, self._http_timeout)
            if not storage.saved or provider.context.current_tokens is None:
                raise LoginFailed(f"server {name!r}: the login got no token")
            login = stored_login(provider, resource_of(config.url), base=base)
            stored = await credentials.commit_login(name, ticket, login)
        except WaveActorsError as error:
            flow._finish(failure=error)  # pyright: ignore[reportPrivateUsage]
            return
        except (OAuthFlowError, ValidationError, httpx2.HTTPError, ValueError) as error:
            text = redact_text(str(error)) or type(error).__name__
            flow._finish(failure=LoginFailed(f"server {name!r}: the login failed: {text}"))  # pyright: ignore[reportPrivateUsage]
            return
        logger.info("server %r: logged in", name)
        try:
            result = await self._on_stored(stored)
        except WaveActorsError as error:
            flow._finish(failure=error)  # pyright: ignore[reportPrivateUsage]
            return
        flow._finish(result=result)  # pyright: ignore[reportPrivateUsage]


def _answer_of(flow: LoginFlow) -> Callable[[], Awaitable[AuthorizationCodeResult]]:
    """The SDK's callback handler: the browser's answer, once the login has it."""

    async def answer() -> AuthorizationCodeResult:
        got = await flow._await_answer()  # pyright: ignore[reportPrivateUsage]
        return AuthorizationCodeResult(code=got.code, state=got.state, iss=got.iss)

    return answer


async def _expire(flow: LoginFlow, deadline: float) -> None:
    await trio.sleep_until(deadline)
    minutes = f"{(deadline - (flow.deadline - LOGIN_TIMEOUT)) / 60:g}"
    flow._finish(  # pyright: ignore[reportPrivateUsage]
        failure=LoginExpired(
            f"server {flow.server!r}: the login was not completed in time ({minutes} minutes); start a new one"
        )
    )


def _registered_loopback(base: StoredLogin | None) -> str | None:
    """The loopback redirect URI the stored client was registered with, to use again if its port is free."""
    if base is None:
        return None
    uris = base.client.get("redirect_uris")
    if isinstance(uris, list) and uris and isinstance(uris[0], str) and _is_loopback(uris[0]):
        return uris[0]
    return None


def _client_for(base: StoredLogin | None, oauth: OAuthSettings, uri: str) -> OAuthClientInformationFull | None:
    """The client the login uses: the entry's own, else the stored registration if it knows this redirect URI."""
    configured = configured_client(oauth, uri)
    if configured is not None:
        return configured
    if base is None or not base.client:
        return None
    try:
        client = OAuthClientInformationFull.model_validate(dict(base.client))
    except ValidationError:
        return None
    registered = [str(each) for each in client.redirect_uris or ()]
    if oauth.client_metadata_url is not None and client.client_id == oauth.client_metadata_url:
        return client.model_copy(update={"redirect_uris": None})
    return client if uri in registered else None  # a new redirect URI needs a new registration


async def _run_sdk_flow(provider: OAuthClientProvider, url: str, challenge: Challenge, http_timeout: float) -> None:
    """Feed the server's challenge to the SDK's flow and send every request it makes, until it wants to retry.

    The flow's own requests (discovery, registration, the token) go through a
    client of their own, without the entry's headers: an authorization server
    on another origin never sees them (R-AUTH-4). Redirects are followed only
    within each request's origin (the SDK's rule).
    """
    headers = {MCP_PROTOCOL_VERSION_HEADER: challenge.protocol_version or LATEST_PROTOCOL_VERSION}
    probe = httpx2.Request("POST", url, headers=headers)
    refusal_headers = {} if challenge.www_authenticate is None else {"WWW-Authenticate": challenge.www_authenticate}
    refusal = httpx2.Response(challenge.status, headers=refusal_headers, request=probe)
    async with httpx2.AsyncClient(timeout=http_timeout) as client:
        steps = flow_after_refusal(provider.async_auth_flow(probe), probe, refusal)
        try:
            outgoing = await steps.__anext__()
            while True:
                response = await client.send(outgoing)
                await response.aread()
                outgoing = await steps.asend(response)
        except StopAsyncIteration:
            return  # the flow would retry the request with its new token: the login is done
        finally:
            await steps.aclose()
