"""Whether the repository's version control tracks a file: a warning, never a gate (R-CFG-10).

A trusted folder's ``.wave/settings.local.json`` approves the servers it
enables (:mod:`wave_actors._config.trust`). When the repository commits that
file, whoever can push to it chooses which of its servers run there: worth a
warning. Whether a file is tracked is a heuristic, so nothing is decided on
it: approvals live in the user's home, where nothing inside a project can
write. The only version control asked is git:

* no ``.git`` in the workdir or any parent: not in a git work tree, and git
  is not run;
* ``git`` not on ``PATH``: the answer is "unknown";
* otherwise ``git ls-files --error-unmatch`` answers, within
  :data:`GIT_TIMEOUT_SECONDS`, run *from the workdir* (never from the file's
  own directory, which a repository can make a bare repository of its own)
  with ``safe.bareRepository=explicit``, ``core.fsmonitor`` off (a work tree
  that arrived as an archive may carry its own ``.git/config`` naming a
  command for it) and without the caller's ``GIT_*`` variables, which could
  point it at another repository.
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
    :param reason: why, for a log record.
    """

    tracked: bool | None
    reason: str


def _inside_git_work_tree(directory: Path) -> bool:
    return any(os.path.lexists(candidate / ".git") for candidate in (directory, *directory.parents))


def _git_environment() -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    environment.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return environment


def git_tracking(workdir: Path, path: Path) -> Tracking:
    """Ask whether git tracks ``path``, a file inside ``workdir``; never raises (R-CFG-10).

    Synchronous and safe in a worker thread: it may run ``git`` (bounded by
    :data:`GIT_TIMEOUT_SECONDS`) and waits for it.

    :param workdir: the resolved project directory: git runs there.
    :param path: an existing file under ``workdir``, absolute.
    """
    if not _inside_git_work_tree(workdir):
        return Tracking(False, "not inside a git work tree")
    git = shutil.which("git")
    if git is None:
        return Tracking(None, "git is not installed")
    command = [git, "--no-pager", "-c", "core.fsmonitor=false", "-c", "safe.bareRepository=explicit"]
    command += ["-C", str(workdir), "ls-files", "--error-unmatch", "--", str(path.relative_to(workdir))]
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
    logger.debug("cannot tell whether git tracks %s: %s", path, detail)
    return Tracking(None, f"git failed: {detail}")
