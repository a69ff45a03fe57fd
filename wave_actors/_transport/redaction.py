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

__all__ = ["SDK_LOGGERS", "RedactingFilter", "install_log_redaction", "redact_text"]

SDK_LOGGERS: Final = (
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client._transport",
    "mcp.client.session",
    "mcp.shared._httpx_utils",
    "mcp.shared.jsonrpc_dispatcher",
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


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`~wave_actors._config.redact_url`.

    :param text: any text, e.g. an exception's message.
    """
    if "://" not in text:
        return text
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


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
