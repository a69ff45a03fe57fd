"""Configuration records: what one MCP server entry *is* once loaded.

Everything here is frozen. A :class:`ServerConfig` is produced by
:func:`wave_actors._config.load_config` (or :func:`server_config` for one entry)
and never changes afterwards; a changed file produces a new record with a new
:attr:`ServerConfig.fingerprint`.

``repr()`` of these records shows no secret (R-CFG-12): ``env`` and ``headers``
show their names with every value masked, ``url`` loses its query values
(:mod:`wave_actors._config.redact`). Equality, hashing and the fingerprint
use the real values.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

from wave_actors._config.redact import MASK, redact_mapping, redact_url
from wave_actors._frozen import freeze_mapping

__all__ = [
    "DEFAULT_TOOL_TIMEOUT_MS",
    "MAX_SHUTDOWN_GRACE_MS",
    "MAX_TOOL_TIMEOUT_MS",
    "Diagnostic",
    "LoadedConfig",
    "OAuthGrant",
    "OAuthSettings",
    "ServerConfig",
    "Severity",
    "ShutdownGraces",
    "Source",
    "ToolOverride",
    "TransportType",
]

DEFAULT_TOOL_TIMEOUT_MS: Final = 30_000
"""Per-call deadline when an entry sets no ``tool_timeout_ms`` (R-CFG-7)."""

MAX_TOOL_TIMEOUT_MS: Final = 3_600_000
"""Largest accepted ``tool_timeout_ms``: one hour (R-CFG-7)."""

MAX_SHUTDOWN_GRACE_MS: Final = 60_000
"""Largest accepted ``shutdown.eof_ms`` and ``shutdown.term_ms``: one minute (R-KILL-9)."""


class Source(enum.Enum):
    """Where an entry came from, highest precedence first (R-CFG-1)."""

    CONSTRUCTOR = "constructor"
    PROJECT = "project"
    USER = "user"
    PLUGIN = "plugin"

    @property
    def precedence(self) -> int:
        """Lower wins: a name defined in two sources takes the entry of the lower value."""
        return _PRECEDENCE[self]


_PRECEDENCE: Final = {Source.CONSTRUCTOR: 0, Source.PROJECT: 1, Source.USER: 2, Source.PLUGIN: 3}


class TransportType(str, enum.Enum):
    """The transports wave-actors can dial. ``streamable-http`` is read as :attr:`HTTP`."""

    STDIO = "stdio"
    HTTP = "http"
    SSE = "sse"


@attrs.frozen
class ToolOverride:
    """Per-tool settings from an entry's ``tool_overrides`` (R-TOOL-8).

    Set them only when the operation's meaning is known for sure: marking a
    write as a safe read can skip the approval that protects it (R-APR-1).
    Each is ``None`` when the entry does not say.

    :param read_only: overrides the server's ``readOnlyHint`` for that tool.
    :param concurrency_safe: the tool may run alongside other calls; reported
        to hosts that schedule calls in parallel.
    :param capability: a label for what the tool can do (e.g. ``"files.read"``),
        for the host's own grouping and display; wave-actors does not read it.
    :param guidance: a usage contract shown with the tool (in the working set
        and by ``mcp_describe``, R-WS-3, R-WS-4).
    """

    read_only: bool | None = None
    concurrency_safe: bool | None = None
    capability: str | None = None
    guidance: str | None = None


@attrs.frozen
class ShutdownGraces:
    """How long reclaiming a stdio server waits at each stage: an entry's ``shutdown`` (R-KILL-9).

    Each is ``None`` when the entry does not say; then the host's (or the
    session's) :class:`~wave_actors.Graces` apply.

    :param eof_ms: after its stdin closes, for the server to exit by itself,
        before SIGTERM goes to its process family.
    :param term_ms: after SIGTERM, before SIGKILL.
    """

    eof_ms: int | None = None
    term_ms: int | None = None


class OAuthGrant(str, enum.Enum):
    """How a remote server's OAuth tokens are obtained (R-AUTH-1)."""

    AUTHORIZATION_CODE = "authorization_code"
    """A person logs in in a browser (PKCE); the host drives the login (R-AUTH-2)."""
    CLIENT_CREDENTIALS = "client_credentials"
    """A machine client: the tokens are asked for with the client's own secret or key, no person involved."""


def _masked_secret(value: str | None) -> str:
    return repr(None if value is None else MASK)


def _masked_optional_url(url: str | None) -> str:
    return repr(None if url is None else redact_url(url))


@attrs.frozen
class OAuthSettings:
    """An entry's ``oauth`` object: what the server's authorization server needs to know of this client (R-AUTH-1).

    Every field is optional: an entry needs no ``oauth`` object to log in, as
    discovery and dynamic client registration start when the server asks.
    ``repr()`` masks the secrets (R-CFG-12).

    :param redirect_uri: the callback registered with the authorization
        server. An ``http`` loopback URI (``127.0.0.1``, ``[::1]`` or
        ``localhost``) is served by the library's listener on its port;
        anything else is completed by the host passing the callback back.
        ``None``: a loopback URI on a free port.
    :param client_id: a client registered in advance (no dynamic registration).
    :param client_secret: its secret, if it is a confidential client.
    :param scopes: the scopes to ask for, in place of what the server suggests.
    :param client_metadata_url: an ``https`` URL with a path where this client's
        metadata document lives, used as its ``client_id`` by servers that
        accept client metadata documents (in place of registering).
    :param grant: :attr:`OAuthGrant.AUTHORIZATION_CODE` (a person logs in) or
        :attr:`OAuthGrant.CLIENT_CREDENTIALS` (a machine client: ``client_id``
        with ``client_secret`` or ``private_key``).
    :param private_key: a PEM private key that signs the client's assertion
        (``private_key_jwt``) for the client-credentials grant.
    :param issuer: the authorization server the client's credentials belong
        to: with it, they are only ever sent to that server.

    ``repr()`` masks ``client_secret`` and ``private_key``, and every query
    value of its URLs (R-CFG-12).
    """

    redirect_uri: str | None = attrs.field(default=None, repr=_masked_optional_url)
    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=_masked_secret)
    scopes: tuple[str, ...] | None = None
    client_metadata_url: str | None = attrs.field(default=None, repr=_masked_optional_url)
    grant: OAuthGrant = OAuthGrant.AUTHORIZATION_CODE
    private_key: str | None = attrs.field(default=None, repr=_masked_secret)
    issuer: str | None = attrs.field(default=None, repr=_masked_optional_url)


