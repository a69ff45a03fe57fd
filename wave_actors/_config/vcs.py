"""Whether the repository's version control tracks a file (R-CFG-10).

Project approvals must live in a file the user wrote, not one that came with
the repository: a repository that ships its own ``.wave/settings.local.json``
with ``enable_all`` would otherwise approve its own commands. The only version
control asked is git:

* no ``.git`` directory or file in the file's directory or any parent: the
  file is not in a git work tree, hence untracked, and git is not run;
* ``git`` not on ``PATH``: taken as untracked (nothing else could have put the
  file under version control on this machine), said in a debug log record;
* otherwise ``git ls-files --error-unmatch`` answers, within
  :data:`GIT_TIMEOUT_SECONDS`. A file in the index counts as tracked, committed
  or only staged. When git fails or does not answer in time, the answer is
  "unknown", and callers treat that like "tracked": when in doubt, do not run
  the repository's commands.

git runs with ``core.fsmonitor`` off, since a work tree that arrived as an
archive may carry its own ``.git/config`` naming a command for it, and without
the caller's ``GIT_*`` variables, which could point it at another repository.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import attrs

__all__ = ["GIT_TIMEOUT_SECONDS", "Tracking", "git_tracking"]

logger = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS: Final = 3.0
"""How long ``git ls-files`` may take; it reads the index only, which takes milliseconds."""


@attrs.frozen
class Tracking:
    """The answer about one file.

    :param tracked: ``True`` or ``False``, or ``None`` when it cannot be told.
    :param reason: why, for a diagnostic or a log record.
    """

    tracked: bool | None
    reason: str


def _inside_git_work_tree(directory: Path) -> bool:
    return any(os.path.lexists(candidate / ".git") for candidate in (directory, *directory.parents))


def _git_environment() -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    environment.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return environment


def git_tracking(path: Path) -> Tracking:
    """Ask whether git tracks ``path``; never raises (R-CFG-10).

    Synchronous and safe in a worker thread: it may run ``git`` (bounded by
    :data:`GIT_TIMEOUT_SECONDS`) and waits for it.

    :param path: an existing file, absolute.
    """
    directory = path.parent
    if not _inside_git_work_tree(directory):
        return Tracking(False, "not inside a git work tree")
    git = shutil.which("git")
    if git is None:
        logger.debug("git is not on PATH; %s is taken as not tracked by version control", path)
        return Tracking(False, "git is not installed")
    command = [git, "--no-pager", "-c", "core.fsmonitor=false", "-C", str(directory)]
    command += ["ls-files", "--error-unmatch", "--", path.name]
    try:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=_git_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Tracking(None, f"git did not answer within {GIT_TIMEOUT_SECONDS:g} s")
    except OSError as error:
        return Tracking(None, f"git could not be run ({error.strerror or error})")
    if result.returncode == 0:
        return Tracking(True, "git tracks it")
    if result.returncode == 1:
        return Tracking(False, "git does not track it")
    message = result.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = message[0][:200] if message else f"exit status {result.returncode}"
    return Tracking(None, f"git failed: {detail}")
