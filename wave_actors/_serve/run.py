"""One run of ``wave-actors serve``: the host, the signals, and the transport (R-SERVE-1, R-KILL-7).

The host is opened with its defaults (the watchdog included), so a ``serve``
killed with SIGKILL leaves no server family behind for more than 2 s; SIGTERM,
SIGINT and SIGHUP close every session and reclaim every process before the
process exits (:func:`~wave_actors.reclaim_on_signals`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import attrs

from wave_actors import Host, LoadMode, ProjectOptions, TrustMode, reclaim_on_signals
from wave_actors._serve.front import FrontOptions

if TYPE_CHECKING:
    from wave_actors._serve.http import HttpOptions

__all__ = ["ServeOptions", "run_serve"]


@attrs.frozen
class ServeOptions:
    """Everything a run of ``serve`` is told on its command line.

    :param workdir: the project directory, resolved.
    :param home: the user directory (``None``: ``~/.wave``).
    :param trust: which project entries load (R-CFG-10).
    :param full: list every tool (``full``) rather than the gateway and the working set.
    :param project_idle: seconds a server nobody uses is kept (R-SCOPE-2).
    :param http: serve streamable HTTP with these options; ``None`` serves stdio.
    """

    workdir: Path
    home: Path | None = None
    trust: TrustMode = "all"
    full: bool = False
    project_idle: float = 300.0
    http: HttpOptions | None = None


async def run_serve(options: ServeOptions, err: TextIO) -> None:
    """Serve until the client leaves (stdio) or a signal arrives; return once every process is reclaimed.

    :param options: the run's options.
    :param err: where the HTTP address is announced, once it listens.
    """
    front = FrontOptions(
        workdir=options.workdir, mode=LoadMode.FULL if options.full else LoadMode.WORKING_SET, trust=options.trust
    )
    async with (
        reclaim_on_signals(),
        Host.open(home=options.home, project=ProjectOptions(idle_timeout=options.project_idle)) as host,
    ):
        if options.http is None:
            from wave_actors._serve.stdio import serve_stdio

            await serve_stdio(host, front)
        else:
            from wave_actors._serve.http import serve_http

            await serve_http(host, front, options.http, err)
