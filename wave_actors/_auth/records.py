"""What is kept of a login: the secret record, and the record that coordinates processes and holds no secret (R-AUTH-3).

Two records per server name:

- :class:`StoredLogin`, the secret one, in the credential store (the system
  keyring, or an owner-only file): the tokens, the registered client (with
  its secret, if the authorization server gave one), what discovery found,
  the resource the login was made for, and the :attr:`StoredLogin.version` it
  was committed at.
- :class:`LoginRecord`, the one that coordinates the processes of one
  machine, an owner-only file under the host's home: the committed version,
  the number of the newest login started, and what a status line needs
  (when the tokens expire, whether they can be refreshed, the scope, a digest
  of the resource, why a login is needed). It never holds a token, a secret
  or the resource URL itself (its query may be a secret, R-CFG-12).

A stored login is accepted only when its version is the record's: a login
written but not committed (the writer died between the two writes), or one
that a logout or a newer login replaced, is never used.

``repr()`` of either shows no secret. Everything here is pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any, Final, cast

import attrs

from wave_actors._config import redact_url
from wave_actors._frozen import empty_mapping, freeze_mapping

__all__ = [
    "FORMAT",
    "LoginRecord",
    "RecordInvalid",
    "StoredLogin",
    "StoredTokens",
    "resource_digest",
    "resource_of",
]

FORMAT: Final = 1
"""The format of both records; a record of another format is not read (it counts as absent)."""


class RecordInvalid(ValueError):
    """A record could not be read: not JSON, another format, or a field of the wrong type."""


def resource_of(url: str) -> str:
    """The resource a login for ``url`` is bound to: the URL itself, scheme and host lower-cased, without fragment.

    Path and query count: a changed path or query is another resource, which
    needs its own login (R-AUTH-3). The same canonical form the MCP SDK sends
    as the RFC 8707 ``resource`` parameter.

    :param url: the entry's URL.
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower(), fragment=""))


