"""``wave-actors working-set``: the section a model is shown in working-set mode, and what each load mode costs (R-CLI).

One session connects every enabled server (:func:`~wave_actors._cli.session_commands.command_session`),
and the command prints :meth:`Session.working_set() <wave_actors.Session.working_set>` rendered, with
the bytes a turn declares in ``full`` and in ``working_set`` mode (R-WS). Every process is reclaimed
before it prints. Its caller is :func:`wave_actors._cli.main`; the runtime is imported when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from wave_actors._cli.session_commands import command_session
from wave_actors._console import EXIT_OK, PROGRAM, one_line, printable, write_json

__all__ = ["working_set"]


async def working_set(arguments: argparse.Namespace, out: TextIO) -> int:
    """Connect every enabled server; print the working-set section and the bytes each load mode declares.

    Servers that fail to connect are listed as unavailable in the section;
    that is not a failure of the command.

    :param arguments: the parsed command line.
    :param out: where the section and the sizes go.
    :returns: :data:`~wave_actors._console.EXIT_OK`.
    :raises CommandFailed: ``--workdir`` is not a directory (exit 2).
    """
    from wave_actors._tools import LoadMode, WorkingSetServer, prompt_bytes

    async with command_session(arguments) as session:
        for diagnostic in session.diagnostics:
            sys.stderr.write(f"{PROGRAM}: config {one_line(diagnostic)}\n")
        await session.prepare_turn()
        working_set = session.working_set()
        full = session.tool_declarations(LoadMode.FULL)
        gateway = session.tool_declarations(LoadMode.WORKING_SET)
    section = working_set.render()
    sizes = {
        "full": prompt_bytes(full),
        "working_set": prompt_bytes(gateway, section),
        "section": len(section.encode("utf-8")),
        "gateway": prompt_bytes(gateway),
    }
    if arguments.json:

        def server_document(server: WorkingSetServer) -> dict[str, object]:
            return {
                "name": server.name,
                "purpose": server.purpose,
                "unavailable": server.unavailable,
                "read_only_tools": server.read_only_tools,
                "writable_tools": server.writable_tools,
                "tools": [{"name": t.name, "read_only": t.read_only, "guidance": t.guidance} for t in server.tools],
            }

        document = {
            "workdir": str(session.workdir),
            "section": section,
            "servers": [server_document(server) for server in working_set.servers],
            "declarations": {"full": len(full), "working_set": len(gateway)},
            "bytes": sizes,
        }
        write_json(document, out)
        return EXIT_OK
    if working_set.empty:
        out.write(f"no enabled MCP servers for {printable(str(session.workdir))}: no section, no gateway tools\n")
        return EXIT_OK
    share = f"{100 * sizes['working_set'] / sizes['full']:.1f} % of full" if sizes["full"] else "full declares nothing"
    out.write(printable(section) + "\n")
    out.write(
        f"bytes per turn: full {sizes['full']:,} ({len(full)} declarations); working set {sizes['working_set']:,} "
        f"(section {sizes['section']:,} + {len(gateway)} gateway declarations {sizes['gateway']:,}): {share}\n"
    )
    return EXIT_OK
