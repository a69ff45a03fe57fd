"""A stdlib-only MCP server over stdio that lists the tools of one server of a fixture file.

Usage::

    python -I -S fixture_server.py --fixture benchmarks/fixtures/working_set_servers.json --server github

The fixture is ``{"servers": {name: {"description": ..., "tools": [MCP tool, ...]}}}``;
the server answers ``initialize``, ``ping`` and ``tools/list`` with those
tools, and every ``tools/call`` with a short text. It exits when stdin closes.
It imports neither ``mcp`` nor ``wave_actors``, so ten of them start in
tens of milliseconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_METHOD_NOT_FOUND = -32601


def _answer(request_id: object, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def main() -> None:
    """Serve the tools of ``--server`` until stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--server", required=True)
    options = parser.parse_args()
    with open(options.fixture, encoding="utf-8") as file:
        tools = json.load(file)["servers"][options.server]["tools"]
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            continue  # notifications/initialized, cancellations: nothing to answer
        method, request_id = message.get("method"), message["id"]
        if method == "initialize":
            requested = message.get("params", {}).get("protocolVersion", "2025-06-18")
            result = {
                "protocolVersion": requested,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"fixture-{options.server}", "version": "1.0"},
            }
            out.write(_answer(request_id, result))
        elif method == "tools/list":
            out.write(_answer(request_id, {"tools": tools}))
        elif method == "tools/call":
            out.write(_answer(request_id, {"content": [{"type": "text", "text": "ok"}]}))
        elif method == "ping":
            out.write(_answer(request_id, {}))
        else:
            error = {"code": _METHOD_NOT_FOUND, "message": f"method not found: {method}"}
            out.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
