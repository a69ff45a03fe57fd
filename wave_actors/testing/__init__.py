"""What host authors need to test against wave-actors: MCP servers that misbehave on demand, and checks.

Servers:

* :func:`fault_server_entry` -- a config entry for the stdlib-only stdio server
  in ``fault_server.py`` whose misbehaviour is chosen by keyword (slow
  initialize, crashes, grandchildren, garbage on stdout, ...). It starts in
  tens of milliseconds because it imports neither ``mcp`` nor ``wave_actors``.
* :func:`reference_server_entry` and :func:`serve_reference_server` -- the
  ``mcp`` SDK's own ``MCPServer`` (``reference_server.py``) over stdio,
  streamable HTTP or SSE, to prove compatibility with the reference
  implementation rather than only with our fake.
* :func:`entry_command` -- the argv of a stdio entry, for tests that start a
  server on raw pipes or through ``StdioServerParameters``.

Checks:

* :func:`process_census` -- every live process a program started: its
  descendants, and every process carrying its environment mark, so that
  ``setsid`` and re-parented grandchildren are found too. With
  :func:`leftover_processes`, :func:`kill_processes`, :func:`describe` and
  :func:`is_alive` it makes a leak check; :data:`FAMILY_VARIABLE` is the mark
  the runtime puts on every server it spawns. :func:`escaped_processes`
  finds what no mark can: the daemons of ``escaping_grandchild``.
* :func:`wait_for_state` -- wait, with a timeout, until a server of a session
  is in one of some states (:class:`StateNotReached` says what was seen instead).
* :func:`count_tasks` -- the tasks of the current trio run, to measure what
  idle sessions cost.
* :func:`watch_stalls` -- the longest the event loop was held while a block
  ran, to check that nothing the library does in a worker thread stalls the
  host's other sessions.

This module is imported by host authors' test suites, so it stays light: it
never imports ``mcp``, which only the server subprocesses do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final, Literal, cast

from wave_actors._family.tag import FAMILY_VARIABLE as _FAMILY_VARIABLE
from wave_actors.testing._census import (
    describe as describe,
    escaped_processes as escaped_processes,
    is_alive as is_alive,
    kill_processes as kill_processes,
    leftover_processes as leftover_processes,
    process_census as process_census,
)
from wave_actors.testing._stalls import Stalls as Stalls, watch_stalls as watch_stalls
from wave_actors.testing._states import StateNotReached as StateNotReached, wait_for_state as wait_for_state
from wave_actors.testing._tasks import count_tasks as count_tasks

__all__ = [
    "CRASH_AFTER_CALLS_EXIT_CODE",
    "FAMILY_VARIABLE",
    "FAULT_SERVER_PATH",
    "REFERENCE_SERVER_PATH",
    "Stalls",
    "StateNotReached",
    "count_tasks",
    "describe",
    "entry_command",
    "escaped_processes",
    "fault_server_entry",
    "is_alive",
    "kill_processes",
    "leftover_processes",
    "process_census",
    "reference_server_entry",
    "serve_reference_server",
    "wait_for_state",
    "watch_stalls",
]

FAULT_SERVER_PATH: Final = Path(__file__).with_name("fault_server.py")
"""The stdlib-only fault server script; run it by path, never with ``-m``."""

REFERENCE_SERVER_PATH: Final = Path(__file__).with_name("reference_server.py")
"""The script running the SDK's ``MCPServer`` (``--transport stdio|streamable-http|sse``)."""

CRASH_AFTER_CALLS_EXIT_CODE: Final = 3
"""Exit code of a fault server started with ``crash_after_calls``."""

FAMILY_VARIABLE: Final = _FAMILY_VARIABLE
"""The environment variable the runtime sets on every stdio server it spawns, one fresh value per spawn.

The server's children inherit it, so ``process_census(FAMILY_VARIABLE)``
finds every server family a wave-actors program started, ``setsid``
grandchildren included; ``process.environ()[FAMILY_VARIABLE]`` tells the
families apart.
"""

