"""The OAuth of a remote connection: stored tokens on every request, refreshed when due, never a login (R-AUTH-1..4).

:class:`ConnectionAuth` is the ``httpx2.Auth`` of an http or sse connection's
HTTP client. It is built on the MCP SDK's OAuth client
(:class:`mcp.client.auth.OAuthClientProvider` and its client-credentials
extensions): the SDK builds and reads every token request (a refresh, with
the RFC 8707 ``resource`` and the client's authentication), and for a
machine client (``grant_type: client_credentials``) runs the whole flow, from
discovery to the token. What is written here is what a connection of a host
needs beyond it:

- **Tokens from the credential store, bound to the resource.** They are
  loaded from :class:`~wave_actors._auth.credentials.Credentials` (with the
  authorization server's metadata, so that a refresh in a new process goes
  to the right token endpoint), and only when the login was made for this
  entry's URL; the record's ``stat`` is looked at before every request, so
  a login, refresh or logout of another process is seen at the next one.
- **A refresh commits only over what it refreshed.** A logout (here or in
  another process) that came meanwhile wins: the refreshed tokens are
  dropped and the request fails asking for a login.
- **No login inside a request.** A server that refuses a request for want
  of a login (``401``) or of scope (``403 insufficient_scope``) makes the
  request fail with :class:`~wave_actors.LoginRequired`; its challenge is kept
  for the login the host starts (:mod:`.flow`). Before giving up on a
  ``401``, tokens that can be refreshed are refreshed once and the request
  is sent once more. A step-up asking for scope the login already grants is
  refused as it is (a new login would get the same): that is the retry limit.
- **Concurrency.** The SDK's provider holds one lock across each request
  until its answer's headers arrive, which would queue a connection's calls
  behind each other; here the lock covers loading and refreshing only.

Imported only by the remote transports and the login flow: it imports the SDK.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import AsyncGenerator
from typing import Final

import httpx2
import trio
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared._httpx_utils import RedirectAwareAuth
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import AnyUrl, ValidationError

from wave_actors._auth.challenge import Challenge, is_oauth_challenge
from wave_actors._auth.credentials import Credentials, vault_of
from wave_actors._auth.records import StoredLogin, StoredTokens, resource_of
from wave_actors._config import ServerConfig
from wave_actors._config.model import OAuthGrant, OAuthSettings
from wave_actors._errors import DialError, LoginRequired, ToolCallError, WaveActorsError
from wave_actors._transport.redaction import redact_text

__all__ = ["ConnectionAuth", "TokenStash", "client_metadata", "flow_after_refusal", "restore_context", "stored_login"]

logger = logging.getLogger(__name__)

PLACEHOLDER_REDIRECT: Final = "http://127.0.0.1/callback"
"""The redirect URI a connection's SDK provider is built with: a connection never sends a person to log in."""


class TokenStash:
    """The SDK's ``TokenStorage``: what the SDK saves is kept here until the caller commits it (or drops it).

    The SDK saves a token or a registration the moment it has one; a login
    and a refresh must commit them to the credential store only under the
    rules of :class:`~wave_actors._auth.credentials.Credentials`, all at once.
    """

    def __init__(self, tokens: OAuthToken | None = None, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens = tokens
        self.client = client
        self.saved = False
        """Whether the SDK saved tokens since the stash was made."""

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.saved = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def client_metadata(oauth: OAuthSettings, *, client_name: str, redirect_uri: str) -> OAuthClientMetadata:
    """What this client says of itself when it registers (dynamic client registration), as the SDK sends it.

    A public native client: authorization code with PKCE and refresh tokens,
    no secret at the token endpoint (the authorization server may assign
    another method, which the SDK then uses).
    """
    return OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        client_name=client_name,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=None if oauth.scopes is None else " ".join(oauth.scopes),
    )


