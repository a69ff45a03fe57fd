"""The two gateway tools of working-set mode: ``mcp_call`` and ``mcp_describe`` (R-WS-4).

Instead of one declaration per MCP tool, a model in working-set mode is
given these two, and the working-set section (:mod:`wave_actors._tools.working_set`)
tells it which servers and tools exist:

* ``mcp_call {server, tool, arguments}`` calls a tool;
* ``mcp_describe {server, tool}`` returns a tool's description and input
  schema, from the session's tool list: no request reaches any server.

A host forwards whatever the model called to :meth:`Session.call_tool
<wave_actors.Session.call_tool>`, gateway or not. The gateway exists only in
working-set mode: told the turn is in full mode, both tools answer
:func:`full_mode_refusal` and send nothing (R-WS-7). This module is the pure
part: the declarations, reading the model's arguments (:func:`parse_request`),
finding the tool in a snapshot (:func:`resolve`), and the answers. Names
resolve only among the session's enabled servers, by exact name.

Every mistake is answered with a result the model can act on
(``isError: true``, never an exception, R-WS-6), and nothing is sent: a
server that does not exist names the servers that do; a tool that does not
exist names the server's tools; an empty tool list says *why* it is empty
(the server failed to sync, is not connected yet, or lists nothing) rather
than "no such tool"; arguments that are not a JSON object are refused, JSON
text nested too deeply to read included. The tool's own arguments go in
``arguments``: a flattened call (``{"server", "tool", "path"}``) is refused
rather than sent without ``path``.

What an answer quotes back of the model's input is cut to
:data:`~wave_actors._escaping.ECHO_LIMIT` characters, saying the length, and
at most :data:`_LISTED_KEYS` unexpected keys are named (R-WS-6). Names, the
model's and the servers', are JSON strings with line breaks and invisible
characters escaped (R-WS-5).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import attrs

from wave_actors._escaping import bounded, echoed, quoted
from wave_actors._status import ServerStatus, SessionSnapshot, ToolInfo, Unavailable, unavailable
from wave_actors._tools.declarations import LoadMode, ToolDeclaration
from wave_actors._tools.schema import DEFAULT_DROPPED_KEYWORDS, sanitize_schema
from wave_actors._tools.working_set import unavailable_reason

if TYPE_CHECKING:
    import mcp_types

__all__ = [
    "GATEWAY_TOOLS",
    "MCP_CALL",
    "MCP_DESCRIBE",
    "GatewayRequest",
    "call_gateway",
    "describe_document",
    "error_result",
    "full_mode_refusal",
    "gateway_declarations",
    "json_result",
    "parse_request",
    "requested_tool",
    "resolve",
]

MCP_CALL: Final = "mcp_call"
"""Calls a tool of a server: ``{server, tool, arguments}``."""

MCP_DESCRIBE: Final = "mcp_describe"
"""Describes a tool of a server, schema included: ``{server, tool}``."""

GATEWAY_TOOLS: Final = frozenset({MCP_CALL, MCP_DESCRIBE})

_LISTED_KEYS: Final = 10
"""The most unexpected keys of a model's arguments an answer names."""

_MESSAGE_LIMIT: Final = 1000
"""The most characters of a refusal's reason that may quote the model's input (a key path, say)."""

_SERVER_PROPERTY: Final = {"type": "string", "description": "The MCP server's name, as listed in the MCP working set."}
_TOOL_PROPERTY: Final = {"type": "string", "description": "The tool's name on that server, as listed."}

_DECLARATIONS: Final = (
    ToolDeclaration(
        name=MCP_CALL,
        description=(
            "Call a tool of an MCP server listed in the MCP working set. Put the tool's own arguments in "
            "'arguments'; if unsure of them, use mcp_describe first."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "server": _SERVER_PROPERTY,
                "tool": _TOOL_PROPERTY,
                "arguments": {
                    "type": "object",
                    "description": "The tool's own arguments, as its input schema describes them.",
                    "default": {},
                },
            },
            "required": ["server", "tool"],
            "additionalProperties": False,
        },
    ),
    ToolDeclaration(
        name=MCP_DESCRIBE,
        description=(
            "Describe a tool of an MCP server listed in the MCP working set: what it does and the JSON schema "
            "of its arguments."
        ),
        input_schema={
            "type": "object",
            "properties": {"server": _SERVER_PROPERTY, "tool": _TOOL_PROPERTY},
            "required": ["server", "tool"],
            "additionalProperties": False,
        },
    ),
)


def gateway_declarations() -> tuple[ToolDeclaration, ...]:
    """``mcp_call`` and ``mcp_describe``, with their JSON schemas; always the same two values (R-WS-4)."""
    return _DECLARATIONS


