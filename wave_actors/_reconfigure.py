"""What a configuration change means for a running session, as a pure diff (R-STORE-5)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Generic, TypeVar

import attrs

from wave_actors._config import Diagnostic, ServerConfig

__all__ = ["ReconfigurePlan", "ReconfigureResult", "plan_reconfigure"]

Key = TypeVar("Key", bound=Hashable)
"""What a plan names its servers by: a server name in a session, a shared connection in a project."""


@attrs.frozen
class ReconfigureResult:
    """What :meth:`Session.reconfigure <wave_actors.Session.reconfigure>` changed (R-STORE-5).

    :param added: new servers, registered ``disconnected``.
    :param removed: servers retired: no new calls, accepted calls finished.
    :param changed: servers whose entry changed, reloaded in place under the same name.
    :param diagnostics: problems found while loading the new configuration.
    """

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]


@attrs.frozen
class ReconfigurePlan(Generic[Key]):
    """How to get from the running servers to a newly loaded configuration.

    :param added: keys only in the new configuration: register them.
    :param removed: keys no longer configured: retire them.
    :param changed: a new connection (fingerprint) or ``enabled`` flipped: reload in place.
    :param kept: the same connection: take the new entry's settings (timeouts, overrides).
    """

    added: tuple[Key, ...]
    removed: tuple[Key, ...]
    changed: tuple[Key, ...]
    kept: tuple[Key, ...]


def plan_reconfigure(running: Mapping[Key, ServerConfig], loaded: Mapping[Key, ServerConfig]) -> ReconfigurePlan[Key]:
    """Compare the running servers' entries with a new configuration, key by key.

    :param running: each running server's current entry.
    :param loaded: the new configuration's entries.
    """

    def changed(name: Key) -> bool:
        old, new = running[name], loaded[name]
        return old.fingerprint != new.fingerprint or old.enabled != new.enabled

    return ReconfigurePlan(
        added=tuple(name for name in loaded if name not in running),
        removed=tuple(name for name in running if name not in loaded),
        changed=tuple(name for name in loaded if name in running and changed(name)),
        kept=tuple(name for name in loaded if name in running and not changed(name)),
    )
