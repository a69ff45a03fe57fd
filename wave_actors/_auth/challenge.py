"""What a server said when it asked for a login: its ``401`` or ``403`` and its ``WWW-Authenticate`` (R-AUTH-2).

A connection never runs the interactive part of OAuth itself: when a server
refuses a request for want of a login (``401``) or of scope (``403`` with
``error="insufficient_scope"``), the connection notes the refusal as a
:class:`Challenge` and the request fails with
:class:`~wave_actors.LoginRequired`. A login started afterwards hands that
challenge to the MCP SDK's OAuth flow as if the server had just answered it,
so discovery starts from what the server said (its ``resource_metadata``,
the ``scope`` it asks for, a step-up's union of scopes).

Pure: no I/O, no SDK import.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = ["Challenge", "challenge_field", "is_oauth_challenge"]

_BEARER: Final = re.compile(r"^\s*bearer\b", re.IGNORECASE)


def challenge_field(header: str | None, name: str) -> str | None:
    """The value of ``name`` in a ``WWW-Authenticate`` header, quoted or not; ``None`` when absent.

    The same reading as the MCP SDK's (``extract_field_from_www_auth``).
    """
    if not header:
        return None
    match = re.search(rf'{re.escape(name)}=(?:"([^"]+)"|([^\s,]+))', header)
    if match is None:
        return None
    return match.group(1) or match.group(2)


def is_oauth_challenge(status: int, header: str | None) -> bool:
    """Whether a refusal asks for an OAuth login: a ``401`` with a ``Bearer`` challenge (or none), or a ``403`` step-up.

    A ``401`` with another scheme (``Basic``) is not OAuth: it stays a refusal
    of the configured headers. A ``403`` is a login matter only with
    ``error="insufficient_scope"``.
    """
    if status == 401:
        return not header or bool(_BEARER.match(header))
    return status == 403 and challenge_field(header, "error") == "insufficient_scope"


@attrs.frozen
class Challenge:
    """One refusal that asked for a login.

    :param status: ``401``, or ``403`` for a step-up.
    :param www_authenticate: the server's ``WWW-Authenticate`` header, if it sent one.
    :param protocol_version: the MCP protocol version the refused request announced, if any.
    """

    status: int
    www_authenticate: str | None = None
    protocol_version: str | None = None

    @property
    def step_up(self) -> bool:
        """Whether the server wants more scope than the login granted (``403 insufficient_scope``)."""
        return self.status == 403

    @property
    def scope(self) -> str | None:
        """The scope the server asked for, if it said."""
        return challenge_field(self.www_authenticate, "scope")

    def describe(self) -> str:
        """Why a login is needed, in a few words: what a status shows."""
        scope = self.scope
        if self.step_up:
            return f"the server asks for more scope ({scope})" if scope else "the server asks for more scope"
        return "the server asks for an OAuth login" + (f" (scope {scope})" if scope else "")
