"""``make conformance``: the official MCP conformance suite's client scenarios, run against wave-actors.

Installs the pinned suite and server-everything (``conformance/suite``) from
the npm registry into ``.conformance-cache/`` with ``npm install --prefix``,
and a newer Node.js (``conformance/node``) when the system one is older than
the suite needs. Lists the suite's client scenarios with its own ``list``
command, runs each one wave-actors claims against ``conformance.driver``, and
server-everything over streamable HTTP and SSE with the same driver. Prints a
table: scenario, pass / FAIL, or "not claimed" with what the scenario wants.

Exit codes: 0 every claimed scenario passed; 1 one failed (the table says
why); 3 the suite could not be run (no node or npm, registry unreachable),
or 0 for that with ``--skip-unavailable``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = Path(__file__).resolve().parent
SUITE_PACKAGE = "@modelcontextprotocol/conformance"
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"

# The suite's build imports fs.globSync, which Node.js has from 22 on.
MIN_NODE_MAJOR = 22

# The client scenarios wave-actors claims: a streamable HTTP client that
# initializes, lists and calls tools, and resumes a stream as the server's
# `retry` field says; and an OAuth client whose host logs in (R-AUTH). What
# each one checks, for the table.
CLAIMED = {
    "initialize": "initialize handshake: protocol version and clientInfo",
    "tools_call": "tools/list and tools/call with arguments",
    "sse-retry": "resumes a closed call stream with GET after `retry` ms, sending Last-Event-ID",
    "auth/metadata-default": "OAuth discovery: path-based protected resource metadata named in WWW-Authenticate",
    "auth/metadata-var1": "OAuth discovery: protected resource metadata not in WWW-Authenticate, OpenID configuration",
    "auth/metadata-var2": "OAuth discovery: root protected resource metadata, path-aware authorization server metadata",
    "auth/metadata-var3": "OAuth discovery: custom metadata location, OpenID configuration under a tenant path",
    "auth/basic-cimd": "a client metadata document URL as client_id where the server supports them",
    "auth/scope-from-www-authenticate": "asks for the scope the 401's WWW-Authenticate names",
    "auth/scope-from-scopes-supported": "asks for the protected resource's scopes_supported",
    "auth/scope-omitted-when-undefined": "asks for no scope when none is defined",
    "auth/scope-step-up": "a call refused 403 insufficient_scope: a login for the union of scopes, then the call",
    "auth/scope-retry-limit": "stops asking for a scope the login already grants (at most 3 logins)",
    "auth/token-endpoint-auth-basic": "client_secret_basic at the token endpoint, with the RFC 8707 resource",
    "auth/token-endpoint-auth-post": "client_secret_post at the token endpoint, with the RFC 8707 resource",
    "auth/token-endpoint-auth-none": "a public client (none) at the token endpoint, with the RFC 8707 resource",
    "auth/pre-registration": "a client registered in advance (the entry's oauth client_id and secret)",
    "auth/2025-03-26-oauth-endpoint-fallback": "2025-03-26 fallback: /register, /authorize, /token at the origin",
    "auth/resource-mismatch": "refuses protected resource metadata naming another resource, before authorizing",
    "auth/offline-access-scope": "offline_access and the refresh_token grant where the server supports them",
    "auth/offline-access-not-supported": "no offline_access where the server does not list it",
    "auth/client-credentials-basic": "a machine client: client_credentials with client_secret_basic",
    "auth/client-credentials-jwt": "a machine client: client_credentials with a private_key_jwt assertion",
}

# Out of scope, or not passable as the pinned suite has it: what such a scenario wants, by name.
NOT_CLAIMED = (
    (
        "auth/cross-app-access",
        "wants enterprise-managed authorization (SEP-990): an IdP ID token exchanged for an ID-JAG, "
        "which the host would have to hold; wave-actors takes no identity provider configuration",
    ),
    (
        "auth/2025-03-26-oauth-metadata-backcompat",
        "its authorization server serves metadata at the origin's well-known URL naming issuer <origin>/oauth; "
        "RFC 8414 section 3.3 (SEP-2468) has the client refuse a mismatched issuer, as the SDK's client does",
    ),
    ("elicitation", "wants elicitation (answering the server's elicitation/create requests)"),
    ("sampling", "wants sampling (answering the server's sampling/createMessage requests)"),
    ("roots", "wants roots (answering the server's roots/list requests)"),
)

# npm's error codes that mean the registry could not be reached, as opposed to a broken manifest.
UNREACHABLE_CODES = re.compile(
    r"\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ESOCKETTIMEDOUT|E50[0-4])\b"
)

# Bounds, so that the worst case (two slow installs, every run hanging) stays near ten minutes;
# a scenario takes a few seconds when it works.
INSTALL_TIMEOUT = 150.0
SCENARIO_TIMEOUT = 45.0
SERVER_START_TIMEOUT = 20.0


class Unavailable(Exception):
    """The suite cannot be run here (no node or npm, registry unreachable); the message says why."""


@attrs.frozen
class Scenario:
    """A client scenario as the suite lists it.

    :param name: the scenario's name, e.g. ``tools_call``.
    :param versions: the specification versions it belongs to, as listed.
    """

    name: str
    versions: str


@attrs.frozen
class Row:
    """One line of the table.

    :param name: the scenario.
    :param versions: its specification versions.
    :param result: ``pass``, ``FAIL`` or ``not claimed``.
    :param detail: what passed, why it failed, or what it wants.
    :param seconds: wall time of the run (0 when not run).
    """

    name: str
    versions: str
    result: str
    detail: str
    seconds: float = 0.0


@attrs.frozen
class Toolchain:
    """The programs a run uses.

    :param node: the Node.js binary that runs the suite and server-everything.
    :param suite: the directory holding the installed ``node_modules``.
    """

    node: Path
    suite: Path

    @property
    def conformance(self) -> Path:
        return self.suite / "node_modules" / SUITE_PACKAGE / package_bin(self.suite, SUITE_PACKAGE)

    @property
    def everything(self) -> Path:
        return self.suite / "node_modules" / EVERYTHING_PACKAGE / package_bin(self.suite, EVERYTHING_PACKAGE)


def package_bin(suite: Path, package: str) -> str:
    """The path of a package's (single) command inside the package, from its ``package.json``."""
    manifest = json.loads((suite / "node_modules" / package / "package.json").read_text(encoding="utf-8"))
    command = manifest["bin"]
    return command if isinstance(command, str) else next(iter(command.values()))


