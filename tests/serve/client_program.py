"""A client of ``wave-actors serve --stdio`` that a test kills mid-call.

Usage: ``python client_program.py TOOL ARGUMENTS_JSON -- SERVE_ARGV...``. It
starts serve with the SDK's ``stdio_client``, initializes, prints ``calling``
on stdout, and calls TOOL, which the test makes slow enough to be killed in.
"""

from __future__ import annotations

import json
import os
import sys

import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(tool: str, arguments: dict[str, object], command: list[str]) -> None:
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with (
        stdio_client(parameters) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream) as session,
    ):
        await session.initialize()
        print("calling", flush=True)
        await session.call_tool(tool, arguments)


if __name__ == "__main__":
    separator = sys.argv.index("--")
    trio.run(main, sys.argv[1], json.loads(sys.argv[2]), sys.argv[separator + 1 :])
