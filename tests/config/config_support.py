"""What the configuration tests share: a project and home directory pair, and writing a JSON file."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from wave_actors._config import LoadedConfig, load_config


@attrs.frozen
class Layout:
    """A project directory and a home directory, with the configuration files each may hold."""

    workdir: Path
    home: Path

    @property
    def project_file(self) -> Path:
        """The project's ``.mcp.json``."""
        return self.workdir / ".mcp.json"

    @property
    def user_file(self) -> Path:
        """The user's ``mcp.json`` in the home directory."""
        return self.home / "mcp.json"

    @property
    def settings_file(self) -> Path:
        """The project's ``.wave/settings.local.json``."""
        return self.workdir / ".wave" / "settings.local.json"

    def file(self, which: str) -> Path:
        """The file of source ``which``: ``project``, ``user`` or ``settings``."""
        return {"project": self.project_file, "user": self.user_file, "settings": self.settings_file}[which]

    def load(self, **kwargs: object) -> LoadedConfig:
        """``load_config`` of this layout, with an empty environment unless ``environ`` is given."""
        kwargs.setdefault("environ", {})
        return load_config(self.workdir, home=self.home, **kwargs)  # type: ignore[arg-type]


def write(path: Path, document: object) -> None:
    """Writes ``document`` to ``path`` as JSON."""
    path.write_text(json.dumps(document), encoding="utf-8")
