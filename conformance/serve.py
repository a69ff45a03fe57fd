"""``make conformance``, second part: the suite's **server** scenarios against ``wave-actors serve`` (R-SERVE-1).

``wave-actors serve --http --mode full`` fronts server-everything (over stdio,
as a project's ``.mcp.json`` names it); the suite's ``server`` command runs each
server scenario against it, and against server-everything reached directly
over streamable HTTP, so that the table tells what a front can pass: a
scenario that server-everything passes by itself must pass through serve,
unless it needs what wave-actors leaves out (:data:`OUT_OF_SCOPE`, with the
reason); one that server-everything fails by itself says so, and is not
counted.

Uses :mod:`conformance.run`'s installation, process and table functions; its
client scenarios are not touched. Exit codes as there: 0 every scenario a
front can pass passed, 1 one did not, 3 the suite could not be run (0 with
``--skip-unavailable``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from conformance.run import (
    ROOT,
    SCENARIO_TIMEOUT,
    SERVER_START_TIMEOUT,
    Row,
    Scenario,
    Toolchain,
    check_lines,
    command_line,
    free_port,
    prepare,
    print_table,
    process_group,
    run_bounded,
    wait_listening,
)

# What a server scenario needs that wave-actors leaves out (the specification's section 18), by name.
OUT_OF_SCOPE = (
    ("resources-", "resources are out of scope: serve fronts tools only"),
    ("prompts-", "prompts are out of scope: serve fronts tools only"),
    ("completion-", "completion/complete serves prompts and resources, which are out of scope"),
    ("logging-", "logging/setLevel: a session offers no server logging to forward"),
    ("sampling", "sampling requests from servers are out of scope"),
    ("elicitation", "elicitation requests from servers are out of scope"),
)


def out_of_scope(name: str) -> str | None:
    for pattern, reason in OUT_OF_SCOPE:
        if pattern in name:
            return reason
    return None


def list_server_scenarios(tools: Toolchain, logs: Path) -> list[Scenario]:
    """The server scenarios, from the suite's own ``list --server``."""
    log = logs / "list-server.log"
    code = run_bounded([str(tools.node), str(tools.conformance), "list", "--server"], 60, log)
    text = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        raise RuntimeError(f"the suite's list --server failed (exit code {code}); see {log}")
    found = [Scenario(m.group(1), m.group(2) or "") for m in re.finditer(r"^\s*-\s+(\S+)(?:\s+\[(.*)\])?", text, re.M)]
    if not found:
        raise RuntimeError(f"the suite's list --server named no scenario; see {log}")
    return found


def run_server_scenario(tools: Toolchain, url: str, scenario: str, results: Path) -> tuple[bool, str]:
    """Run one server scenario against ``url``: whether every check passed, and the failures' reasons."""
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    argv = [str(tools.node), str(tools.conformance), "server", "--url", url, "--scenario", scenario, "-o", str(results)]
    code = run_bounded(argv, SCENARIO_TIMEOUT, results / "suite.log")
    passed, failed = check_lines(results)
    if code is None:
        return False, f"the suite did not finish within {SCENARIO_TIMEOUT:g} s"
    if failed or not passed:
        return False, "; ".join(failed) or f"no check ran (exit code {code}); see {results / 'suite.log'}"
    return True, f"checks passed: {', '.join(passed)}"


def wait_serving(log: Path, child: subprocess.Popen[bytes], timeout: float) -> str:
    """The URL serve announces on its stderr once it listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"serving (http://\S+)", log.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1)
        if child.poll() is not None:
            raise RuntimeError(f"wave-actors serve exited with code {child.returncode} before listening; see {log}")
        time.sleep(0.1)  # polling a log file: there is no event to wait on
    raise RuntimeError(f"wave-actors serve did not listen within {timeout:g} s; see {log}")


def verdict(name: str, direct: tuple[bool, str], served: tuple[bool, str]) -> tuple[str, str]:
    """The table's result and detail for one scenario, from its run against server-everything and through serve."""
    reason = out_of_scope(name)
    if served[0]:
        return "pass", served[1] + ("" if direct[0] else " (server-everything alone fails it)")
    if reason is not None:
        return "not claimed", reason
    if not direct[0]:
        return "not applicable", f"server-everything alone fails it too: {direct[1][:200]}"
    return "FAIL", served[1]


def run(cache: Path, only: Sequence[str]) -> int:
    logs = cache / "results" / "serve"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    tools = prepare(cache, logs)
    scenarios = [scenario for scenario in list_server_scenarios(tools, logs) if not only or scenario.name in only]
    everything_port = free_port()
    with tempfile.TemporaryDirectory(prefix="wave-conformance-") as directory:
        project = Path(directory)
        entry = {"command": str(tools.node), "args": [str(tools.everything), "stdio"]}
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"everything": entry}}), encoding="utf-8")
        serve_log, everything_log = logs / "serve.log", logs / "server-everything.log"
        serve_argv = [sys.executable, "-m", "wave_actors", "serve", "--http", "127.0.0.1:0", "--mode", "full"]
        serve_argv += ["--workdir", str(project), "--home", str(project / "home")]
        everything_argv = [str(tools.node), str(tools.everything), "streamableHttp"]
        with (
            serve_log.open("wb") as serve_output,
            everything_log.open("wb") as everything_output,
            process_group(serve_argv, cwd=ROOT, output=serve_output) as serve,
            process_group(
                everything_argv,
                cwd=tools.suite,
                output=everything_output,
                env={**os.environ, "PORT": str(everything_port)},
            ) as everything,
        ):
            served_url = wait_serving(serve_log, serve, SERVER_START_TIMEOUT)
            wait_listening(everything_port, everything, SERVER_START_TIMEOUT)
            direct_url = f"http://127.0.0.1:{everything_port}/mcp"
            rows: list[Row] = []
            for scenario in scenarios:
                started = time.monotonic()
                folder = scenario.name.replace("/", "_")
                direct = run_server_scenario(tools, direct_url, scenario.name, logs / "direct" / folder)
                served = run_server_scenario(tools, served_url, scenario.name, logs / "serve" / folder)
                result, detail = verdict(scenario.name, direct, served)
                rows.append(Row(scenario.name, scenario.versions, result, detail, time.monotonic() - started))
    print()
    print("server scenarios: wave-actors serve --http --mode full, fronting server-everything over stdio")
    order = ("FAIL", "pass", "not applicable", "not claimed")
    print_table(sorted(rows, key=lambda row: order.index(row.result)))
    failed = [row for row in rows if row.result == "FAIL"]
    passed = [row for row in rows if row.result == "pass"]
    print()
    print(
        f"conformance (serve): {len(passed)} passed, {len(failed)} failed, "
        f"{sum(row.result == 'not applicable' for row in rows)} not applicable, "
        f"{sum(row.result == 'not claimed' for row in rows)} not claimed"
    )
    print(f"logs and the suite's results: {logs}")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return command_line(
        argv,
        prog="python -m conformance.serve",
        doc=__doc__,
        label="conformance (serve)",
        what="server scenarios",
        run=run,
    )


if __name__ == "__main__":
    sys.exit(main())