# Processes.


@contextlib.contextmanager
def process_group(
    argv: Sequence[str], *, cwd: Path, output: IO[bytes], env: Mapping[str, str] | None = None
) -> Generator[subprocess.Popen[bytes]]:
    """A child in its own process group, writing to ``output``; on the way out, the whole group is killed."""
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield child
    finally:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        # Grandchildren (the driver under the suite's shell) may outlive their parent.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)


def run_bounded(argv: Sequence[str], timeout: float, log: Path, cwd: Path = ROOT) -> int | None:
    """Run ``argv`` with stdout and stderr in ``log``; ``None`` when it outlived ``timeout`` (then it is killed)."""
    with log.open("wb") as output, process_group(argv, cwd=cwd, output=output) as child:
        try:
            return child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


# Installing.


def digest(*files: Path) -> str:
    hashed = hashlib.sha256()
    for file in files:
        hashed.update(file.read_bytes())
    return hashed.hexdigest()


def npm_install(npm: str, manifests: Path, prefix: Path, logs: Path) -> bool:
    """Install ``manifests``' package.json and lock into ``prefix``, unless already installed from the same pair.

    :returns: whether npm ran.
    :raises Unavailable: the registry could not be reached.
    :raises RuntimeError: npm failed for another reason.
    """
    sources = (manifests / "package.json", manifests / "package-lock.json")
    wanted = digest(*sources)
    stamp = prefix / ".installed"
    if stamp.exists() and stamp.read_text(encoding="utf-8") == wanted and (prefix / "node_modules").is_dir():
        return False
    prefix.mkdir(parents=True, exist_ok=True)
    for source in sources:
        shutil.copyfile(source, prefix / source.name)
    stamp.unlink(missing_ok=True)
    log = logs / f"npm-install-{manifests.name}.log"
    # Short fetch timeouts: an unreachable registry should be a quick skip, not npm's five-minute wait.
    argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--fetch-timeout=30000"]
    code = run_bounded([*argv, "--fetch-retries=1"], INSTALL_TIMEOUT, log)
    text = log.read_text(encoding="utf-8", errors="replace")
    if code is None:
        raise Unavailable(f"npm install into {prefix} took over {INSTALL_TIMEOUT:g} s; see {log}")
    if code != 0:
        unreachable = UNREACHABLE_CODES.search(text)
        if unreachable:
            raise Unavailable(f"the npm registry is unreachable ({unreachable.group(1)}); see {log}")
        raise RuntimeError(f"npm install into {prefix} failed with exit code {code}; see {log}")
    stamp.write_text(wanted, encoding="utf-8")
    return True