def configured_client(oauth: OAuthSettings, redirect_uri: str | None) -> OAuthClientInformationFull | None:
    """The client an entry registered in advance (``oauth.client_id``), as the SDK knows a registered client."""
    if oauth.client_id is None:
        return None
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        redirect_uris=None if redirect_uri is None else [AnyUrl(redirect_uri)],
        token_endpoint_auth_method="client_secret_basic" if oauth.client_secret is not None else "none",
        grant_types=["authorization_code", "refresh_token"],
        issuer=oauth.issuer,
    )


def restore_context(provider: OAuthClientProvider, login: StoredLogin) -> None:
    """Put a stored login into an SDK provider's context: tokens, their expiry, client, discovered metadata.

    The SDK reads tokens back without their expiry (it has only ``expires_in``,
    relative to when they were issued), and without the metadata it found;
    a refresh in a new process would then go to the resource's origin instead
    of the authorization server's token endpoint.
    """
    context = provider.context
    tokens = login.tokens
    context.current_tokens = OAuthToken(
        access_token=tokens.access_token,
        token_type="Bearer",
        refresh_token=tokens.refresh_token,
        scope=tokens.scope,
    )
    context.token_expiry_time = tokens.expires_at
    if login.client:
        try:
            context.client_info = OAuthClientInformationFull.model_validate(dict(login.client))
        except ValidationError:
            logger.debug("the stored client registration is unusable; a login registers again")
    try:
        if login.authorization_server is not None:
            context.oauth_metadata = OAuthMetadata.model_validate(dict(login.authorization_server))
        if login.resource_metadata is not None:
            context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                dict(login.resource_metadata)
            )
    except ValidationError:
        logger.debug("the stored authorization server metadata is unusable; a refresh discovers it again")
    context.auth_server_url = login.authorization_server_url


def stored_login(provider: OAuthClientProvider, resource: str, *, base: StoredLogin | None = None) -> StoredLogin:
    """The login an SDK provider's context holds now, as the credential store keeps it."""
    context = provider.context
    tokens = context.current_tokens
    assert tokens is not None
    client = context.client_info
    return StoredLogin(
        resource=resource,
        tokens=StoredTokens(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token,
            expires_at=context.token_expiry_time,
            scope=tokens.scope,
            token_type=tokens.token_type,
        ),
        client=client.model_dump(mode="json", exclude_none=True) if client is not None else {},
        authorization_server=None
        if context.oauth_metadata is None
        else context.oauth_metadata.model_dump(mode="json", exclude_none=True),
        resource_metadata=None
        if context.protected_resource_metadata is None
        else context.protected_resource_metadata.model_dump(mode="json", exclude_none=True),
        authorization_server_url=context.auth_server_url
        if context.auth_server_url is not None
        else (None if base is None else base.authorization_server_url),
    )


async def flow_after_refusal(
    steps: AsyncGenerator[httpx2.Request, httpx2.Response], request: httpx2.Request, refusal: httpx2.Response
) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
    """The SDK's auth flow for ``request`` when the server's refusal of it is already known: the flow's own requests.

    The SDK's flow sends ``request`` first and starts discovery from the
    refusal; here that first send is answered with ``refusal`` (the answer
    the server gave, maybe to another connection), and every other request
    of the flow (discovery, registration, the token) is yielded for the
    caller to send. It ends when the flow would send ``request`` again, with
    its new token, or ends by itself.

    :param steps: the SDK's flow for ``request`` (``async_auth_flow`` or ``_auth_flow``).
    :param request: the request the flow authenticates.
    :param refusal: the server's answer to it: its ``401`` or ``403``.
    """
    try:
        outgoing = await steps.__anext__()
        answered = False
        while True:
            if outgoing is request:
                if answered:
                    return  # the flow retries the request with its new token: it is done
                answered, response = True, refusal
            else:
                response = yield outgoing
            outgoing = await steps.asend(response)
    except StopAsyncIteration:
        return
    finally:
        await steps.aclose()