# -I: no user site, no PYTHON* variables, no script directory on sys.path.
# -S: no site module, so no site-packages scan (.pth files cost milliseconds).
# The fault server needs the standard library only.
_FAST_PYTHON_FLAGS: Final = ("-I", "-S")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _flag_value(value: str | float | os.PathLike[str]) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    return repr(value)


def fault_server_entry(
    *,
    tools: int | None = None,
    instructions: str | None = None,
    server_description: str | None = None,
    read_only: Iterable[str] = (),
    list_twice: Iterable[str] = (),
    json_rpc_error: Iterable[str] = (),
    malformed_answer: Iterable[str] = (),
    invalid_schema: Iterable[str] = (),
    named_tool: Iterable[str] = (),
    deep_schema: int | None = None,
    progress_tool: bool = False,
    silent_list_changes: bool = False,
    init_delay: float | None = None,
    call_delay: float | None = None,
    crash_after_calls: int | None = None,
    exit_on_start: int | None = None,
    ignore_sigterm: bool = False,
    grandchild: bool = False,
    setsid_grandchild: bool = False,
    grandchild_inherit_stdio: bool = False,
    escaping_grandchild: str | None = None,
    garbage_stdout: bool = False,
    random_stdout: int | None = None,
    stderr_flood: int | None = None,
    huge_response: int | None = None,
    huge_notification: int | None = None,
    id_last: bool = False,
    ping_flood: int | None = None,
    list_changed_every: float | None = None,
    call_log: str | os.PathLike[str] | None = None,
    cancel_log: str | os.PathLike[str] | None = None,
    exit_on_eof: bool = True,
    pid_file: str | os.PathLike[str] | None = None,
) -> dict[str, object]:
    """Build an MCP config entry that runs the fault server with the given behaviour.

    Each keyword maps to the server flag of the same name (``init_delay=1.0``
    becomes ``--init-delay 1.0``); ``None`` and ``False`` leave the flag out.
    The server runs by file path under ``python -I -S``, so starting it does
    not import ``wave_actors`` or ``mcp``.

    :param tools: add echo-like tools ``tool_1`` .. ``tool_N`` to the built-in
        ``echo``, ``sleep``, ``fail``, ``crash``, ``pid``, ``notify_list_changed``.
    :param instructions: the ``instructions`` text of the initialize result.
    :param server_description: ``serverInfo.description`` in the initialize result.
    :param read_only: tool names to annotate with ``readOnlyHint: true``.
    :param list_twice: tool names that ``tools/list`` lists twice (a broken server).
    :param json_rpc_error: tool names whose calls are answered with a JSON-RPC
        error (``-32602``) instead of a result (a broken server).
    :param malformed_answer: tool names whose calls are answered with
        ``{"jsonrpc": "2.0", "id": N, "result": "oops"}``: a readable id, a result
        that is not an object (a broken server).
    :param invalid_schema: echo-like tools to add whose ``inputSchema`` is
        ``{"type": "array"}``, which MCP rejects (an input schema describes an object).
    :param named_tool: echo-like tools to add under these names, any
        characters (escape sequences, line separators, invisible characters),
        each described as ``Extra tool {name}; ...``: a hostile server's names.
    :param deep_schema: add a tool ``deep`` whose ``inputSchema`` nests
        ``properties`` this many levels deep (two JSON levels each).
    :param progress_tool: add a tool ``progress {steps}`` that sends ``steps``
        ``notifications/progress`` for the call's ``progressToken`` (none
        without one), then answers ``"{steps} steps"``.
    :param silent_list_changes: ``notify_list_changed`` adds its tool but
        sends no ``notifications/tools/list_changed`` (a server that changes
        its tools without a word, for ``refresh_tools``).
    :param init_delay: seconds to wait before answering ``initialize``.
    :param call_delay: seconds every ``tools/call`` waits before running (cancellable).
    :param crash_after_calls: exit with :data:`CRASH_AFTER_CALLS_EXIT_CODE` on
        *receiving* the N-th ``tools/call``, before answering it.
    :param exit_on_start: exit with this code before reading anything (one line on stderr first).
    :param ignore_sigterm: ignore SIGTERM (only SIGKILL ends the server).
    :param grandchild: spawn a long-lived child in the server's process group.
    :param setsid_grandchild: spawn a long-lived child in a new session (escapes ``killpg``).
    :param grandchild_inherit_stdio: give grandchildren the server's stdio pipes
        instead of ``/dev/null`` (then the stdout pipe stays open after the server dies).
    :param escaping_grandchild: start a daemon that escapes every mark but a
        cgroup: double-forked, in a session of its own, with an *empty*
        environment (no family tag, no mark of the test's); its command line
        ends with this label, the only way to find it
        (:func:`escaped_processes`; Linux: a cgroup per server family
        reclaims it, the tags cannot).
    :param garbage_stdout: write a non-JSON line to stdout at start and before every message.
    :param random_stdout: write this many random bytes, then a newline, to stdout at start.
    :param stderr_flood: write this many bytes to stderr before reading stdin.
    :param huge_response: ``echo`` answers with a text of exactly this many characters.
    :param huge_notification: before answering each ``tools/call``, send a
        ``notifications/message`` whose ``data`` is a text of this many characters.
    :param id_last: write every answer with its ``result`` or ``error`` first
        and its ``id`` last, as the TypeScript SDK serializes them.
    :param ping_flood: add a tool ``flood {}`` whose call makes the server send
        this many ``ping`` requests while it reads nothing from stdin (a
        hostile server), then answer the call.
    :param list_changed_every: after initialize, send ``notifications/tools/list_changed``
        every so many seconds.
    :param call_log: append one JSON line ``{"id", "tool", "pid", "time"}`` per
        ``tools/call`` *received*, written immediately.
    :param cancel_log: append one JSON line ``{"id", "pid", "time"}`` per
        ``notifications/cancelled`` *received*, written immediately: the id is
        the cancelled request's, as ``call_log`` records it (R-TOOL-4).
    :param exit_on_eof: ``False`` keeps the server running after stdin closes, until killed.
    :param pid_file: write the server's pid here (atomically) at start.
    :returns: ``{"type": "stdio", "command": sys.executable, "args": [...]}``.
    :raises TypeError: for an unknown keyword, naming it.
    """
    args: list[str] = [*_FAST_PYTHON_FLAGS, str(FAULT_SERVER_PATH)]
    valued: dict[str, str | float | os.PathLike[str] | None] = {
        "tools": tools,
        "instructions": instructions,
        "server_description": server_description,
        "deep_schema": deep_schema,
        "random_stdout": random_stdout,
        "init_delay": init_delay,
        "call_delay": call_delay,
        "crash_after_calls": crash_after_calls,
        "exit_on_start": exit_on_start,
        "stderr_flood": stderr_flood,
        "huge_response": huge_response,
        "huge_notification": huge_notification,
        "ping_flood": ping_flood,
        "list_changed_every": list_changed_every,
        "call_log": call_log,
        "cancel_log": cancel_log,
        "pid_file": pid_file,
        "escaping_grandchild": escaping_grandchild,
    }
    for name, value in valued.items():
        if value is not None:
            args += [_flag(name), _flag_value(value)]
    named = (
        ("--read-only", read_only),
        ("--list-twice", list_twice),
        ("--json-rpc-error", json_rpc_error),
        ("--malformed-answer", malformed_answer),
        ("--invalid-schema", invalid_schema),
        ("--named-tool", named_tool),
    )
    for flag, tools_named in named:
        for tool in [tools_named] if isinstance(tools_named, str) else tools_named:
            args += [flag, tool]
    switches = {
        "ignore_sigterm": ignore_sigterm,
        "grandchild": grandchild,
        "setsid_grandchild": setsid_grandchild,
        "grandchild_inherit_stdio": grandchild_inherit_stdio,
        "progress_tool": progress_tool,
        "silent_list_changes": silent_list_changes,
        "garbage_stdout": garbage_stdout,
        "id_last": id_last,
        "ignore_eof": not exit_on_eof,
    }
    args += [_flag(name) for name, enabled in switches.items() if enabled]
    return {"type": "stdio", "command": sys.executable, "args": args}


