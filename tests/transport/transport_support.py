"""Helpers for transport tests: a server entry as a loaded config."""

from __future__ import annotations

from typing import Any

from wave_actors import ServerConfig, Source


def config_for(entry: dict[str, Any], name: str = "fault") -> ServerConfig:
    """The entry as the constructor source would load it, without the loader's checks."""
    return ServerConfig(
        name=name,
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type=str(entry.get("type", "stdio")),
        command=entry.get("command"),
        args=tuple(entry.get("args", ())),
        env=entry.get("env", {}),
        url=entry.get("url"),
    )