def _signing_algorithm(private_key: str) -> str:
    """The JWS algorithm a PEM private key signs with: ES256/ES384/ES512 by curve, RS256, or EdDSA."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(private_key.encode(), password=None)
    except (ValueError, TypeError):
        raise ValueError("oauth.private_key is not an unencrypted PEM private key (not shown)") from None
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        by_curve = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name in by_curve:
            return by_curve[key.curve.name]
    raise ValueError(f"oauth.private_key is a {type(key).__name__}, which wave-actors cannot sign with")


def _sdk_provider(
    config: ServerConfig, oauth: OAuthSettings, storage: TokenStash, client_name: str
) -> OAuthClientProvider:
    """The SDK provider that builds this connection's token requests."""
    assert config.url is not None
    if oauth.grant is OAuthGrant.CLIENT_CREDENTIALS:
        assert oauth.client_id is not None
        with warnings.catch_warnings():
            # Without an issuer the SDK warns that 3.0 will require one; the entry's issuer is optional here.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            if oauth.private_key is not None:
                parameters = SignedJWTParameters(
                    issuer=oauth.client_id,
                    subject=oauth.client_id,
                    signing_key=oauth.private_key,
                    signing_algorithm=_signing_algorithm(oauth.private_key),
                )
                return PrivateKeyJWTOAuthProvider(
                    config.url,
                    storage,
                    oauth.client_id,
                    parameters.create_assertion_provider(),
                    scope=None if oauth.scopes is None else " ".join(oauth.scopes),
                    issuer=oauth.issuer,
                )
            assert oauth.client_secret is not None
            return ClientCredentialsOAuthProvider(
                config.url,
                storage,
                oauth.client_id,
                oauth.client_secret,
                scope=None if oauth.scopes is None else " ".join(oauth.scopes),
                issuer=oauth.issuer,
            )
    metadata = client_metadata(oauth, client_name=client_name, redirect_uri=oauth.redirect_uri or PLACEHOLDER_REDIRECT)
    return OAuthClientProvider(config.url, metadata, storage)


