"""Tools: naming, schema sanitizing, declarations, the working set, gateway tools, approval, load mode.

Pure functions over status snapshots, no I/O: the same input always gives
byte-identical output.
"""

from wave_actors._tools.approval import (
    ApprovalDecision as ApprovalDecision,
    ApprovalLevel as ApprovalLevel,
    approval_decision as approval_decision,
)
from wave_actors._tools.declarations import (
    LoadMode as LoadMode,
    ToolDeclaration as ToolDeclaration,
    full_declarations as full_declarations,
)
from wave_actors._tools.gateway import (
    GATEWAY_TOOLS as GATEWAY_TOOLS,
    MCP_CALL as MCP_CALL,
    MCP_DESCRIBE as MCP_DESCRIBE,
    GatewayRequest as GatewayRequest,
    call_gateway as call_gateway,
    describe_document as describe_document,
    error_result as error_result,
    full_mode_refusal as full_mode_refusal,
    gateway_declarations as gateway_declarations,
    json_result as json_result,
    parse_request as parse_request,
    requested_tool as requested_tool,
    resolve as resolve,
)
from wave_actors._tools.load_mode import (
    DEFAULT_LOAD_MODE_TTL as DEFAULT_LOAD_MODE_TTL,
    LoadModeResolver as LoadModeResolver,
    parse_load_mode as parse_load_mode,
)
from wave_actors._tools.naming import assign_names as assign_names, normalize as normalize
from wave_actors._tools.schema import sanitize_schema as sanitize_schema
from wave_actors._tools.search import search_tools as search_tools
from wave_actors._tools.working_set import (
    DEFAULT_TEMPLATE as DEFAULT_TEMPLATE,
    WorkingSet as WorkingSet,
    WorkingSetServer as WorkingSetServer,
    WorkingSetTemplate as WorkingSetTemplate,
    WorkingSetTool as WorkingSetTool,
    build_working_set as build_working_set,
    prompt_bytes as prompt_bytes,
    unavailable_reason as unavailable_reason,
)
