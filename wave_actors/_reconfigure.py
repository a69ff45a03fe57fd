"""What a configuration change means for a running session, as a pure diff (R-STORE-5)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from wave_actors._config import Diagnostic, ServerConfig

__all__ = ["ReconfigurePlan", "ReconfigureResult", "plan_reconfigure"]


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
class ReconfigurePlan:
    """How to get from the running servers to a newly loaded configuration.

    :param added: names only in the new configuration: register them.
    :param removed: names no longer configured: retire them.
    :param changed: a new connection (fingerprint) or ``enabled`` flipped: reload in place.
    :param kept: the same connection: take the new entry's settings (timeouts, overrides).
    """

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    kept: tuple[str, ...]


def plan_reconfigure(running: Mapping[str, ServerConfig], loaded: Mapping[str, ServerConfig]) -> ReconfigurePlan:
    """Compare the running servers' entries with a new configuration, name by name.

    :param running: each running server's current entry.
    :param loaded: the new configuration's entries.
    """

    def changed(name: str) -> bool:
        old, new = running[name], loaded[name]
        return old.fingerprint != new.fingerprint or old.enabled != new.enabled

    return ReconfigurePlan(
        added=tuple(name for name in loaded if name not in running),
        removed=tuple(name for name in running if name not in loaded),
        changed=tuple(name for name in loaded if name in running and changed(name)),
        kept=tuple(name for name in loaded if name in running and not changed(name)),
    )
