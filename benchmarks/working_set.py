"""working_set: what a turn declares in each load mode, on 10 servers x 20 tools, and what rendering costs (R-WS-2..4).

The servers are real stdio processes (:mod:`benchmarks.fixture_server`, stdlib
only) serving the tools of ``benchmarks/fixtures/working_set_servers.json``:
ten servers modelled on ones people run (filesystem, GitHub, git, PostgreSQL,
Slack, a browser, Jira, Kubernetes, a memory graph, a calendar), twenty tools
each, with their descriptions, nested schemas, enums and defaults; eight of
the ten annotate ``readOnlyHint``.

Bytes are counted as :func:`~wave_actors._tools.prompt_bytes` counts them
(the same formula, written out here because benchmarks use the public API
only): the declarations as compact JSON ``[{"name", "description",
"input_schema"}, ...]`` and the section in UTF-8. Full mode is every
declaration; working-set mode is the section plus ``mcp_call`` and
``mcp_describe``. The target: working set <= 15 % of full.

Time is the median of ``--renders`` calls of ``session.working_set().render()``
(the structure from the snapshot, then the text), next to
``session.tool_declarations(LoadMode.FULL)`` for scale. Every render must be
byte-identical, across calls and across a second session whose servers
connected in the opposite order (an invariant: it fails the run).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.report import Headline, Progress, Table, at_most, median, percentile
from benchmarks.scenario import Option, Outcome, main
from wave_actors import LoadMode, ServerState, Session, ToolDeclaration, open_session

NAME = "working_set"
TARGET_PERCENT = 15.0
FIXTURE = Path(__file__).with_name("fixtures") / "working_set_servers.json"
SERVER_SCRIPT = Path(__file__).with_name("fixture_server.py")

OPTIONS = (Option("renders", int, 2000, 200, "timed renders of the section (and of the full declarations)"),)


def declared_bytes(declarations: Iterable[ToolDeclaration]) -> int:
    """The declarations as compact JSON, in UTF-8 bytes (0 for none)."""
    document = [
        {"name": d.name, "description": d.description, "input_schema": dict(d.input_schema)} for d in declarations
    ]
    if not document:
        return 0
    return len(json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def entries() -> dict[str, dict[str, object]]:
    """One stdio entry per fixture server, with the fixture's description as the entry's."""
    servers: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))["servers"]
    return {
        name: {
            "command": sys.executable,
            "args": ["-I", "-S", str(SERVER_SCRIPT), "--fixture", str(FIXTURE), "--server", name],
            "description": server["description"],
        }
        for name, server in servers.items()
    }


async def connect_in_order(session: Session, names: list[str]) -> None:
    for name in names:
        status = await session.connect(name)
        if status.state is not ServerState.CONNECTED:
            raise RuntimeError(f"server {name!r} did not connect: {status.error}")


def timed(function: Any, count: int) -> list[float]:
    """Microseconds per call of ``function()``, ``count`` times."""
    samples: list[float] = []
    for _ in range(count):
        started = time.perf_counter_ns()
        function()
        samples.append((time.perf_counter_ns() - started) / 1e3)
    return samples


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    servers = entries()
    names = sorted(servers)
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        progress.update("connecting", f"{len(names)} servers")
        async with open_session(workdir=workdir, home=workdir / "home", mcp_servers=servers) as session:
            await connect_in_order(session, names)
            tools = sum(status.tool_count for status in session.servers())
            full = session.tool_declarations(LoadMode.FULL)
            gateway = session.tool_declarations(LoadMode.WORKING_SET)
            section = session.working_set().render()
            progress.update("rendering", f"{arguments.renders} times")
            render_us = timed(lambda: session.working_set().render(), arguments.renders)
            full_us = timed(lambda: session.tool_declarations(LoadMode.FULL), arguments.renders)
            renders = {session.working_set().render() for _ in range(10)}
        progress.update("connecting", "a second session, servers in the opposite order")
        async with open_session(workdir=workdir, home=workdir / "home", mcp_servers=servers) as reordered:
            await connect_in_order(reordered, list(reversed(names)))
            renders.add(reordered.working_set().render())

    sizes = {
        "full": declared_bytes(full),
        "section": len(section.encode("utf-8")),
        "gateway": declared_bytes(gateway),
    }
    sizes["working_set"] = sizes["section"] + sizes["gateway"]
    percent = 100.0 * sizes["working_set"] / sizes["full"]
    identical = len(renders) == 1

    table = Table(
        f"working_set: bytes a turn declares, {len(names)} servers x {tools // len(names)} tools ({tools} tools)",
        ["load mode", "declarations", "bytes", "% of full"],
    )
    table.add("full", len(full), sizes["full"], 100.0)
    table.add("working set: section", 0, sizes["section"], 100.0 * sizes["section"] / sizes["full"])
    table.add(
        "working set: mcp_call + mcp_describe", len(gateway), sizes["gateway"], 100.0 * sizes["gateway"] / sizes["full"]
    )
    table.add("working set: total", len(gateway), sizes["working_set"], percent)
    table.notes.append(f"target: working set <= {TARGET_PERCENT:g} % of full; declarations as compact JSON, UTF-8")
    timing = Table(
        f"working_set: time per call, {arguments.renders} calls each",
        ["call", "median us", "p90 us", "max us"],
    )
    timing.add("session.working_set().render()", median(render_us), percentile(render_us, 0.9), max(render_us))
    timing.add("session.tool_declarations(FULL)", median(full_us), percentile(full_us, 0.9), max(full_us))
    timing.notes.append(f"renders byte-identical (10 calls + a session connected in reverse order): {identical}")
    return Outcome(
        tables=[table, timing],
        headlines=[
            at_most("working-set bytes, % of full (10 x 20 tools)", percent, TARGET_PERCENT, "%"),
            Headline("working-set render, median", median(render_us), "us"),
            at_most("distinct renders of equal input", float(len(renders) - 1), 0, invariant=True),
        ],
        data={
            "tools": tools,
            "bytes": sizes,
            "percent_of_full": percent,
            "render_us": render_us,
            "full_declarations_us": full_us,
            "section": section,
        },
    )


if __name__ == "__main__":
    main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