def _masked_mapping(values: Mapping[str, str]) -> str:
    return repr(redact_mapping(values))


def _masked_url(url: str | None) -> str:
    return repr(None if url is None else redact_url(url))


@attrs.frozen
class ServerConfig:
    """One configured MCP server, after merging, expansion and validation.

    :param name: the server's name, unique within a session.
    :param source: which configuration source supplied the entry (R-CFG-1).
    :param origin: the file path the entry was read from, the plugin's name,
        or ``"constructor"``.
    :param type: ``"stdio"``, ``"http"`` or ``"sse"`` (see
        :class:`TransportType`). Any other value is kept as written and fails
        only when the server is dialed (R-CFG-3).
    :param command: the executable of a stdio server, started without a shell.
    :param args: its arguments.
    :param env: variables overlaid on the host's environment for the child.
    :param cwd: the child's working directory (``None``: the host's).
    :param url: the endpoint of an http or sse server.
    :param headers: HTTP headers sent with every request.
    :param oauth: an http or sse server's OAuth settings, ``None`` when the
        entry has no ``oauth`` object (a login still works: discovery starts
        when the server asks, R-AUTH-1).
    :param enabled: ``False`` keeps the entry listed but it is never dialed (R-CFG-6).
    :param description: what the server is for, in a few words; the working set
        shows it as the server's purpose (R-WS-3). Not part of the fingerprint.
    :param tool_timeout_ms: each tool call's deadline, counted from send (R-TOOL-4).
    :param tool_overrides: per-tool settings keyed by the server's raw tool name.
    :param shutdown: a stdio server's own reclamation graces (R-KILL-9). Not
        part of the fingerprint: it says how the server is stopped, not what
        is started.
    :param fingerprint: a stable hash of the connection-relevant fields and the
        workdir (R-CFG-8); equal fingerprints mean "the same server".
    :param constructor_overrides: the fields (``tool_timeout_ms``, ``enabled``,
        ``tool_overrides``) that a constructor entry holding nothing else set on
        top of this entry (R-CFG-1); :attr:`source`, :attr:`origin` and the
        fingerprint stay those of the entry that defines the connection. Empty
        for an entry taken as written.
    """

    name: str
    source: Source
    origin: str
    type: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping, repr=_masked_mapping)
    cwd: str | None = None
    url: str | None = attrs.field(default=None, repr=_masked_url)
    headers: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=freeze_mapping, repr=_masked_mapping)
    oauth: OAuthSettings | None = None
    enabled: bool = True
    description: str | None = None
    tool_timeout_ms: int = DEFAULT_TOOL_TIMEOUT_MS
    tool_overrides: Mapping[str, ToolOverride] = attrs.field(factory=dict[str, ToolOverride], converter=freeze_mapping)
    shutdown: ShutdownGraces = ShutdownGraces()
    fingerprint: str = ""
    constructor_overrides: tuple[str, ...] = ()

    @property
    def transport(self) -> TransportType | None:
        """The transport to dial, or ``None`` when :attr:`type` is not one wave-actors knows."""
        try:
            return TransportType(self.type)
        except ValueError:
            return None


class Severity(str, enum.Enum):
    """How bad a :class:`Diagnostic` is."""

    ERROR = "error"
    """Something was skipped: a whole source, or one entry."""

    WARNING = "warning"
    """Something was loaded, but maybe not as meant (e.g. an unset ``${VAR}``)."""

    INFO = "info"
    """Nothing is wrong, but something was left out on purpose and a UI may want to
    say why (e.g. a project entry not approved in trust mode, R-CFG-10)."""


@attrs.frozen
class Diagnostic:
    """A problem found while loading configuration (R-CFG-4).

    :param severity: whether something was skipped.
    :param source: the source in which it was found.
    :param origin: the file path or plugin name.
    :param message: what is wrong and what was done about it.
    :param server: the entry's name, when the problem is in one entry.
    :param field: the entry's field, when the problem is in one field.
    """

    severity: Severity
    source: Source
    origin: str
    message: str
    server: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.origin
        if self.server is not None:
            where += f": server {self.server!r}"
        if self.field is not None:
            where += f", field {self.field!r}"
        return f"{self.severity.value}: {where}: {self.message}"


@attrs.frozen
class LoadedConfig:
    """The merged configuration of one workdir, and what went wrong loading it.

    :param workdir: the project directory the configuration was loaded for.
    :param servers: every loaded entry by name, the winner of each name only.
    :param diagnostics: problems found; loading never raises for these.
    :param user_file: the absolute path of the user file (``<home>/mcp.json``),
        whether or not it exists: where a settings page adds a user server (R-STORE-3).
    :param project_file: the absolute path of the project file
        (``<workdir>/.mcp.json``), whether or not it exists.
    """

    workdir: str
    servers: Mapping[str, ServerConfig]
    diagnostics: tuple[Diagnostic, ...] = ()
    user_file: str = ""
    project_file: str = ""
