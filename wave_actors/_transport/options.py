"""How transports are opened and closed: :class:`TransportOptions`, and the identity a client announces.

A module of its own so that every transport (``dial``, ``remote``, ``http``,
``sse``, ``stdio``) can take its settings without importing the dialing code.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Final

import attrs

from wave_actors._config import ShutdownGraces
from wave_actors._family.graces import Graces

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "TransportOptions", "client_implementation", "with_shutdown"]

DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024


def _client_info(value: tuple[str, str] | None) -> tuple[str, str] | None:
    if value is None:
        return None
    if (
        not isinstance(value, tuple)  # pyright: ignore[reportUnnecessaryIsInstance]  # callers are untyped too
        or len(value) != 2
        or not all(isinstance(part, str) and part for part in value)  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        raise TypeError(f"client_info must be a (name, version) pair of non-empty strings, not {value!r}")
    return value


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"TransportOptions.{attribute.name} must be a positive number of bytes, not {value!r}")


@attrs.frozen
class TransportOptions:
    """How transports are opened and closed.

    :param graces: stdio reclamation stage lengths (R-KILL-1, R-KILL-2); an
        entry's ``shutdown`` overrides them for its server (R-KILL-9).
    :param stderr_lines: lines of a stdio server's stderr kept in memory.
    :param http_timeout: seconds for HTTP connect, write and pool waits (and
        for starting a new session when an http server forgot its own).
    :param ping_interval: seconds between liveness pings on http and sse
        connections (a dropped HTTP server sends no EOF); ``None`` disables.
        stdio needs none: a dead process closes its pipes.
    :param ping_timeout: seconds a ping may take before the connection is
        declared lost.
    :param max_message_bytes: the largest message a server may send: one
        stdio line, one server-sent event or JSON answer over http or sse
        (64 MiB by default). A larger answer is skipped unread (never held
        whole) and fails its request with a :class:`~wave_actors.ToolCallError`
        naming this limit; the connection and its other calls go on
        (R-TOOL-12). A larger stdio line or sse event whose request cannot
        be told (no id where serializers write it) is dropped with a warning.
    :param close_timeout: seconds closing an http or sse connection may take,
        and as many again for ending its server-side session first (the
        ``DELETE`` of streamable HTTP, R-KILL-8).
    :param client_info: the ``(name, version)`` servers are told in
        ``initialize`` (``clientInfo``); ``None``: ``("wave-actors", <its version>)``.
    :raises TypeError: ``client_info`` is not a pair of non-empty strings.
    :raises ValueError: ``max_message_bytes`` is not a positive integer.
    """

    graces: Graces = Graces()
    stderr_lines: int = 200
    http_timeout: float = 30.0
    ping_interval: float | None = 10.0
    ping_timeout: float = 5.0
    max_message_bytes: int = attrs.field(default=DEFAULT_MAX_MESSAGE_BYTES, validator=_positive)
    close_timeout: float = 3.0
    client_info: tuple[str, str] | None = attrs.field(default=None, converter=_client_info)


def with_shutdown(options: TransportOptions, shutdown: ShutdownGraces) -> TransportOptions:
    """``options`` with the graces an entry's ``shutdown`` sets in place of the host's (R-KILL-9).

    :param options: the session's (or the host's) transport options.
    :param shutdown: the entry's ``shutdown``; what it leaves unset keeps ``options.graces``.
    """
    if shutdown.eof_ms is None and shutdown.term_ms is None:
        return options
    graces = options.graces
    return attrs.evolve(
        options,
        graces=attrs.evolve(
            graces,
            eof=graces.eof if shutdown.eof_ms is None else shutdown.eof_ms / 1000,
            term=graces.term if shutdown.term_ms is None else shutdown.term_ms / 1000,
        ),
    )


def client_implementation(options: TransportOptions) -> tuple[str, str]:
    """The ``(name, version)`` a connection opened with ``options`` announces."""
    if options.client_info is not None:
        return options.client_info
    return "wave-actors", _package_version()


@functools.cache
def _package_version() -> str:
    try:
        return importlib.metadata.version("wave-actors")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"  # run from a source tree that was never installed