def entry_command(entry: Mapping[str, object]) -> list[str]:
    """The argv a stdio entry runs: ``[command, *args]``.

    For tests that start a server themselves (raw pipes, ``StdioServerParameters``).

    :raises ValueError: if ``entry`` has no string ``command`` or its ``args`` is not a list.
    """
    command = entry.get("command")
    args = entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list | tuple):
        raise ValueError(f"not a stdio entry with a command and a list of args: {entry!r}")
    return [command, *(str(arg) for arg in cast("list[object] | tuple[object, ...]", args))]


def reference_server_entry(transport: Literal["stdio"] = "stdio") -> dict[str, object]:
    """Build an MCP config entry that runs the SDK's reference server over stdio.

    The server imports ``mcp.server`` and takes over a second to start. For
    streamable HTTP or SSE use :func:`serve_reference_server`, which owns the
    process and yields its URL.

    :param transport: only ``"stdio"``.
    :returns: ``{"type": "stdio", "command": sys.executable, "args": [...]}``.
    :raises ValueError: for any other transport.
    """
    if transport != "stdio":
        raise ValueError(
            f"reference_server_entry() runs the stdio transport only, not {transport!r}; "
            "use serve_reference_server() for streamable-http and sse"
        )
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(REFERENCE_SERVER_PATH), "--transport", "stdio"],
    }


