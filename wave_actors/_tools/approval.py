"""Whether a tool call needs approval, and under which name to match rules, build hints and audit it (R-APR-1..3).

:func:`approval_decision` is pure: a host calls it with what the model asked
for, its approval level and the session's snapshot, and gets an
:class:`ApprovalDecision`. The rules:

* **MCP tools always need approval**, except a tool that only reads
  (``readOnlyHint`` true, or a ``tool_overrides`` entry saying so) at
  :attr:`ApprovalLevel.READ_ONLY` or :attr:`ApprovalLevel.READ_WRITE`. A tool
  that does not say counts as writable. :attr:`ApprovalLevel.SMART` always
  asks a person for MCP tools; :attr:`ApprovalLevel.PROXY` hands them to the
  host's automated check (R-APR-1).
* **mcp_call is restored** to the name the tool has in full mode,
  ``mcp__{server}__{tool}``, before anything else: rules, hints, audit records
  and the read-only check all see that name, so rules written for full mode
  keep working in working-set mode. When it cannot be restored (the arguments
  name no server and tool) it is an MCP tool that needs approval: never a
  bypass (R-APR-2).
* **Every other tool keeps its own name** (R-APR-3). Tools that are not MCP
  tools are the host's business: the decision says so
  (``needs_approval is None``) and decides nothing. ``mcp_describe`` reads the
  session's tool list and contacts no server, so it never needs approval; its
  decision names the server and tool its arguments name, for display (R-APR-4).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from wave_actors._status import SessionSnapshot, ToolInfo
from wave_actors._tools.gateway import MCP_CALL, MCP_DESCRIBE, requested_tool
from wave_actors._tools.naming import PREFIX, tool_name as model_visible_name

__all__ = ["ApprovalDecision", "ApprovalLevel", "approval_decision"]

_MCP_PREFIX: Final = f"{PREFIX}__"

Approver = Literal["human", "host_ai"]


class ApprovalLevel(str, enum.Enum):
    """How much a host lets tools run without asking (R-APR-1)."""

    READ_ONLY = "read_only"
    """Read-only tools run freely; everything else asks."""

    READ_WRITE = "read_write"
    """As :attr:`READ_ONLY` for MCP tools: only read-only MCP tools run freely."""

    SMART = "smart"
    """The host decides its own tools; every MCP tool call asks a person."""

    PROXY = "proxy"
    """Every MCP tool call goes to the host's automated check."""


@attrs.frozen
class ApprovalDecision:
    """What :func:`approval_decision` concluded about one tool call.

    :param tool_name: the name to match approval rules against, build hints
        from and write in audit records: ``mcp__{server}__{tool}`` for a
        restored ``mcp_call``, the name as called otherwise (R-APR-2, R-APR-3).
    :param needs_approval: whether the call needs approval; ``None`` for a tool
        that is not an MCP tool: the host's own rules decide, nothing is decided here.
    :param approver: who approves when it does: ``"human"``, or ``"host_ai"``
        for the host's automated check at :attr:`ApprovalLevel.PROXY`.
    :param mcp: the call reaches an MCP server (``mcp_call`` and ``mcp__*`` names).
    :param server: the server's name, when known: an MCP tool's, or the one an
        ``mcp_call`` or ``mcp_describe`` names (R-APR-4).
    :param tool: the tool's raw name on that server, when known (likewise).
    :param read_only: the tool is known to only read (its hint or an override);
        ``False`` when unknown.
    :param concurrency_safe: ``tool_overrides`` says it may run alongside
        other calls; ``False`` when not said.
    :param reason: why, in one sentence, for logs and audit records.
    """

    tool_name: str
    needs_approval: bool | None
    approver: Approver | None
    mcp: bool
    reason: str
    server: str | None = None
    tool: str | None = None
    read_only: bool = False
    concurrency_safe: bool = False

    @property
    def display_name(self) -> str:
        """What a UI shows: ``server.tool`` for an MCP tool whose server and tool are known, else :attr:`tool_name`.

        An ``mcp_describe`` that names a server and a tool shows both after its
        own name (``mcp_describe fs.write_file``): it looks the tool up, it does not run it.
        """
        if self.server is None or self.tool is None:
            return self.tool_name
        named = f"{self.server}.{self.tool}"
        return named if self.mcp else f"{self.tool_name} {named}"