def resource_digest(resource: str) -> str:
    """A digest of a resource, kept in the record in place of the URL (whose query may be a secret)."""
    return hashlib.sha256(resource.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _masked(value: object) -> str:
    return "None" if value is None else "'***'"


@attrs.frozen
class StoredTokens:
    """The tokens of a login.

    :param access_token: the bearer token requests carry.
    :param refresh_token: what gets a new access token without a login, if the server gave one.
    :param expires_at: wall-clock time (``time.time()``) the access token expires at; ``None``: not said.
    :param scope: the scope granted (or asked for, when the server did not say).
    :param token_type: ``Bearer``.
    """

    access_token: str = attrs.field(repr=_masked)
    refresh_token: str | None = attrs.field(default=None, repr=_masked)
    expires_at: float | None = None
    scope: str | None = None
    token_type: str = "Bearer"

    def expired(self, now: float) -> bool:
        """Whether the access token has expired at ``now`` (wall-clock)."""
        return self.expires_at is not None and now >= self.expires_at


@attrs.frozen
class StoredLogin:
    """One server's login, as the credential store keeps it.

    :param resource: the resource the login was made for (:func:`resource_of` of the entry's URL).
    :param tokens: the tokens.
    :param client: the registered client, as the authorization server described it
        (``client_id``, maybe ``client_secret``): a secret, never shown.
    :param authorization_server: the authorization server's metadata (issuer,
        token endpoint, ...), so that a refresh in a new process goes to the
        right place without discovering again.
    :param resource_metadata: the protected resource metadata discovery found, if any.
    :param authorization_server_url: the authorization server the resource named.
    :param version: the version of the record it was committed at.
    :param saved_at: when it was saved (wall-clock).
    """

    resource: str = attrs.field(repr=lambda url: repr(redact_url(url)))
    tokens: StoredTokens
    client: Mapping[str, Any] = attrs.field(factory=empty_mapping, converter=freeze_mapping, repr=_masked)
    authorization_server: Mapping[str, Any] | None = attrs.field(default=None, repr=False)
    resource_metadata: Mapping[str, Any] | None = attrs.field(default=None, repr=False)
    authorization_server_url: str | None = None
    version: int = 0
    saved_at: float = 0.0

    def to_json(self) -> str:
        """The record as the store keeps it."""
        document = {
            "format": FORMAT,
            "version": self.version,
            "saved_at": self.saved_at,
            "resource": self.resource,
            "tokens": attrs.asdict(self.tokens),
            "client": dict(self.client),
            "authorization_server": None if self.authorization_server is None else dict(self.authorization_server),
            "resource_metadata": None if self.resource_metadata is None else dict(self.resource_metadata),
            "authorization_server_url": self.authorization_server_url,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> StoredLogin:
        """Read a stored login.

        :raises RecordInvalid: it is not one (the message names the field, never a value).
        """
        document = _document(text)
        tokens = _object(document, "tokens")
        access = tokens.get("access_token")
        if not isinstance(access, str) or not access:
            raise RecordInvalid("tokens.access_token is missing")
        return cls(
            resource=_text(document, "resource"),
            tokens=StoredTokens(
                access_token=access,
                refresh_token=_optional_text(tokens, "refresh_token"),
                expires_at=_optional_number(tokens, "expires_at"),
                scope=_optional_text(tokens, "scope"),
                token_type=_optional_text(tokens, "token_type") or "Bearer",
            ),
            client=_object(document, "client"),
            authorization_server=_optional_object(document, "authorization_server"),
            resource_metadata=_optional_object(document, "resource_metadata"),
            authorization_server_url=_optional_text(document, "authorization_server_url"),
            version=_integer(document, "version"),
            saved_at=_optional_number(document, "saved_at") or 0.0,
        )


@attrs.frozen
class LoginRecord:
    """What the processes of one machine agree on about one server's login; no token, no secret, no URL.

    :param version: grows with every commit (a login, a refresh, a logout): a
        stored login of another version is not accepted, and a refresh commits
        only over the version it refreshed.
    :param login: the number of the newest login started: a login commits only
        if it is still the newest, and a logout counts as a newer one.
    :param present: a login is stored at :attr:`version` (``False`` after a logout).
    :param resource_digest: :func:`resource_digest` of the stored login's resource.
    :param expires_at: when its access token expires (wall-clock), if said.
    :param refreshable: it has a refresh token.
    :param scope: the scope granted.
    :param needs_login: why the server last asked for a login, until one is committed.
    :param updated_at: when the record was last written (wall-clock).
    """

    version: int = 0
    login: int = 0
    present: bool = False
    resource_digest: str | None = None
    expires_at: float | None = None
    refreshable: bool = False
    scope: str | None = None
    needs_login: str | None = None
    updated_at: float = 0.0

    def to_json(self) -> str:
        """The record as its file holds it."""
        return json.dumps({"format": FORMAT, **attrs.asdict(self)}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LoginRecord:
        """Read a record.

        :raises RecordInvalid: it is not one.
        """
        document = _document(text)
        present = document.get("present", False)
        refreshable = document.get("refreshable", False)
        if not isinstance(present, bool) or not isinstance(refreshable, bool):
            raise RecordInvalid("present and refreshable must be true or false")
        return cls(
            version=_integer(document, "version"),
            login=_integer(document, "login"),
            present=present,
            resource_digest=_optional_text(document, "resource_digest"),
            expires_at=_optional_number(document, "expires_at"),
            refreshable=refreshable,
            scope=_optional_text(document, "scope"),
            needs_login=_optional_text(document, "needs_login"),
            updated_at=_optional_number(document, "updated_at") or 0.0,
        )

    def committed(self, login: StoredLogin, *, now: float | None = None) -> LoginRecord:
        """The record once ``login`` is committed over this one: the next version, the login's facts."""
        tokens = login.tokens
        return attrs.evolve(
            self,
            version=self.version + 1,
            present=True,
            resource_digest=resource_digest(login.resource),
            expires_at=tokens.expires_at,
            refreshable=tokens.refresh_token is not None,
            scope=tokens.scope,
            needs_login=None,
            updated_at=time.time() if now is None else now,
        )

    def removed(self, *, now: float | None = None) -> LoginRecord:
        """The record once the login is removed (a logout): the next version and the next login number."""
        return LoginRecord(
            version=self.version + 1, login=self.login + 1, updated_at=time.time() if now is None else now
        )


def _document(text: str) -> dict[str, Any]:
    try:
        document: object = json.loads(text)
    except ValueError:
        raise RecordInvalid("not JSON") from None
    if not isinstance(document, dict):
        raise RecordInvalid("not a JSON object")
    fields = cast(dict[str, Any], document)
    if fields.get("format") != FORMAT:
        raise RecordInvalid(f"not format {FORMAT}")
    return fields


def _text(document: Mapping[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str):
        raise RecordInvalid(f"{name} must be a string")
    return value


def _optional_text(document: Mapping[str, Any], name: str) -> str | None:
    value = document.get(name)
    if value is not None and not isinstance(value, str):
        raise RecordInvalid(f"{name} must be a string")
    return value


def _integer(document: Mapping[str, Any], name: str) -> int:
    value = document.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordInvalid(f"{name} must be a whole number")
    return value


def _optional_number(document: Mapping[str, Any], name: str) -> float | None:
    value = document.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordInvalid(f"{name} must be a number")
    return float(value)


def _object(document: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = document.get(name)
    if not isinstance(value, dict):
        raise RecordInvalid(f"{name} must be an object")
    return cast(dict[str, Any], value)


def _optional_object(document: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    if document.get(name) is None:
        return None
    return _object(document, name)