# Start-up of `mcp.server` + uvicorn takes ~1.5 s on a quiet 2-core machine;
# the bound is generous because test suites run many processes at once.
_REFERENCE_START_TIMEOUT: Final = 20.0
_PORT_FILE_POLL_INTERVAL: Final = 0.02
_TERMINATE_GRACE: Final = 5.0


@asynccontextmanager
async def serve_reference_server(
    transport: Literal["streamable-http", "sse"] = "streamable-http",
) -> AsyncGenerator[str, None]:
    """Run the SDK's reference server over HTTP on 127.0.0.1 and yield its URL.

    The server binds an ephemeral port chosen by the OS and reports it through
    a port file; the URL (``http://127.0.0.1:PORT/mcp`` or ``.../sse``) is
    yielded once it accepts connections. On exit the process gets SIGTERM,
    then SIGKILL if it has not exited within a few seconds; that wait is
    shielded, so a cancelled caller still leaves no process behind.

    :param transport: ``"streamable-http"`` or ``"sse"``.
    :raises ValueError: for any other transport.
    :raises RuntimeError: if the server exits before it listens.
    :raises trio.TooSlowError: if it does not listen within 20 seconds.
    """
    import subprocess
    import tempfile

    import trio

    paths = {"streamable-http": "/mcp", "sse": "/sse"}
    if transport not in paths:
        raise ValueError(f"serve_reference_server() serves streamable-http or sse, not {transport!r}")
    with tempfile.TemporaryDirectory(prefix="wave-reference-") as directory:
        port_file = Path(directory) / "port"
        command = [
            sys.executable,
            str(REFERENCE_SERVER_PATH),
            "--transport",
            transport,
            "--port-file",
            str(port_file),
        ]
        process = await trio.lowlevel.open_process(command, stdin=subprocess.DEVNULL)
        try:
            with trio.fail_after(_REFERENCE_START_TIMEOUT):
                while not port_file.exists():
                    if process.returncode is not None:
                        raise RuntimeError(
                            f"reference server ({transport}) exited with code {process.returncode} "
                            "before listening; see its stderr above"
                        )
                    await trio.sleep(_PORT_FILE_POLL_INTERVAL)
            port = int(port_file.read_text().strip())
            yield f"http://127.0.0.1:{port}{paths[transport]}"
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                    with trio.move_on_after(_TERMINATE_GRACE):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    with trio.move_on_after(_TERMINATE_GRACE):
                        await process.wait()
