"""SIGTERM, SIGINT and SIGHUP end a host only after every server family is reclaimed (R-KILL-7).

By default SIGTERM and SIGHUP end a Python process on the spot: no ``finally``
runs, so no session is destroyed and every server is left to the watchdog.
SIGINT becomes ``KeyboardInterrupt``, which trio raises wherever the main
task happens to be. :func:`reclaim_on_signals` turns all three into one
orderly path instead: the block is cancelled, every host and session in it
closes (reclamation is shielded and bounded, R-KILL-2), and then the process
exits with the status shells use for "ended by signal N", 128 + N.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager

import trio

__all__ = ["reclaim_on_signals"]

logger = logging.getLogger(__name__)

_DEFAULT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


@asynccontextmanager
async def reclaim_on_signals(
    signals: Iterable[int] | None = None, *, exit_on_signal: bool = True
) -> AsyncGenerator[None, None]:
    """Turn SIGTERM, SIGINT and SIGHUP into a clean shutdown of everything opened inside the block (R-KILL-7).

    Wrap the part of the program that opens hosts and sessions::

        async def main() -> None:
            async with wave_actors.reclaim_on_signals():
                async with wave_actors.Host.open() as host:
                    ...  # serve

        trio.run(main)

    On the first signal the block is cancelled, so every ``Host.open`` and
    ``open_session`` inside it closes and reclaims its server families; once
    the block has unwound, :class:`SystemExit` is raised with status 128 + the
    signal's number (130 for SIGINT, 143 for SIGTERM). The first signal is
    logged at INFO level (a shutdown that was asked for is not a fault);
    signals that arrive meanwhile are logged as warnings and ignored: the
    teardown is already bounded by the graces. A block that ends without a
    signal ends as usual.

    :param signals: the signals to handle (default SIGTERM, SIGINT and SIGHUP,
        those of them the platform has).
    :param exit_on_signal: ``False`` ends the block early instead, and the
        program goes on after it (a command whose normal end is a signal, say).
    :raises SystemExit: after the block unwound, if a signal arrived (unless ``exit_on_signal`` is false).
    :raises RuntimeError: not called from the main thread (only it can receive signals).
    """
    wanted = tuple(signals) if signals is not None else _DEFAULT_SIGNALS
    received: list[int] = []
    with trio.open_signal_receiver(*wanted) as receiver:
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as body:

                async def listen() -> None:
                    async for number in receiver:
                        name = signal.Signals(number).name
                        if received:
                            logger.warning("%s: already reclaiming every server family; the graces bound it", name)
                            continue
                        received.append(number)
                        # Asked for, not a fault: a daemon's log should not call its own shutdown a warning.
                        logger.info("%s: reclaiming every server family before exiting", name)
                        body.cancel()

                nursery.start_soon(listen)
                try:
                    yield
                finally:
                    # Keep listening until here: a second Ctrl-C must not interrupt reclamation.
                    nursery.cancel_scope.cancel()
    if received and exit_on_signal:
        raise SystemExit(128 + received[0])