class ConnectionAuth(RedirectAwareAuth):
    """The ``httpx2.Auth`` of one remote connection (R-AUTH-1, R-AUTH-3).

    :param config: the http or sse entry.
    :param credentials: where logins live.
    :param client_name: how this client names itself to an authorization server.
    :raises ValueError: the entry's ``oauth.private_key`` cannot sign (the dial fails saying so).
    """

    requires_response_body = True

    def __init__(self, config: ServerConfig, credentials: Credentials, *, client_name: str) -> None:
        assert config.url is not None
        self._name = config.name
        self._credentials = vault_of(credentials)
        self._resource = resource_of(config.url)
        self._oauth = config.oauth or OAuthSettings()
        self._machine = self._oauth.grant is OAuthGrant.CLIENT_CREDENTIALS
        self._storage = TokenStash()
        self._sdk = _sdk_provider(config, self._oauth, self._storage, client_name)
        # The SDK provider never loads anything itself: the context is filled from the store here,
        # and a machine client's own registration is the one its provider was built with.
        self._sdk._initialized = True  # pyright: ignore[reportPrivateUsage]
        self._own_client: OAuthClientInformationFull | None = None
        if isinstance(self._sdk, ClientCredentialsOAuthProvider | PrivateKeyJWTOAuthProvider):
            self._own_client = self._sdk._fixed_client_info  # pyright: ignore[reportPrivateUsage]
        self._sdk.context.client_info = self._own_client
        self._lock = trio.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._loaded = False
        self._stored: StoredLogin | None = None  # the committed login the context holds
        self._elsewhere = False  # a login is stored, for another URL
        self._refused_refresh = False  # the last refresh was refused by the authorization server

    @property
    def server(self) -> str:
        """The server's name."""
        return self._name

    # Loading.

    async def _load(self, *, force: bool = False) -> None:
        """Bring the context up to the credential store, if the record changed since it was last read."""
        stamp = self._credentials.record_stamp(self._name)
        if self._loaded and not force and stamp == self._stamp:
            return
        self._stamp, self._loaded = stamp, True
        found = None if stamp is None else await self._credentials.read(self._name)
        context = self._sdk.context
        self._elsewhere = False
        if found is None or found[1].resource != self._resource:
            self._elsewhere = found is not None
            self._stored = None
            context.clear_tokens()
            context.client_info = self._own_client
            return
        self._stored = found[1]
        restore_context(self._sdk, found[1])
        self._prefer_configured_client()

    def _prefer_configured_client(self) -> None:
        """The entry's own client (its secret as configured now) over the stored copy of it."""
        context = self._sdk.context
        if self._own_client is not None:
            context.client_info = self._own_client
            return
        stored, oauth = context.client_info, self._oauth
        if stored is not None and oauth.client_id is not None and stored.client_id == oauth.client_id:
            context.client_info = stored.model_copy(update={"client_secret": oauth.client_secret})

    def _token(self, *, fresh: bool = False) -> str | None:
        """The access token to send now: the context's, unless it has expired (one just refreshed is sent anyway)."""
        context = self._sdk.context
        tokens = context.current_tokens
        if tokens is None or not tokens.access_token:
            return None
        if not fresh and context.token_expiry_time is not None and time.time() >= context.token_expiry_time:
            return None
        return tokens.access_token

    def _refresh_due(self) -> bool:
        context = self._sdk.context
        return self._stored is not None and self._token() is None and context.can_refresh_token()

    # Refreshing.

    async def _refreshed(self, response: httpx2.Response) -> bool:
        """Take a refresh's answer: commit the new tokens over the version they refreshed, or drop them.

        :returns: whether the context holds the refreshed tokens.
        """
        stored = self._stored
        assert stored is not None
        self._storage.saved = False
        ok = await self._sdk._handle_refresh_response(response)  # pyright: ignore[reportPrivateUsage]
        self._refused_refresh = not ok or not self._storage.saved
        if self._refused_refresh:
            logger.info("server %r: the authorization server refused to refresh the login", self._name)
            return False
        committed = await self._credentials.commit_refresh(
            self._name, stored.version, stored_login(self._sdk, self._resource, base=stored)
        )
        if committed is not None:
            self._stored = committed
            self._stamp = self._credentials.record_stamp(self._name)
            return True
        # A logout, a login or another process's refresh came first: theirs stands, these tokens are dropped.
        await self._load(force=True)
        if self._stored is None:
            raise LoginRequired(
                f"server {self._name!r} needs a login: the login was removed while its tokens were being "
                f"refreshed; log in again with login({self._name!r})",
                server=self._name,
            )
        return False

    # The flow.

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK includes the RFC 8707 resource in a refresh when the protocol version says so.
        self._sdk.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        async with self._lock:
            await self._load()
            fresh = False
            if self._refresh_due():
                refresh = yield await self._sdk._refresh_token()  # pyright: ignore[reportPrivateUsage]
                fresh = await self._refreshed(refresh)
            sent = self._authorize(request, fresh=fresh)
        response = yield request
        challenge = self._challenge(request, response)
        if challenge is None:
            return
        if self._machine:
            # A machine client gets its token with the SDK's flow, started by this refusal; no person involved.
            self._storage.saved = False
            steps = flow_after_refusal(self._sdk._auth_flow(request), request, response)  # pyright: ignore[reportPrivateUsage]
            try:
                outgoing = await steps.__anext__()
                while True:
                    outgoing = await steps.asend((yield outgoing))
            except StopAsyncIteration:
                pass  # the SDK would retry with its new token: ours to send
            except (OAuthFlowError, ValidationError, httpx2.HTTPError) as error:
                raise DialError(
                    f"server {self._name!r}: the client credentials were refused: {redact_text(str(error))}"
                ) from None
            finally:
                await steps.aclose()
            if self._storage.saved:
                await self._commit_machine_tokens()
            if self._authorize(request) is None:
                raise DialError(f"server {self._name!r}: the client credentials got no token")
            response = yield request
            challenge = self._challenge(request, response)
            if challenge is not None:
                raise DialError(
                    f"server {self._name!r}: the server refused the token of the client credentials "
                    f"(HTTP {response.status_code})"
                )
            return
        if response.status_code == 401 and sent is not None:
            # Maybe only this access token is no longer accepted: refresh it, once, and ask again.
            async with self._lock:
                await self._load()
                context = self._sdk.context
                current = context.current_tokens
                fresh = False
                if current is not None and current.access_token == sent and context.can_refresh_token():
                    context.token_expiry_time = 0.0  # what the server says is final
                    if self._refresh_due():
                        refresh = yield await self._sdk._refresh_token()  # pyright: ignore[reportPrivateUsage]
                        fresh = await self._refreshed(refresh)
                retry = self._authorize(request, fresh=fresh)
            if retry is not None and retry != sent:
                response = yield request
                challenge = self._challenge(request, response)
                if challenge is None:
                    return
        raise await self._refusal(challenge)

    def _authorize(self, request: httpx2.Request, *, fresh: bool = False) -> str | None:
        token = self._token(fresh=fresh)
        if token is not None and (self._stored is not None or self._machine):
            request.headers["Authorization"] = f"Bearer {token}"
            return token
        return None

    def _challenge(self, request: httpx2.Request, response: httpx2.Response) -> Challenge | None:
        header = response.headers.get("WWW-Authenticate")
        if not is_oauth_challenge(response.status_code, header):
            return None
        return Challenge(response.status_code, header, request.headers.get(MCP_PROTOCOL_VERSION_HEADER))

    async def _commit_machine_tokens(self) -> None:
        """Keep a machine client's new token for the next connection, unless something else was committed since."""
        version = 0 if self._stored is None else self._stored.version
        record = await self._credentials.record(self._name)
        if record is not None and record.version != version:
            return  # another process, or a logout, came first: this token is used, not kept
        try:
            if record is None or not record.present:
                ticket = await self._credentials.begin_login(self._name)
                committed = await self._credentials.commit_login(
                    self._name, ticket, stored_login(self._sdk, self._resource)
                )
            else:
                committed = await self._credentials.commit_refresh(
                    self._name, version, stored_login(self._sdk, self._resource)
                )
        except WaveActorsError as error:
            logger.info("server %r: the machine client's token could not be kept: %s", self._name, error)
            return
        if committed is not None:
            self._stored = committed
            self._stamp = self._credentials.record_stamp(self._name)

    async def _refusal(self, challenge: Challenge) -> WaveActorsError:
        """What a request refused for a login becomes; the challenge is kept for the login."""
        name = self._name
        granted = self._granted_scope()
        asked = challenge.scope
        if challenge.step_up and asked is not None and granted is not None and set(asked.split()) <= granted:
            # The retry limit of a step-up: the login grants what the server asks, so another would get the same.
            return ToolCallError(
                f"server {name!r} refused the request for scope {asked!r}, which its login already grants; "
                "a new login would not change that (HTTP 403 insufficient_scope)",
                403,
            )
        self._credentials.note_challenge(name, challenge)
        reason = challenge.describe()
        if self._elsewhere:
            reason += "; the stored login was made for another URL"
        elif self._refused_refresh:
            reason += "; the authorization server refused to refresh the stored login"
        elif self._stored is not None and not challenge.step_up:
            reason += "; it refused the stored login"
        await self._credentials.note_needs_login(name, reason)
        return LoginRequired(
            f"server {name!r} needs a login: {reason}; start one with login({name!r})", server=name, scope=asked
        )

    def _granted_scope(self) -> set[str] | None:
        tokens = self._sdk.context.current_tokens
        if self._stored is None or tokens is None or tokens.scope is None:
            return None
        return set(tokens.scope.split())
