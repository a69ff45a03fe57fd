"""Secrets kept out of what the transport, the MCP SDK and its HTTP client log or raise (R-CFG-12).

A configured URL may carry a token in its query (``?api_key=...``). The
SDK's streamable HTTP and SSE clients log the URL they connect to at DEBUG,
and its HTTP client (``httpx2``) logs every request's URL at INFO, so a host
that shows INFO records would print the token on every tool call. The SDK is
not ours to change; its loggers are ours to filter: :func:`install_log_redaction`
puts :class:`RedactingFilter` on each of them, once, before the first remote
dial, and it rewrites every URL in a record (message, arguments and
traceback) with :func:`~wave_actors._config.redact_url`.

Our own messages never contain ``env`` or ``headers`` values; URLs reach them
only inside a foreign exception's text (an HTTP status error names the URL it
failed on), which :func:`redact_text` cleans wherever the transport words a
failure (:mod:`.failures`).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Final

from wave_actors._config import redact_url
from wave_actors._config.redact import MASK

__all__ = ["SDK_LOGGERS", "RedactingFilter", "install_log_redaction", "redact_text"]

SDK_LOGGERS: Final = (
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client._transport",
    "mcp.client.session",
    "mcp.shared._httpx_utils",
    "mcp.shared.jsonrpc_dispatcher",
    "mcp.client.auth.oauth2",
    "mcp.client.auth.utils",
    "mcp.client.auth.extensions.client_credentials",
    "httpx2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
)
"""The loggers that may print a configured URL: the SDK's client modules and its HTTP stack.

A filter on a logger sees only the records logged on it, never those of its
children, so each module's logger is named.
"""

# A URL as it appears in running text: a scheme, then everything up to a space or a quote.
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")

# OAuth secrets as an error may quote them (R-AUTH-3): a bearer token, or a
# token field of a JSON or form body (an SDK error about a malformed answer shows its input).
_SECRET_FIELDS: Final = (
    r"access_token|refresh_token|id_token|client_secret|code_verifier|code|assertion|client_assertion"
)
_AUTHORIZATION: Final = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]+")
_JSON_SECRET: Final = re.compile(rf"""(\\?["'](?:{_SECRET_FIELDS})\\?["']\s*:\s*\\?["'])[^"'\\]*""")
_FORM_SECRET: Final = re.compile(rf"(\b(?:{_SECRET_FIELDS})=)[^&\s'\"]+")


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`~wave_actors._config.redact_url`, and OAuth secrets masked.

    A bearer token and the token fields of a JSON or form body
    (``access_token``, ``refresh_token``, ``client_secret``, ``code``, ...)
    keep their names and lose their values (R-AUTH-3).

    :param text: any text, e.g. an exception's message.
    """
    if "://" in text:
        text = _URL.sub(lambda match: redact_url(match.group(0)), text)
    if not any(marker in text for marker in ("earer", "token", "secret", "code", "assertion")):
        return text
    text = _AUTHORIZATION.sub(lambda match: f"{match.group(1)}{match.group(2)}{MASK}", text)
    text = _JSON_SECRET.sub(lambda match: f"{match.group(1)}{MASK}", text)
    return _FORM_SECRET.sub(lambda match: f"{match.group(1)}{MASK}", text)


class RedactingFilter(logging.Filter):
    """Rewrites the URLs of a log record without their secrets; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place.

        :param record: the record about to be handled.
        :returns: ``True``: the record is kept.
        """
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # Formatters print exc_text when it is set, so the traceback is shown redacted.
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


@functools.cache
def install_log_redaction() -> RedactingFilter:
    """Put the one :class:`RedactingFilter` on every logger of :data:`SDK_LOGGERS`; idempotent.

    Creating a logger imports nothing, so this costs nothing when the SDK is never used.

    :returns: the filter, for tests.
    """
    redacting = RedactingFilter()
    for name in SDK_LOGGERS:
        logging.getLogger(name).addFilter(redacting)
    return redacting
