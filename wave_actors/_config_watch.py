"""Noticing edits to the configuration files of a host's live workdirs (``Host.open(watch_config=True)``).

Another process edits ``<workdir>/.mcp.json`` or ``<home>/mcp.json`` (a
settings page, ``wave-actors remove``, a text editor), or the user's trust
decisions (``<workdir>/.wave/settings.local.json``, ``wave-actors approve``
writing ``<home>/project-trust.json``): the host should follow without being
told. :class:`ConfigWatcher` polls each file's identity
(modification time, size, inode) from a worker thread,
and calls back once a file changed and then held still for a whole poll, so an editor that writes in
several steps causes one reconcile, not several. A change of a file in the
home concerns every live workdir. Polling, not inotify: it needs nothing
beyond the standard library, works on every platform and network file system,
and costs a few ``stat`` calls per workdir per interval. The workdirs are the
sessions' own, resolved when each was created, and are not resolved again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Final, final

import trio

from wave_actors._config.approvals import approvals_file
from wave_actors._config.sources import project_file, user_file
from wave_actors._config.trust import settings_file

__all__ = ["POLL_INTERVAL", "ConfigWatcher"]

logger = logging.getLogger(__name__)

POLL_INTERVAL: Final = 0.5
"""Seconds between two looks at the files; a change is acted on after one look that saw it hold still."""

_Identity = tuple[int, int, int] | None  # (mtime_ns, size, inode), or None for a missing file
_Files = tuple[_Identity, ...]  # the identities of every file a workdir's configuration is read from


def _identity(path: Path) -> _Identity:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size, status.st_ino)


def _look(home: Path, workdirs: Iterable[Path]) -> dict[str, _Files]:
    """Each workdir with the identities of its project and settings files and of the home's files (blocking)."""
    shared = (_identity(user_file(home)), _identity(approvals_file(home)))
    return {
        str(workdir): (_identity(project_file(workdir)), _identity(settings_file(workdir)), *shared)
        for workdir in workdirs
    }


@final
class ConfigWatcher:
    """Calls ``on_change(workdir)`` after the configuration of a live workdir changed on disk.

    :param home: the directory of the user file.
    :param workdirs: the host's live workdirs, asked at every look.
    :param on_change: the reconcile; a failure is logged and watching goes on.
    :param interval: seconds between looks.
    """

    def __init__(
        self,
        home: Path,
        workdirs: Callable[[], Iterable[Path]],
        on_change: Callable[[Path], Awaitable[object]],
        *,
        interval: float = POLL_INTERVAL,
    ) -> None:
        self._home = home
        self._workdirs = workdirs
        self._on_change = on_change
        self._interval = interval
        self._last: dict[str, _Files] = {}
        self._noted: set[str] = set()

    async def note(self, workdir: Path) -> None:
        """Take the files' identities of a workdir about to load its configuration, unless watched already.

        Taken before the load, so an edit made between the load and the next
        look is caught; an edit between this and the load costs a reconcile
        that changes nothing.
        """
        seen = await trio.to_thread.run_sync(_look, self._home, [workdir])
        for resolved, identity in seen.items():
            if resolved not in self._last:
                self._last[resolved] = identity
                self._noted.add(resolved)

    async def run(self) -> None:
        """Watch until cancelled."""
        moving: set[str] = set()  # changed at the last look: acted on once a look sees them still
        while True:
            await trio.sleep(self._interval)
            current = list(self._workdirs())
            seen = await trio.to_thread.run_sync(_look, self._home, current, abandon_on_cancel=True)
            last = self._last
            settled = [workdir for workdir in moving if workdir in seen and seen[workdir] == last.get(workdir)]
            moving = {workdir for workdir, identity in seen.items() if workdir in last and identity != last[workdir]}
            # Forget workdirs no longer live, except those noted for a session still being made.
            self._last = {**{workdir: last[workdir] for workdir in self._noted if workdir in last}, **seen}
            self._noted.difference_update(seen)
            for workdir in settled:
                logger.info("configuration of %s changed on disk; reconciling", workdir)
                try:
                    await self._on_change(Path(workdir))
                except Exception:
                    logger.warning("reconciling %s after a configuration change failed", workdir, exc_info=True)
