"""Tools: naming, schema sanitizing and declarations. Pure functions, no I/O."""

from wave_actors._tools.declarations import (
    LoadMode as LoadMode,
    ToolDeclaration as ToolDeclaration,
    full_declarations as full_declarations,
)
from wave_actors._tools.naming import assign_names as assign_names, normalize as normalize
from wave_actors._tools.schema import sanitize_schema as sanitize_schema
