"""What a session tells without I/O: every answer is read from one snapshot (R-HOST-1).

Both faces of a session answer these the same way: :class:`wave_actors.Session`
reads its own live snapshot, and :class:`wave_actors.asyncio.Session` the
latest snapshot its trio session handed over. Each face says how it gets its
snapshot (:meth:`SessionReads.snapshot`) and which schema keywords its
declarations drop; everything else is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from wave_actors._catalog import unknown_tool_hint
from wave_actors._errors import UnknownServer, UnknownTool
from wave_actors._failure_notices import DEFAULT_FAILURE_WORDING, FailureNotice, FailureWording, failure_notices
from wave_actors._instructions import DEFAULT_WORDING, InstructionMessage, InstructionWording, instruction_updates
from wave_actors._status import ServerStatus, SessionSnapshot, ToolInfo
from wave_actors._tools import (
    LoadMode,
    ToolDeclaration,
    WorkingSet,
    build_working_set,
    full_declarations,
    gateway_declarations,
    search_tools,
)

__all__ = ["SessionReads"]


class SessionReads:
    """The getters of a session, over :meth:`snapshot`; a face supplies the snapshot and its id."""

    @property
    def id(self) -> str:
        """The session's id, unique within its host."""
        raise NotImplementedError

    def snapshot(self) -> SessionSnapshot:
        """Every server's status now, with a version that grows with every change (R-HOST-2)."""
        raise NotImplementedError

    def _dropped_schema_keywords(self) -> frozenset[str]:
        """The JSON Schema keywords the session's declarations drop (R-TOOL-2)."""
        raise NotImplementedError

    def servers(self) -> list[ServerStatus]:
        """Every configured server's status, sorted by name (R-HOST-1)."""
        return list(self.snapshot().servers)

    def server(self, name: str) -> ServerStatus:
        """One server's status.

        :raises UnknownServer: no server of that name is configured.
        """
        snapshot = self.snapshot()
        try:
            return snapshot.server(name)
        except KeyError:
            raise UnknownServer(self._unknown_server(name, snapshot)) from None

    def _unknown_server(self, name: str, snapshot: SessionSnapshot) -> str:
        known = ", ".join(status.name for status in snapshot.servers) or "none"
        return f"no server {name!r} in session {self.id}; configured: {known}"

    def tool_declarations(self, mode: LoadMode) -> tuple[ToolDeclaration, ...]:
        """The tools to declare to the model in ``mode``, from live connections only (R-TOOL-3).

        :param mode: :attr:`LoadMode.FULL` declares every live tool with its
            sanitized schema (R-WS-2); :attr:`LoadMode.WORKING_SET` declares
            exactly ``mcp_call`` and ``mcp_describe`` (R-WS-4), to go with the
            section :meth:`working_set` renders, and nothing at all when the
            session has no enabled server (R-WS-3).
        """
        snapshot = self.snapshot()
        if LoadMode(mode) is LoadMode.WORKING_SET:
            return gateway_declarations() if any(status.enabled for status in snapshot.servers) else ()
        return full_declarations(snapshot.servers, self._dropped_schema_keywords())

    def working_set(self) -> WorkingSet:
        """What the model is told about this session's servers in working-set mode (R-WS-3).

        Frozen data from the current snapshot: enabled servers sorted by name,
        their purpose, tool names (marked read-only where known), counts, and
        why a server is unavailable. ``session.working_set().render()`` is the
        prompt section, byte-identical for equal input; empty without servers.
        """
        return build_working_set(self.snapshot().servers)

    def search_tools(self, query: str, *, limit: int | None = 10) -> tuple[ToolInfo, ...]:
        """The session's callable tools that match ``query``, best first.

        The match is simple and documented: query words against each tool's
        name, its server's name and its description, scored in that order of
        weight; ties by model-visible name. See :func:`wave_actors._tools.search.search_tools`.

        :param query: words to look for.
        :param limit: at most this many tools; ``None`` for all that match.
        :raises ValueError: ``limit`` is negative.
        """
        return search_tools(self.snapshot().servers, query, limit)

    def instruction_updates(
        self,
        history: Iterable[object],
        *,
        denied: Callable[[str], bool] | Iterable[str] = (),
        wording: InstructionWording = DEFAULT_WORDING,
    ) -> list[InstructionMessage]:
        """The server-instruction messages to append before the next model call, for the current snapshot (R-INS-2).

        :func:`wave_actors.instruction_updates` over :meth:`snapshot`: the
        markers in ``history`` are the only memory of what was announced
        (R-INS-3); the system prompt is never involved (R-INS-5).

        :param history: the conversation so far, oldest first; only each item's ``meta`` is read,
            and in it only a marker the library made (R-INS-6): a tool result's ``_meta`` never counts.
        :param denied: the host's permission rules on model-visible tool names,
            a predicate or :mod:`fnmatch` patterns (R-INS-4).
        :param wording: the message templates.
        """
        return instruction_updates(history, self.snapshot(), denied=denied, wording=wording)

    def failure_notices(
        self, history: Iterable[object], *, wording: FailureWording = DEFAULT_FAILURE_WORDING
    ) -> list[FailureNotice]:
        """The notices of failed servers to append before the next model call, for the current snapshot (R-WS-8).

        :func:`wave_actors.failure_notices` over :meth:`snapshot`: each server in
        ``error`` is told once per failure, in both load modes, beside its
        ``unavailable`` line in the working set; the markers in ``history`` are
        the only memory of what was told, as for :meth:`instruction_updates`.

        :param history: the conversation so far, oldest first; only each item's ``meta`` is read,
            and in it only a marker the library made (R-INS-6).
        :param wording: the notice's template.
        """
        return failure_notices(history, self.snapshot(), wording=wording)

    def resolve_tool(self, name: str) -> tuple[str, str]:
        """The ``(server, raw tool)`` a model-visible name maps to (R-TOOL-1).

        :raises UnknownTool: no listed tool has that name.
        """
        snapshot = self.snapshot()
        try:
            tool = snapshot.tool(name)
        except KeyError:
            raise UnknownTool(f"no tool {name!r} in session {self.id}; {unknown_tool_hint(snapshot, name)}") from None
        return tool.server, tool.tool