def node_major(node: str | Path) -> int:
    try:
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        raise Unavailable(f"{node} --version failed: {error}") from None
    match = re.match(r"v(\d+)\.", version.stdout.strip())
    if not match:
        raise Unavailable(f"{node} --version printed {version.stdout.strip()!r}, not a version")
    return int(match.group(1))


def prepare(cache: Path, logs: Path) -> Toolchain:
    """Find node and npm, install what is missing, and say what was done.

    :raises Unavailable: no node or npm, or the registry could not be reached.
    """
    system_node, npm = shutil.which("node"), shutil.which("npm")
    if system_node is None or npm is None:
        raise Unavailable("node and npm are needed (Node.js with npm, any version); not found on PATH")
    node: Path = Path(system_node)
    major = node_major(node)
    if major < MIN_NODE_MAJOR:
        prefix = cache / "node"
        ran = npm_install(npm, MANIFESTS / "node", prefix, logs)
        node = prefix / "node_modules" / ".bin" / "node"
        if not node.exists():
            raise RuntimeError(f"the node package installed no binary at {node}; see {logs}")
        got = node_major(node)
        if got < MIN_NODE_MAJOR:
            raise RuntimeError(f"{node} is Node.js {got}, not {MIN_NODE_MAJOR} or newer; see conformance/node")
        print(f"system Node.js {major} is older than the suite needs; {'installed' if ran else 'using'} {node}")
    suite = cache / "suite"
    ran = npm_install(npm, MANIFESTS / "suite", suite, logs)
    print(f"suite {'installed' if ran else 'already installed'} in {suite}")
    return Toolchain(node=node, suite=suite)


# Running.


def list_scenarios(tools: Toolchain, logs: Path) -> list[Scenario]:
    """The client scenarios, from the suite's own ``list --client``."""
    log = logs / "list.log"
    code = run_bounded([str(tools.node), str(tools.conformance), "list", "--client"], 60, log)
    text = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        raise RuntimeError(f"the suite's list --client failed (exit code {code}); see {log}")
    found = [Scenario(m.group(1), m.group(2) or "") for m in re.finditer(r"^\s*-\s+(\S+)(?:\s+\[(.*)\])?", text, re.M)]
    if not found:
        raise RuntimeError(f"the suite's list --client named no scenario; see {log}")
    return found


def not_claimed_reason(name: str) -> str | None:
    for pattern, reason in NOT_CLAIMED:
        if pattern in name:
            return reason
    return None


def check_lines(results: Path) -> tuple[list[str], list[str]]:
    """From a result directory's ``checks.json``: the checks that passed, and each failure or warning with its reason."""
    checks_file = next(results.rglob("checks.json"), None)
    if checks_file is None:
        return [], []
    checks = json.loads(checks_file.read_text(encoding="utf-8"))
    passed = [str(check["id"]) for check in checks if check.get("status") == "SUCCESS"]
    failed = [
        f"{check['status']} {check['id']}: {check_reason(check)}"
        for check in checks
        if check.get("status") in ("FAILURE", "WARNING")
    ]
    return passed, failed


def check_reason(check: dict[str, Any]) -> str:
    """The suite's reason for a check's verdict: its error message, else its details' message, else what it checks."""
    details: dict[str, Any] = check.get("details") or {}
    return str(check.get("errorMessage") or details.get("message") or check.get("description", ""))


def client_identity(results: Path) -> str:
    """The clientInfo the initialize check saw, as ``name version``."""
    for checks_file in results.rglob("checks.json"):
        for check in json.loads(checks_file.read_text(encoding="utf-8")):
            details: dict[str, Any] = check.get("details") or {}
            if "clientName" in details:
                return f"{details.get('clientName')} {details.get('clientVersion')}"
    return ""