@attrs.frozen
class GatewayRequest:
    """What a model asked a gateway tool for, once its arguments were read.

    :param gateway: :data:`MCP_CALL` or :data:`MCP_DESCRIBE`.
    :param server: the server's name.
    :param tool: the tool's raw name on that server.
    :param arguments: for ``mcp_call``, the tool's own arguments (``{}`` when
        not given); ``None`` for ``mcp_describe``.
    """

    gateway: str
    server: str
    tool: str
    arguments: Mapping[str, Any] | None = None


def _object(value: object) -> Mapping[str, Any] | str:
    """A JSON object, given as a mapping or as JSON text; otherwise what ``value`` is, in words for the model.

    Never raises: JSON text nested deeper than the decoder's recursion allows
    is a mistake like any other (R-WS-6).
    """
    if isinstance(value, str):
        try:
            decoded: object = json.loads(value)
        except RecursionError:
            return "JSON text nested too deeply to read"
        except ValueError:
            decoded = None
        if isinstance(decoded, Mapping):
            return cast("Mapping[str, Any]", decoded)
        return "a string that is not a JSON object"
    if isinstance(value, Mapping):
        return cast("Mapping[str, Any]", value)
    return _kind(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _unexpected(keys: list[str]) -> str:
    named = ", ".join(echoed(key) for key in keys[:_LISTED_KEYS])
    return named if len(keys) <= _LISTED_KEYS else f"{named} and {len(keys) - _LISTED_KEYS} more"


def parse_request(gateway: str, arguments: object) -> GatewayRequest | str:
    """Read a model's arguments to ``gateway``; a refusal for the model when they are unusable.

    Arguments given as JSON text are read as JSON (models and hosts often
    pass them encoded), the tool's own ``arguments`` too.

    :param gateway: :data:`MCP_CALL` or :data:`MCP_DESCRIBE`.
    :param arguments: what the model passed.
    :returns: the request, or the message to answer with (nothing is sent).
    """
    expected = '{"server": ..., "tool": ..., "arguments": {...}}' if gateway == MCP_CALL else '{"server", "tool"}'
    nothing_sent = "Nothing was sent."
    given = _object(arguments)
    if isinstance(given, str):
        return f"{gateway} takes a JSON object {expected}, not {given}. {nothing_sent}"
    problems: list[str] = []
    for key in ("server", "tool"):
        value = given.get(key)
        if not isinstance(value, str) or not value:
            problems.append(f'"{key}" must be a non-empty string' + ("" if key in given else " and is missing"))
    allowed = {"server", "tool", "arguments"} if gateway == MCP_CALL else {"server", "tool"}
    extra = sorted(str(key) for key in given if key not in allowed)
    if extra:
        listed = _unexpected(extra)
        where = 'put the tool\'s own arguments inside "arguments"' if gateway == MCP_CALL else "only server and tool"
        problems.append(f"unexpected {listed} ({where})")
    inner: Mapping[str, Any] | None = None
    if gateway == MCP_CALL:
        raw = given.get("arguments")
        read: Mapping[str, Any] | str = {} if raw is None else _object(raw)
        if isinstance(read, str):
            problems.append(f'"arguments" must be a JSON object, not {read}')
        else:
            inner = read
    if problems:
        return f"{gateway} needs {expected}: " + "; ".join(problems) + f". {nothing_sent}"
    return GatewayRequest(gateway, cast(str, given["server"]), cast(str, given["tool"]), inner)


def requested_tool(arguments: object) -> tuple[str, str] | None:
    """The ``(server, tool)`` a gateway call's arguments name, whatever else is wrong with them.

    :param arguments: what the model passed (a mapping or JSON text).
    :returns: both names when both are non-empty strings, else ``None``.
    """
    given = _object(arguments)
    if isinstance(given, str):
        return None
    server, tool = given.get("server"), given.get("tool")
    if isinstance(server, str) and server and isinstance(tool, str) and tool:
        return server, tool
    return None


def _listed(names: Iterable[str]) -> str:
    return ", ".join(quoted(name) for name in names) or "none"


def resolve(request: GatewayRequest, snapshot: SessionSnapshot) -> ToolInfo | str:
    """The tool ``request`` names, among the snapshot's enabled servers; otherwise what to tell the model.

    Only live tool lists count: tools known from a cache are never callable
    (R-TOOL-3). A tool whose server is reconnecting is still found (its list
    is kept, R-RACE-4): describing it works, and calling it fails like any
    direct call.

    :param request: what the model asked for.
    :param snapshot: the session's snapshot now.
    :returns: the tool, or a message (nothing was sent).
    """
    servers = [status for status in snapshot.servers if status.enabled]
    status = next((status for status in servers if status.name == request.server), None)
    if status is None:
        return (
            f"There is no MCP server {echoed(request.server)} in this session. "
            f"Servers: {_listed(status.name for status in servers)}. Nothing was sent."
        )
    tools = () if status.tools_cached else status.tools
    if not tools:
        return _empty_list(status)
    for tool in tools:
        if tool.tool == request.tool:
            return tool
    return (
        f"Server {quoted(status.name)} has no tool "
        f"{echoed(request.tool)}. Its tools: {_listed(sorted(tool.tool for tool in tools))}. "
        "Nothing was sent."
    )


def _empty_list(status: ServerStatus) -> str:
    name = quoted(status.name)
    reason = unavailable_reason(status)
    why = unavailable(status.state, manually_disconnected=status.manually_disconnected)
    if why in (Unavailable.FAILED, Unavailable.RECONNECTING) and status.error:
        # Told apart from "no such tool": retrying another name cannot help (R-WS-4).
        return (
            f"The tool list of server {name} is empty because the server failed to sync: {reason}. "
            "Do not retry it in this turn. Nothing was sent."
        )
    if reason is not None:
        return f"Server {name} is {reason}, so its tools are not known. Nothing was sent."
    return f"Server {name} lists no tools. Nothing was sent."


def describe_document(
    tool: ToolInfo, status: ServerStatus, dropped_keywords: Iterable[str] = DEFAULT_DROPPED_KEYWORDS
) -> dict[str, Any]:
    """What ``mcp_describe`` answers about ``tool``: its description, sanitized schema and read-only-ness.

    :param tool: the tool.
    :param status: its server's status (to say when it cannot be called now).
    :param dropped_keywords: schema keywords to strip, as for declarations (R-TOOL-2).
    """
    document: dict[str, Any] = {
        "server": tool.server,
        "tool": tool.tool,
        "description": tool.description,
        "inputSchema": sanitize_schema(tool.input_schema, dropped_keywords),
        "readOnly": tool.read_only,
    }
    if tool.guidance:
        document["guidance"] = tool.guidance
    unavailable = unavailable_reason(status)
    if unavailable is not None:
        document["unavailable"] = unavailable
    return document


def error_result(text: str) -> mcp_types.CallToolResult:
    """A tool error the model reads: ``isError: true`` with ``text``."""
    import mcp_types

    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)


