"""The parent-death signal a stdio server asks for, and how it asks (``PR_SET_PDEATHSIG``, R-KILL-7).

The server asks for SIGTERM on its parent's death before it runs, and the
request survives the exec. SIGTERM, not SIGKILL: a server that forwards it
(``npx``, shells, supervisors) takes its own children down with it, and the
watchdog follows with SIGKILL where it does not.

How the request is made. It is a ``prctl`` call in the new process before
it execs the server. Made by Python code there (``preexec_fn``,
:func:`ask_for_parent_death_signal`), it makes Python ``fork`` instead of
``vfork``, and a fork is dear in a host: it copies the host's page tables
under the GIL (5 to 7 ms per spawn in a 75 MB host, 17 ms at 275 MB, against
0.2 ms for ``vfork``), and leaves every page of the host copy-on-write, so
the host's threads then fault on their next write to each. Dialing 20 stdio
servers that way cost the host 230 ms of CPU (the event loop's thread
130 ms) where the bare SDK's same dials cost 50 ms, and the turn took 1.3 to
1.5 times as long. So where util-linux's ``setpriv`` can make the request
(``--pdeathsig``, util-linux 2.33 and later; found once, by a trial run,
:func:`find_setpriv`, and only among the system's own programs, never on the
host's ``PATH``: it sees every server's command line and environment), the
server is ``vfork``-ed through it:
``setpriv --pdeathsig SIGTERM -- argv...`` (:func:`setpriv_argv`) makes the
call and execs the server in the same process (same pid, session,
environment and ``argv``; the family tag is in the environment from the
start), for about 1 ms of CPU in the new process. The host's CPU for those
20 dials drops to 50 to 80 ms.

The spawn itself, and why it needs threads of its own, is the stdio
transport's: :mod:`wave_actors._transport.spawn`. What a host reports
(``OrphanProtection.parent_death_signal``) is
:func:`parent_death_signal_available`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Final

import trio

from wave_actors._family.prctl import PR_SET_PDEATHSIG, PRCTL_AVAILABLE, prctl
from wave_actors._family.system_program import trusted_system_program

__all__ = [
    "PARENT_DEATH_SIGNAL",
    "ask_for_parent_death_signal",
    "find_setpriv",
    "parent_death_signal_available",
    "setpriv_argv",
]

PARENT_DEATH_SIGNAL: Final = signal.SIGTERM
"""What a server receives when its host dies."""

# The spawner hands a process its own threads started to trio with the constructor open_process uses.
_AVAILABLE: Final = PRCTL_AVAILABLE and hasattr(trio.Process, "_create")

_PROBE_LIMIT: Final = 5.0


def parent_death_signal_available() -> bool:
    """Whether servers are spawned with a parent-death signal here (Linux with ``prctl``, and a trio that allows it)."""
    return _AVAILABLE


def ask_for_parent_death_signal(host: int) -> None:
    """In the child, after fork and before exec: signal me when my parent thread dies.

    :param host: the pid of the process that forks; if it is not our parent
        any more, it died before the request, and no signal would ever come.
    """
    prctl(PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL)
    if os.getppid() != host:
        os._exit(1)


def setpriv_argv(setpriv: str, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` with the parent-death signal, through ``setpriv``."""
    return [setpriv, "--pdeathsig", PARENT_DEATH_SIGNAL.name, "--", *argv]


def find_setpriv() -> str | None:
    """The path of a ``setpriv`` that sets the parent-death signal and execs, or ``None``.

    Only a ``setpriv`` of the system's own qualifies
    (:func:`~wave_actors._family.system_program.trusted_system_program`: in
    ``/usr/bin``, ``/bin``, ``/usr/sbin`` or ``/sbin``, root's and writable by
    nobody else); the host's ``PATH`` is never searched, and nothing else is
    ever run. Blocking: a trial run of ``setpriv --pdeathsig SIGTERM --
    setpriv --version`` (two execs of a small binary, a few milliseconds).
    The spawner runs it once.
    """
    setpriv = trusted_system_program("setpriv")
    if setpriv is None:
        return None
    try:
        trial = subprocess.run(
            setpriv_argv(setpriv, [setpriv, "--version"]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_PROBE_LIMIT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return setpriv if trial.returncode == 0 else None
