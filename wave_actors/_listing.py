"""One tool as its server lists it: the record the state machine, the tool snapshot cache and the catalog share.

A live listing (:mod:`wave_actors._actor.transport_task`) makes these, the
state machine keeps them (:attr:`~wave_actors._actor.machine.ActorState.tools`),
the cache stores and reads them (:mod:`wave_actors._cache`), and the catalog
names them for the model (:mod:`wave_actors._catalog`). A leaf: it imports
nothing of the package but :mod:`wave_actors._frozen`, so the cache file's
reader stays free of ``trio`` and ``mcp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from wave_actors._frozen import empty_mapping, freeze_mapping

__all__ = ["ServerTool"]


@attrs.frozen
class ServerTool:
    """A tool as its server listed it, before session-wide naming.

    :param name: the server's raw tool name.
    :param description: its description.
    :param input_schema: its input schema as sent (sanitized later, per declaration, R-TOOL-2).
    :param read_only_hint: ``annotations.readOnlyHint``: ``True``, ``False``, or
        ``None`` when the server did not say; ``tool_overrides`` apply when it
        is shown (R-TOOL-7, R-TOOL-8).
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=empty_mapping, converter=freeze_mapping)
    read_only_hint: bool | None = None