def json_result(document: Mapping[str, Any]) -> mcp_types.CallToolResult:
    """A successful result carrying ``document`` as JSON text and as structured content."""
    import mcp_types

    text = json.dumps(document, ensure_ascii=False)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], structured_content=dict(document)
    )


def full_mode_refusal(gateway: str) -> str:
    """What a model that calls ``gateway`` in a full-mode turn is told: the gateway is not part of that turn (R-WS-7).

    :param gateway: :data:`MCP_CALL` or :data:`MCP_DESCRIBE`.
    """
    return (
        f"{gateway} belongs to the MCP working-set mode, and this turn is in full mode: every MCP tool is "
        "declared under its own name (mcp__{server}__{tool}) with its schema. Call the tool by that name. "
        "Nothing was sent."
    )


async def call_gateway(
    gateway: str,
    arguments: object,
    snapshot: SessionSnapshot,
    call_tool: Callable[[str, Mapping[str, Any] | None], Awaitable[mcp_types.CallToolResult]],
    dropped_keywords: Iterable[str] = DEFAULT_DROPPED_KEYWORDS,
    *,
    mode: LoadMode | None = None,
) -> mcp_types.CallToolResult:
    """Run ``mcp_call`` or ``mcp_describe`` (R-WS-4): every mistake is a result for the model, and nothing is sent.

    :param gateway: :data:`MCP_CALL` or :data:`MCP_DESCRIBE`.
    :param arguments: what the model passed.
    :param snapshot: the session's snapshot, where names resolve (and, for
        ``mcp_describe``, where the answer comes from: no request reaches the server).
    :param call_tool: the session's one call path, by model-visible name, so a
        resolved ``mcp_call`` has a direct call's deadline, no-replay and error
        rules (R-TOOL-4..6); its exceptions propagate.
    :param dropped_keywords: schema keywords ``mcp_describe`` strips (R-TOOL-2).
    :param mode: the turn's load mode, when the caller knows it: in
        :attr:`LoadMode.FULL` the gateway does not exist, and both tools
        answer :func:`full_mode_refusal` (R-WS-7); ``None`` runs them.
    """
    if mode is LoadMode.FULL:
        return error_result(full_mode_refusal(gateway))
    request = parse_request(gateway, arguments)
    if isinstance(request, str):
        return error_result(request)
    tool = resolve(request, snapshot)
    if isinstance(tool, str):
        return error_result(tool)
    if request.gateway == MCP_DESCRIBE:
        return json_result(describe_document(tool, snapshot.server(tool.server), dropped_keywords))
    try:
        return await call_tool(tool.name, request.arguments)
    except TypeError as error:
        # The reason may name the model's keys on the way to the bad value: bounded like any echo (R-WS-6).
        why = bounded(str(error).removesuffix("; nothing was sent"), _MESSAGE_LIMIT)
        return error_result(f"mcp_call: the arguments of {quoted(tool.tool)} cannot be sent: {why}. Nothing was sent.")
