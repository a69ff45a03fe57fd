"""One tool snapshot as bytes: the JSON of an entry file, decoded strictly and encoded within a bound (R-CACHE-3).

Pure: no file is opened here (:mod:`wave_actors._cache.file` reads and
writes them). A decoded entry is checked field by field and against the key
and workdir it was read for; an encoded one is ASCII (a lone surrogate in a
description never makes it unwritable) and at most :data:`MAX_ENTRY_BYTES`,
given up on tool by tool so that an enormous listing never holds the GIL for
long.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final, cast

from wave_actors._cache.model import CachedServer
from wave_actors._listing import ServerTool

__all__ = ["FORMAT", "MAX_ENTRY_BYTES", "UnusableEntry", "decode_entry", "encode_entry", "server_of"]

logger = logging.getLogger(__name__)

FORMAT: Final = 2
"""The format number every entry file carries."""

MAX_ENTRY_BYTES: Final = 1024 * 1024
"""The most bytes of one entry file; a snapshot that would be bigger is not cached."""


class UnusableEntry(Exception):
    """An entry file exists but cannot be used; the message says why, for the debug log."""


def _tool_of(value: object) -> ServerTool | None:
    if not isinstance(value, dict):
        return None
    fields = cast(dict[str, object], value)
    name, description = fields.get("name"), fields.get("description", "")
    schema, read_only = fields.get("input_schema", {}), fields.get("read_only_hint")
    if (
        not isinstance(name, str)
        or not isinstance(description, str)
        or not isinstance(schema, dict)
        or not isinstance(read_only, bool | None)
    ):
        return None
    return ServerTool(name, description, cast(dict[str, Any], schema), read_only)


def server_of(value: object) -> CachedServer | None:
    """A snapshot from its JSON object (an entry file's, or one of the former file's), or ``None``."""
    if not isinstance(value, dict):
        return None
    fields = cast(dict[str, object], value)
    server, fingerprint, workdir = fields.get("server"), fields.get("fingerprint"), fields.get("workdir")
    last_connected, listed = fields.get("last_connected"), fields.get("tools")
    warnings = fields.get("warnings", [])
    if (
        not isinstance(server, str)
        or not isinstance(fingerprint, str)
        or not isinstance(workdir, str)
        or isinstance(last_connected, bool)
        or not isinstance(last_connected, int | float)
        or not isinstance(listed, list)
        or not isinstance(warnings, list)
        or not all(isinstance(warning, str) for warning in cast(list[object], warnings))
    ):
        return None
    tools = [_tool_of(tool) for tool in cast(list[object], listed)]
    if any(tool is None for tool in tools):
        return None
    return CachedServer(
        server,
        fingerprint,
        workdir,
        float(last_connected),
        tuple(cast(list[ServerTool], tools)),
        tuple(cast(list[str], warnings)),
    )


def decode_entry(data: bytes, workdir: str, key: tuple[str, str]) -> CachedServer:
    """The snapshot in ``data``, read for ``workdir`` and ``key``.

    :raises UnusableEntry: it is not JSON, not of :data:`FORMAT`, of the wrong shape, or another server's.
    """
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise UnusableEntry(f"is not a JSON document ({type(error).__name__})") from error
    if not isinstance(document, dict):
        raise UnusableEntry("is not a JSON object")
    fields = cast(dict[str, object], document)
    if fields.get("format") != FORMAT:
        raise UnusableEntry(f"is not an entry of format {FORMAT}")
    entry = server_of(fields)
    if entry is None:
        raise UnusableEntry("is of the wrong shape")
    if entry.key != key or entry.workdir != workdir:
        raise UnusableEntry("holds another server's snapshot")
    return entry


def _mapping_as_dict(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, object], value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def _dumps(value: object) -> str:
    # ASCII escapes: a lone surrogate in a server's description must not make the file unwritable.
    return json.dumps(value, separators=(",", ":"), default=_mapping_as_dict, allow_nan=False)


def encode_entry(entry: CachedServer) -> bytes | None:
    """The entry file's content, or ``None`` when it cannot be encoded or would be over :data:`MAX_ENTRY_BYTES`.

    Tool by tool, so that an enormous listing is given up on as soon as it
    is over the limit, and no single encode holds the GIL for long.
    """
    try:
        tools: list[str] = []
        size = 0
        for tool in entry.tools:
            text = _dumps(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                    "read_only_hint": tool.read_only_hint,
                }
            )
            size += len(text) + 1
            if size > MAX_ENTRY_BYTES:
                logger.debug("tool snapshot of %r not cached: over %d bytes", entry.server, MAX_ENTRY_BYTES)
                return None
            tools.append(text)
        head = _dumps(
            {
                "format": FORMAT,
                "server": entry.server,
                "fingerprint": entry.fingerprint,
                "workdir": entry.workdir,
                "last_connected": entry.last_connected,
                "warnings": list(entry.warnings),
            }
        )
    except (TypeError, ValueError, RecursionError) as error:
        logger.debug("tool snapshot of %r not cached: %s", entry.server, error)
        return None
    data = f'{head[:-1]},"tools":[{",".join(tools)}]}}\n'.encode("ascii")
    return data if len(data) <= MAX_ENTRY_BYTES else None
