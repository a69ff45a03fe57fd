"""What makes two configured servers "the same server" (R-CFG-8).

A fingerprint is a short hex digest of the fields that decide *what gets
started or dialed*, after ``${VAR}`` expansion (``oauth`` among them, R-AUTH-1), plus the workdir the entry was
loaded for. Anything else (``enabled``, ``tool_timeout_ms``,
``tool_overrides``, ``shutdown``, where the entry came from, key order in the file) leaves it
unchanged, so the tool snapshot cache (R-CACHE-1) and live-session
reconciliation (R-STORE-5) can tell "reconfigured" from "restarted
differently".
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

from wave_actors._config.model import OAuthSettings, ServerConfig

__all__ = ["FINGERPRINT_LENGTH", "connection_fields", "connection_fingerprint", "oauth_fields"]

FINGERPRINT_LENGTH: Final = 16
"""Hex characters kept from the SHA-256 digest: 64 bits, plenty to tell a
handful of servers apart, short enough to read in a log line."""


def connection_fields(config: ServerConfig) -> dict[str, object]:
    """The fields that decide what gets started or dialed, as plain JSON values (R-CFG-8).

    The one list of them: :func:`connection_fingerprint` hashes them, and a
    project approval (:mod:`wave_actors._config.approvals`) keeps a digest of
    each, so that it can say which of them changed since (R-CFG-10).

    :param config: the entry, after expansion.
    :returns: ``type``, ``command``, ``args``, ``cwd``, ``url``, ``env`` and
        ``headers``, and ``oauth`` for an entry that has one (so that an entry
        without one keeps the fingerprint it had before the field existed).
    """
    fields: dict[str, object] = {
        "type": config.type,
        "command": config.command,
        "args": list(config.args),
        "cwd": config.cwd,
        "url": config.url,
        "env": dict(config.env),
        "headers": dict(config.headers),
    }
    if config.oauth is not None:
        fields["oauth"] = oauth_fields(config.oauth)
    return fields


def oauth_fields(oauth: OAuthSettings) -> dict[str, object]:
    """An ``oauth`` object's settings as plain JSON values, secrets included (they are hashed, never shown)."""
    return {
        "redirect_uri": oauth.redirect_uri,
        "client_id": oauth.client_id,
        "client_secret": oauth.client_secret,
        "scopes": None if oauth.scopes is None else list(oauth.scopes),
        "client_metadata_url": oauth.client_metadata_url,
        "grant": oauth.grant.value,
        "private_key": oauth.private_key,
        "issuer": oauth.issuer,
    }


def connection_fingerprint(config: ServerConfig, workdir: str) -> str:
    """Hash ``config``'s connection-relevant fields together with ``workdir`` (R-CFG-8).

    The hash is taken over canonical JSON (sorted keys, no whitespace, ASCII escapes), so it
    is stable across runs, processes and dict orderings. ``config.fingerprint``
    itself is ignored: compute this first, then store it with
    ``attrs.evolve(config, fingerprint=...)``.

    :param config: the entry, after expansion.
    :param workdir: the resolved project directory it was loaded for.
    :returns: :data:`FINGERPRINT_LENGTH` lowercase hex characters.
    """
    canonical = {**connection_fields(config), "workdir": workdir}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:FINGERPRINT_LENGTH]