def last_driver_error(results: Path) -> str:
    for stderr in results.rglob("stderr.txt"):
        lines = [line for line in stderr.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        driver = [line for line in lines if line.startswith("driver:")]
        if driver or lines:
            return (driver or lines)[-1][:300]
    return ""


def driver_command() -> str:
    # The suite splits --command on spaces and appends the URL, so the interpreter's path must have none.
    if re.search(r"\s", sys.executable):
        raise RuntimeError(f"the Python path {sys.executable!r} holds whitespace, which the suite's --command cannot")
    return f"{sys.executable} -m conformance.driver"


def run_scenario(tools: Toolchain, scenario: Scenario, logs: Path) -> Row:
    results = logs / scenario.name.replace("/", "_")
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    argv = [str(tools.node), str(tools.conformance), "client", "--command", driver_command()]
    argv += ["--scenario", scenario.name, "--timeout", str(int(SCENARIO_TIMEOUT * 1000)), "-o", str(results)]
    started = time.monotonic()
    code = run_bounded(argv, SCENARIO_TIMEOUT + 15, results / "suite.log")
    seconds = time.monotonic() - started
    passed, failed = check_lines(results)
    suite_log = (results / "suite.log").read_text(encoding="utf-8", errors="replace")
    if code == 0:
        detail = f"checks passed: {', '.join(passed)}"
        identity = client_identity(results)
        if identity:
            detail += f"; clientInfo {identity}"
        return Row(scenario.name, scenario.versions, "pass", detail, seconds)
    # The driver's own failure first: the checks that failed after it are usually its consequences.
    reasons: list[str] = []
    if code is None:
        reasons.append(f"the suite did not finish within {SCENARIO_TIMEOUT + 15:g} s")
    elif "CLIENT TIMED OUT" in suite_log:
        reasons.append(f"the driver did not finish within {SCENARIO_TIMEOUT:g} s")
    elif "CLIENT EXITED WITH ERROR" in suite_log:
        reasons.append(f"the driver failed: {last_driver_error(results)}")
    reasons += failed
    if not reasons:
        reasons.append(f"the suite exited with code {code}; see {results / 'suite.log'}")
    return Row(scenario.name, scenario.versions, "FAIL", "; ".join(reasons), seconds)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, child: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"server-everything exited with code {child.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)  # polling a port: there is no event to wait on
    raise RuntimeError(f"server-everything did not listen on port {port} within {timeout:g} s")


def wait_sessions_ended(log: Path, opened_line: str, ended_line: str, timeout: float) -> tuple[int, int]:
    """How many sessions the server logged as opened and as ended, once they match or ``timeout`` passes.

    The server logs a session's end when it handles the goodbye, which may come
    a moment after the client exits.
    """
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(encoding="utf-8", errors="replace")
        opened, ended = text.count(opened_line), text.count(ended_line)
        if ended >= opened or time.monotonic() > deadline:
            return opened, ended
        time.sleep(0.1)  # polling a log file: there is no event to wait on


EVERYTHING = {
    # transport: (server-everything's argument, path, log line of a session opened, of a session ended)
    "http": ("streamableHttp", "/mcp", "Session initialized with ID", "Received session termination request"),
    "sse": ("sse", "/sse", "Client Connected", "Client Disconnected"),
}


def run_everything(tools: Toolchain, transport: str, logs: Path) -> Row:
    """server-everything over ``transport``, driven like a suite scenario: connect, list, call echo, close."""
    name = f"server-everything ({transport})"
    argument, path, opened_line, ended_line = EVERYTHING[transport]
    port = free_port()
    server_log = logs / f"server-everything-{transport}.log"
    started = time.monotonic()
    with server_log.open("wb") as output:
        argv = [str(tools.node), str(tools.everything), argument]
        environment = {**os.environ, "PORT": str(port)}
        with process_group(argv, cwd=tools.suite, output=output, env=environment) as child:
            try:
                wait_listening(port, child, SERVER_START_TIMEOUT)
            except RuntimeError as error:
                return Row(name, "", "FAIL", f"{error}; see {server_log}", time.monotonic() - started)
            driver = [sys.executable, "-m", "conformance.driver", "--scenario", "server-everything"]
            driver += ["--transport", transport, f"http://127.0.0.1:{port}{path}"]
            driver_log = logs / f"driver-everything-{transport}.log"
            code = run_bounded(driver, SCENARIO_TIMEOUT, driver_log)
            opened, ended = wait_sessions_ended(server_log, opened_line, ended_line, timeout=2.0)
    seconds = time.monotonic() - started
    sessions = f"server sessions: {opened} opened, {ended} ended by the client"
    # Every session the client opened must be ended by it on close (R-KILL-8): over streamable
    # HTTP with a DELETE (the specification says the client SHOULD), over SSE by closing its stream.
    unended = ended < opened
    if unended and transport == "http":
        sessions += " (no DELETE on close; the specification says the client SHOULD send one)"
    if code == 0 and unended:
        return Row(name, "", "FAIL", f"connect, tools/list, echo, close; {sessions}", seconds)
    if code == 0:
        return Row(name, "", "pass", f"connect, tools/list, echo, close; {sessions}", seconds)
    if code is None:
        return Row(name, "", "FAIL", f"the driver did not finish within {SCENARIO_TIMEOUT:g} s", seconds)
    lines = [line for line in driver_log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    reason = next((line for line in reversed(lines) if line.startswith("driver:")), lines[-1] if lines else "")
    return Row(name, "", "FAIL", f"the driver failed: {reason[:300]}; {sessions}", seconds)


def print_table(rows: Sequence[Row]) -> None:
    headers = ("scenario", "spec versions", "result", "seconds", "detail")
    cells = [
        (row.name, row.versions, row.result, f"{row.seconds:.1f}" if row.seconds else "", row.detail) for row in rows
    ]
    widths = [max(len(header), *(len(cell[i]) for cell in cells)) for i, header in enumerate(headers[:-1])]

    def line(values: Sequence[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths, strict=False)) + "  " + values[-1]

    print(line(headers))
    print(line(["-" * width for width in widths] + ["-" * len(headers[-1])]))
    for cell in cells:
        print(line(cell))


def run(cache: Path, only: Sequence[str]) -> int:
    logs = cache / "results"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    tools = prepare(cache, logs)
    scenarios = list_scenarios(tools, logs)
    rows: list[Row] = []
    for scenario in scenarios:
        if only and scenario.name not in only:
            continue
        reason = not_claimed_reason(scenario.name)
        if scenario.name in CLAIMED:
            rows.append(run_scenario(tools, scenario, logs))
        elif reason is not None:
            rows.append(Row(scenario.name, scenario.versions, "not claimed", reason))
        else:
            # A scenario of a newer suite: someone has to decide whether wave-actors claims it.
            unknown = "new in the suite: add it to CLAIMED (and the driver) or NOT_CLAIMED in conformance/run.py"
            rows.append(Row(scenario.name, scenario.versions, "FAIL", unknown))
    for transport in EVERYTHING:
        if not only or f"server-everything ({transport})" in only:
            rows.append(run_everything(tools, transport, logs))
    print()
    # What wave-actors claims first, then what it does not.
    print_table(sorted(rows, key=lambda row: row.result == "not claimed"))
    failed = [row for row in rows if row.result == "FAIL"]
    claimed = [row for row in rows if row.result != "not claimed"]
    print()
    print(
        f"conformance: {len(claimed) - len(failed)} passed, {len(failed)} failed, {len(rows) - len(claimed)} not claimed"
    )
    print(f"logs and the suite's results: {logs}")
    return 1 if failed else 0


def command_line(
    argv: Sequence[str] | None,
    *,
    prog: str,
    doc: str | None,
    label: str,
    what: str,
    run: Callable[[Path, Sequence[str]], int],
) -> int:
    """The command line of a conformance run: ``--cache``, ``--skip-unavailable`` and the scenarios to run.

    :param prog: the program's name in its usage line.
    :param doc: the program's module docstring, whose first line describes it.
    :param label: what each line it prints starts with.
    :param what: what the positional arguments name (``scenarios``, ``server scenarios``).
    :param run: runs the scenarios given (all when none), with the package cache; returns the exit code.
    """
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / ".conformance-cache", help="where packages are installed")
    parser.add_argument(
        "--skip-unavailable", action="store_true", help="exit 0 when node, npm or the registry is missing (for CI)"
    )
    parser.add_argument("only", nargs="*", help=f"run only these {what} (default: all)")
    arguments = parser.parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    try:
        code = run(arguments.cache.resolve(), arguments.only)
    except Unavailable as why:
        print(f"{label}: skipped: {why}", file=sys.stderr)
        return 0 if arguments.skip_unavailable else 3
    except RuntimeError as error:
        print(f"{label}: {error}", file=sys.stderr)
        return 1
    print(f"{label}: {time.monotonic() - started:.1f} s")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    return command_line(
        argv, prog="python -m conformance.run", doc=__doc__, label="conformance", what="scenarios", run=run
    )


if __name__ == "__main__":
    sys.exit(main())