def _find(snapshot: SessionSnapshot, server: str, tool: str) -> ToolInfo | None:
    for status in snapshot.servers:
        if status.name == server and status.enabled and not status.tools_cached:  # cached tools are not callable
            for info in status.tools:
                if info.tool == tool:
                    return info
    return None


def _decide(
    level: ApprovalLevel,
    tool_name: str,
    info: ToolInfo | None,
    what: str,
    server: str | None = None,
    tool: str | None = None,
) -> ApprovalDecision:
    """The decision for an MCP tool call (R-APR-1); ``info`` is ``None`` when the tool is not listed."""
    read_only = info is not None and info.read_only
    needs: bool = True
    approver: Approver | None = "human"
    if level is ApprovalLevel.PROXY:
        approver, reason = "host_ai", f"{what}: at level proxy the host's automated check decides"
    elif level is ApprovalLevel.SMART:
        reason = f"{what}: at level smart a person approves every MCP tool call"
    elif read_only:
        needs, approver, reason = False, None, f"{what} only reads: no approval at level {level.value}"
    elif info is not None and info.read_only_known:
        reason = f"{what} does not only read: a person approves"
    else:
        reason = f"{what} is not known to only read: a person approves"
    return ApprovalDecision(
        tool_name,
        needs,
        approver,
        True,
        reason,
        server=server,
        tool=tool,
        read_only=read_only,
        concurrency_safe=info is not None and info.concurrency_safe is True,
    )


def approval_decision(
    tool_name: str, arguments: Mapping[str, Any] | str | None, level: ApprovalLevel, snapshot: SessionSnapshot
) -> ApprovalDecision:
    """Decide whether the model's call of ``tool_name`` needs approval at ``level`` (R-APR-1..3).

    :param tool_name: the name the model called: ``mcp_call``, ``mcp_describe``,
        an ``mcp__{server}__{tool}`` name, or any of the host's own tools.
    :param arguments: the call's arguments, as a mapping or as JSON text; only
        ``mcp_call``'s and ``mcp_describe``'s are read (for their server and tool).
    :param level: the host's approval level.
    :param snapshot: the session's snapshot, for the tools' read-only-ness and names.
    """
    level = ApprovalLevel(level)
    if tool_name == MCP_CALL:
        # Only server and tool matter for the name: a call refused later for its
        # other arguments is still audited under the tool it meant.
        pair = requested_tool(arguments)
        if pair is None:
            return _decide(level, MCP_CALL, None, "mcp_call names no server and tool, so it cannot be restored")
        server, tool = pair
        info = _find(snapshot, server, tool)
        name = info.name if info is not None else model_visible_name(server, tool)
        return _decide(level, name, info, f"mcp_call restored to {name}", server, tool)
    if tool_name == MCP_DESCRIBE:
        # Named when the arguments name them, so a host can show which tool is looked up (R-APR-4).
        server, tool = requested_tool(arguments) or (None, None)
        return ApprovalDecision(
            MCP_DESCRIBE,
            False,
            None,
            False,
            "mcp_describe reads the session's tool list and contacts no server",
            server=server,
            tool=tool,
            read_only=True,
            concurrency_safe=True,
        )
    if tool_name.startswith(_MCP_PREFIX):
        try:
            info: ToolInfo | None = snapshot.tool(tool_name)
        except KeyError:
            info = None
        server = None if info is None else info.server
        tool = None if info is None else info.tool
        what = tool_name if info is not None else f"{tool_name} (not listed in this session)"
        return _decide(level, tool_name, info, what, server, tool)
    return ApprovalDecision(tool_name, None, None, False, "not an MCP tool: the host's own rules decide")
