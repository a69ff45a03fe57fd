"""A fault-injection MCP server over stdio, built from the standard library only.

Run it by file path (``python -I -S path/to/fault_server.py [flags]``), never
with ``-m``: importing ``wave_actors`` would cost what this file exists to
avoid. It starts and answers ``initialize`` in tens of milliseconds, so tests
that spawn many servers stay fast. :func:`wave_actors.testing.fault_server_entry`
builds the command line.

Wire format: newline-delimited JSON-RPC 2.0 on stdin/stdout; logs go to
stderr only (except under ``--garbage-stdout``, whose whole point is to break
that rule).

Concurrency: the main thread reads stdin and hands every request to its own
thread, so a slow call never blocks another; writes to stdout are serialized
by one lock. ``notifications/cancelled`` wakes the named call's thread, which
then sends nothing.

Tools: ``echo {text}``, ``sleep {seconds}``, ``fail {message}``,
``crash {code}``, ``pid {}``, ``notify_list_changed {add_tool?, remove_tool?}``, and with
``--tools N`` the echo-like ``tool_1`` .. ``tool_N``. The server trusts its
arguments: schemas are advertised, not enforced. ``--list-twice TOOL`` lists a
tool twice, and ``--json-rpc-error TOOL`` answers its calls with a JSON-RPC
error instead of a result, as broken servers do.

Malformed output, as hostile or broken servers write it:

* ``--malformed-answer TOOL`` answers each call of TOOL with
  ``{"jsonrpc": "2.0", "id": N, "result": "oops"}``: its id is readable, its
  result is not an object.
* ``--invalid-schema TOOL`` adds an echo-like TOOL whose ``inputSchema`` is
  ``{"type": "array"}``, which MCP forbids (it must describe an object).
* ``--named-tool NAME`` adds an echo-like tool of any NAME, whose description
  repeats it: a server that puts escape sequences, line separators or
  invisible characters in what a terminal or a model is shown.
* ``--deep-schema LEVELS`` adds a tool ``deep`` whose ``inputSchema`` nests
  ``properties`` LEVELS levels deep (each level is two JSON levels).
* ``--random-stdout BYTES`` writes that many random bytes to stdout at start,
  then a newline, then serves normally; ``--garbage-stdout`` writes one known
  non-JSON line at start and before every message.
* ``--huge-notification BYTES``: before answering each ``tools/call``, send a
  ``notifications/message`` whose ``data`` is a text of that many characters.
* ``--id-last`` writes every answer with its ``result`` (or ``error``) first
  and its ``jsonrpc`` and ``id`` last, as the TypeScript SDK serializes them.
* ``--ping-flood N`` adds a tool ``flood {}``: a call of it makes the server
  send N ``ping`` requests of its own (ids ``"flood-1"`` ..), from the thread
  that reads stdin, so it reads nothing until they are all written; then it
  answers the call, and reads on.

Process behaviour worth knowing:

* On stdin EOF the server exits 0 at once (in-flight calls are abandoned),
  unless ``--ignore-eof`` keeps it alive until it is killed.
* ``--crash-after-calls N`` exits with code 3 on *receiving* the N-th
  ``tools/call``, before answering it: calls 1..N-1 are answered, call N is
  logged by ``--call-log`` and then lost with the process.
* ``--cancel-log PATH`` appends one JSON line ``{"id", "pid", "time"}`` per
  ``notifications/cancelled`` received, written immediately: the request id
  the client gave up on, as ``--call-log`` names it.
* Grandchildren (``--grandchild``, ``--setsid-grandchild``) are long-lived
  Python processes blocked in ``signal.pause()``. They ignore SIGHUP and do
  not watch their parent, so they outlive the server; SIGTERM and SIGKILL
  kill them (they reset SIGTERM to its default even under
  ``--ignore-sigterm``). They inherit the environment. Their stdin/stdout/
  stderr are ``/dev/null`` unless ``--grandchild-inherit-stdio`` hands them
  the server's pipes (a child holding the stdout pipe open hides the server's
  death from a reader waiting for EOF).
* ``--escaping-grandchild LABEL`` starts a daemon that escapes by design, the
  way a real daemon detaches: the server forks, the child calls ``setsid``
  and forks again and exits, and the grandchild runs the same sleeping
  program with an *empty environment*, standard streams on ``/dev/null``.
  It is in no process tree of the server's, in no session of the server's,
  and carries no tag or mark: only a cgroup holds it. Its command line ends
  with LABEL, the one way a test can find it; its pid is listed with the
  other grandchildren by the ``pid`` tool.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any, NoReturn, cast

SERVER_NAME = "wave-actors-fault-server"
SERVER_VERSION = "1.0"

SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = "2025-11-25"

CRASH_AFTER_CALLS_EXIT_CODE = 3

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

GRANDCHILD_PROGRAM = """\
import signal
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while True:
    signal.pause()
"""

GARBAGE_LINE = b"fault_server: this line is not JSON-RPC\n"

JSONObject = dict[str, Any]


def _as_object(value: object) -> JSONObject | None:
    """``value`` as a JSON object, or ``None`` if it is not one."""
    return cast(JSONObject, value) if isinstance(value, dict) else None


def _log(message: str) -> None:
    try:
        sys.stderr.write(f"fault_server[{os.getpid()}]: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fault_server", description="A fault-injection MCP server over stdio.")
    parser.add_argument("--tools", type=int, default=0, metavar="N", help="add echo-like tools tool_1..tool_N")
    parser.add_argument("--instructions", default=None, metavar="TEXT", help="instructions sent in initialize")
    parser.add_argument(
        "--server-description", default=None, metavar="TEXT", help="serverInfo.description sent in initialize"
    )
    parser.add_argument(
        "--read-only", action="append", default=[], metavar="TOOL", help="mark TOOL readOnlyHint (repeatable)"
    )
    parser.add_argument(
        "--list-twice", action="append", default=[], metavar="TOOL", help="list TOOL twice in tools/list (repeatable)"
    )
    parser.add_argument(
        "--json-rpc-error",
        action="append",
        default=[],
        metavar="TOOL",
        help="answer every call of TOOL with a JSON-RPC error instead of a result (repeatable)",
    )
    parser.add_argument(
        "--malformed-answer",
        action="append",
        default=[],
        metavar="TOOL",
        help='answer every call of TOOL with {"id": N, "result": "oops"} (repeatable)',
    )
    parser.add_argument(
        "--invalid-schema",
        action="append",
        default=[],
        metavar="TOOL",
        help='add an echo-like TOOL whose inputSchema is {"type": "array"} (repeatable)',
    )
    parser.add_argument(
        "--named-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="add an echo-like tool NAME, any characters, whose description repeats it (repeatable)",
    )
    parser.add_argument(
        "--deep-schema",
        type=int,
        default=None,
        metavar="LEVELS",
        help="add a tool 'deep' whose inputSchema nests LEVELS levels of properties",
    )
    parser.add_argument(
        "--progress-tool",
        action="store_true",
        help="add a tool 'progress' that sends {steps} notifications/progress (for the call's progressToken), then answers",
    )
    parser.add_argument(
        "--silent-list-changes",
        action="store_true",
        help="notify_list_changed adds its tool but sends no notifications/tools/list_changed",
    )
    parser.add_argument("--random-stdout", type=int, default=0, metavar="BYTES", help="random bytes on stdout at start")
    parser.add_argument(
        "--huge-notification",
        type=int,
        default=None,
        metavar="BYTES",
        help="before answering each tools/call, send a notifications/message of that many characters",
    )
    parser.add_argument(
        "--id-last", action="store_true", help="write answers with result or error first and id last (as TypeScript)"
    )
    parser.add_argument(
        "--ping-flood",
        type=int,
        default=None,
        metavar="N",
        help="add a tool 'flood' whose call sends N ping requests without reading stdin meanwhile, then answers",
    )
    parser.add_argument("--init-delay", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--call-delay", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument(
        "--crash-after-calls",
        type=int,
        default=None,
        metavar="N",
        help=f"exit {CRASH_AFTER_CALLS_EXIT_CODE} on receiving the N-th tools/call, before answering it",
    )
    parser.add_argument("--exit-on-start", type=int, default=None, metavar="CODE")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--grandchild", action="store_true", help="spawn a long-lived child in our group")
    parser.add_argument("--setsid-grandchild", action="store_true", help="spawn a long-lived child in a new session")
    parser.add_argument("--grandchild-inherit-stdio", action="store_true")
    parser.add_argument(
        "--escaping-grandchild",
        default=None,
        metavar="LABEL",
        help="start a double-forked, setsid daemon with an empty environment, LABEL last on its command line",
    )
    parser.add_argument("--garbage-stdout", action="store_true")
    parser.add_argument("--stderr-flood", type=int, default=0, metavar="BYTES")
    parser.add_argument("--huge-response", type=int, default=None, metavar="BYTES")
    parser.add_argument("--list-changed-every", type=float, default=None, metavar="SECONDS")
    parser.add_argument("--call-log", default=None, metavar="PATH")
    parser.add_argument("--cancel-log", default=None, metavar="PATH")
    parser.add_argument("--exit-on-eof", dest="exit_on_eof", action="store_true", default=True)
    parser.add_argument("--ignore-eof", dest="exit_on_eof", action="store_false")
    parser.add_argument("--pid-file", default=None, metavar="PATH")
    return parser.parse_args(argv)


def _object_schema(properties: JSONObject, required: list[str]) -> JSONObject:
    return {"type": "object", "properties": properties, "required": required}


def _tool_definitions(options: argparse.Namespace) -> list[JSONObject]:
    echo_schema = _object_schema({"text": {"type": "string", "description": "text to send back"}}, ["text"])
    # Draft markers and exclusive bounds are valid JSON Schema that some model
    # APIs reject; the library strips them, so tests need a server that sends them.
    echo_schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    tools: list[JSONObject] = [
        {"name": "echo", "description": "Return the given text.", "inputSchema": echo_schema},
        {
            "name": "sleep",
            "description": "Answer after sleeping; a cancelled sleep sends no answer.",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                **_object_schema({"seconds": {"type": "number", "exclusiveMinimum": 0}}, ["seconds"]),
            },
        },
        {
            "name": "fail",
            "description": "Return a tool error (isError: true) carrying the message.",
            "inputSchema": _object_schema({"message": {"type": "string"}}, []),
        },
        {
            "name": "crash",
            "description": "Exit the server process at once with the given code.",
            "inputSchema": _object_schema({"code": {"type": "integer", "minimum": 0, "maximum": 255}}, []),
        },
        {
            "name": "pid",
            "description": "Return the server's pid, process group, session and grandchildren pids as JSON.",
            "inputSchema": _object_schema({}, []),
        },
        {
            "name": "notify_list_changed",
            "description": "Optionally add an echo-like tool named add_tool and withdraw the tool named "
            "remove_tool, send notifications/tools/list_changed, then answer.",
            "inputSchema": _object_schema({"add_tool": {"type": "string"}, "remove_tool": {"type": "string"}}, []),
        },
    ]
    for index in range(1, options.tools + 1):
        tools.append(_extra_tool(f"tool_{index}"))
    for name in options.invalid_schema:
        tools.append({**_extra_tool(name), "inputSchema": {"type": "array"}})
    tools.extend(_extra_tool(name) for name in options.named_tool)
    if options.deep_schema is not None:
        tools.append({**_extra_tool("deep"), "inputSchema": _deep_schema(options.deep_schema)})
    if options.ping_flood is not None:
        tools.append(
            {
                "name": "flood",
                "description": "Send ping requests without reading stdin meanwhile, then answer.",
                "inputSchema": _object_schema({}, []),
            }
        )
    if options.progress_tool:
        tools.append(
            {
                "name": "progress",
                "description": "Send the given number of progress notifications, then answer.",
                "inputSchema": _object_schema({"steps": {"type": "integer", "minimum": 0}}, ["steps"]),
            }
        )
    read_only = set(options.read_only)
    for tool in tools:
        if tool["name"] in read_only:
            tool["annotations"] = {"readOnlyHint": True}
    twice = set(options.list_twice)
    return [*tools, *(dict(tool) for tool in tools if tool["name"] in twice)]


def _extra_tool(name: str) -> JSONObject:
    return {
        "name": name,
        "description": f"Extra tool {name}; returns its name and the text.",
        "inputSchema": _object_schema({"text": {"type": "string"}}, []),
    }


def _deep_schema(levels: int) -> JSONObject:
    schema: JSONObject = {"type": "object"}
    for _ in range(levels):
        schema = _object_schema({"inner": schema}, [])
    return schema


def _text_result(text: str, *, is_error: bool = False) -> JSONObject:
    result: JSONObject = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


class _Cancelled(Exception):
    """The client cancelled this request: its thread must send nothing."""


class _RequestError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FaultServer:
    """The server's state: options, in-flight requests, the stdout lock."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.tools = _tool_definitions(options)
        self.tool_names = {tool["name"] for tool in self.tools}
        self.stdout = sys.stdout.buffer
        self.write_lock = threading.Lock()
        self.in_flight_lock = threading.Lock()
        self.in_flight: dict[str, threading.Event] = {}
        self.calls_received = 0
        self.grandchildren: list[int] = []
        self.list_changed_started = False
        self.call_log_fd: int | None = None
        if options.call_log:
            self.call_log_fd = os.open(options.call_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.cancel_log_fd: int | None = None
        if options.cancel_log:
            self.cancel_log_fd = os.open(options.cancel_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    # ----- output -----

    def send(self, message: JSONObject) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self.write_lock:
            try:
                if self.options.garbage_stdout:
                    self.stdout.write(GARBAGE_LINE)
                self.stdout.write(data)
                self.stdout.flush()
            except (OSError, ValueError):
                # The reader is gone; nobody is left to answer.
                os._exit(0)

    def answer(self, request_id: object, member: str, value: object) -> None:
        if self.options.id_last:
            self.send({member: value, "jsonrpc": "2.0", "id": request_id})
        else:
            self.send({"jsonrpc": "2.0", "id": request_id, member: value})

    def respond(self, request_id: object, result: JSONObject) -> None:
        self.answer(request_id, "result", result)

    def respond_malformed(self, request_id: object) -> None:
        self.answer(request_id, "result", "oops")

    def respond_error(self, request_id: object, code: int, message: str) -> None:
        self.answer(request_id, "error", {"code": code, "message": message})

    def notify(self, method: str, params: JSONObject | None = None) -> None:
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ----- input -----

    def serve(self) -> NoReturn:
        stdin = sys.stdin.buffer
        while True:
            line = stdin.readline()
            if not line:
                self.on_eof()
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                _log(f"unparseable line from client: {line[:200]!r}")
                self.respond_error(None, PARSE_ERROR, "Parse error")
                continue
            batch = cast(list[object], message) if isinstance(message, list) else [message]
            for item in batch:
                self.dispatch(item)

    def on_eof(self) -> NoReturn:
        if self.options.exit_on_eof:
            _log("stdin closed; exiting")
            os._exit(0)
        _log("stdin closed; staying alive until killed (--ignore-eof)")
        while True:
            signal.pause()

    def dispatch(self, item: object) -> None:
        message = _as_object(item)
        if message is None:
            self.respond_error(None, INVALID_REQUEST, "Invalid Request")
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to a request we never sent, or junk: nothing to answer
        params: object = message.get("params") or {}
        if "id" not in message:
            self.on_notification(method, params)
            return
        request_id: object = message["id"]
        if method == "tools/call":
            self.on_call_received(request_id, params)
            call = _as_object(params)
            if self.options.ping_flood is not None and call is not None and call.get("name") == "flood":
                self.flood(request_id, self.options.ping_flood)
                return
        cancelled = threading.Event()
        with self.in_flight_lock:
            self.in_flight[self._key(request_id)] = cancelled
        threading.Thread(target=self.handle_request, args=(request_id, method, params, cancelled), daemon=True).start()

    @staticmethod
    def _key(request_id: object) -> str:
        # The SDK may send a cancelled id as a string for an integer request id.
        return str(request_id)

    def on_notification(self, method: str, params: object) -> None:
        notification = _as_object(params)
        if method == "notifications/cancelled" and notification is not None:
            key = self._key(notification.get("requestId"))
            if self.cancel_log_fd is not None:
                record = {"id": notification.get("requestId"), "pid": os.getpid(), "time": time.time()}
                os.write(self.cancel_log_fd, json.dumps(record).encode() + b"\n")
            with self.in_flight_lock:
                cancelled = self.in_flight.get(key)
            if cancelled is not None:
                _log(f"request {key} cancelled")
                cancelled.set()
        # notifications/initialized and anything else: nothing to do.

    def on_call_received(self, request_id: object, params: object) -> None:
        self.calls_received += 1
        call = _as_object(params)
        name = call.get("name") if call is not None else None
        if self.call_log_fd is not None:
            record = {"id": request_id, "tool": name, "pid": os.getpid(), "time": time.time()}
            os.write(self.call_log_fd, json.dumps(record).encode() + b"\n")
        limit = self.options.crash_after_calls
        if limit is not None and self.calls_received >= limit:
            _log(f"call {self.calls_received} received; crashing with code {CRASH_AFTER_CALLS_EXIT_CODE}")
            os._exit(CRASH_AFTER_CALLS_EXIT_CODE)

    def flood(self, request_id: object, count: int) -> None:
        """Send ``count`` ping requests from the stdin reader, so nothing is read meanwhile; then answer."""
        for index in range(1, count + 1):
            self.send({"jsonrpc": "2.0", "id": f"flood-{index}", "method": "ping"})
        self.respond(request_id, _text_result(f"sent {count} pings"))

    # ----- requests, each on its own thread -----

    def handle_request(self, request_id: object, method: str, params: object, cancelled: threading.Event) -> None:
        call = _as_object(params)
        if method == "tools/call" and call is not None and call.get("name") in self.options.malformed_answer:
            with self.in_flight_lock:
                self.in_flight.pop(self._key(request_id), None)
            self.respond_malformed(request_id)
            return
        try:
            result = self.run_method(method, params, cancelled)
        except _Cancelled:
            return
        except _RequestError as error:
            if not cancelled.is_set():
                self.respond_error(request_id, error.code, error.message)
            return
        finally:
            with self.in_flight_lock:
                self.in_flight.pop(self._key(request_id), None)
        if not cancelled.is_set():
            self.respond(request_id, result)
        if method == "initialize":
            self.start_list_changed_timer()

    def run_method(self, method: str, params: object, cancelled: threading.Event) -> JSONObject:
        request = _as_object(params)
        if request is None:
            raise _RequestError(INVALID_PARAMS, "params must be an object")
        if method == "initialize":
            return self.initialize(request, cancelled)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools}
        if method == "tools/call":
            return self.call_tool(request, cancelled)
        raise _RequestError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def initialize(self, params: JSONObject, cancelled: threading.Event) -> JSONObject:
        self.wait(self.options.init_delay, cancelled)
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        }
        if self.options.server_description is not None:
            result["serverInfo"]["description"] = self.options.server_description
        if self.options.instructions is not None:
            result["instructions"] = self.options.instructions
        return result

    @staticmethod
    def wait(seconds: float, cancelled: threading.Event) -> None:
        if seconds > 0 and cancelled.wait(seconds):
            raise _Cancelled
        if cancelled.is_set():
            raise _Cancelled

    def call_tool(self, params: JSONObject, cancelled: threading.Event) -> JSONObject:
        name = params.get("name")
        if not isinstance(name, str) or name not in self.tool_names:
            raise _RequestError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = _as_object(params.get("arguments") or {})
        if arguments is None:
            raise _RequestError(INVALID_PARAMS, "arguments must be an object")
        self.wait(self.options.call_delay, cancelled)
        if self.options.huge_notification is not None:
            data = "x" * self.options.huge_notification
            self.notify("notifications/message", {"level": "info", "logger": "fault_server", "data": data})
        if name in self.options.json_rpc_error:
            raise _RequestError(INVALID_PARAMS, f"{name} answers with a JSON-RPC error (--json-rpc-error)")
        if name == "echo":
            return _text_result(self.echo_text(str(arguments.get("text", ""))))
        if name == "sleep":
            self.wait(float(arguments.get("seconds", 0)), cancelled)
            return _text_result(f"slept {arguments.get('seconds', 0)}")
        if name == "fail":
            return _text_result(str(arguments.get("message", "failed on purpose")), is_error=True)
        if name == "crash":
            code = int(arguments.get("code", 1))
            _log(f"crash tool called; exiting with code {code}")
            os._exit(code)
        if name == "pid":
            return _text_result(
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "pgid": os.getpgid(0),
                        "sid": os.getsid(0),
                        "grandchildren": list(self.grandchildren),
                    }
                )
            )
        if name == "progress":
            steps = int(arguments.get("steps", 0))
            meta = _as_object(params.get("_meta") or {})
            token = meta.get("progressToken") if meta is not None else None
            for step in range(1, steps + 1):
                if token is not None:
                    self.notify(
                        "notifications/progress",
                        {
                            "progressToken": token,
                            "progress": step,
                            "total": steps,
                            "message": f"step {step} of {steps}",
                        },
                    )
            return _text_result(f"{steps} steps")
        if name == "notify_list_changed":
            added = arguments.get("add_tool")
            if isinstance(added, str) and added not in self.tool_names:
                # Replace, never mutate: a concurrent tools/list may be serializing the old list.
                self.tools = [*self.tools, _extra_tool(added)]
                self.tool_names = self.tool_names | {added}
            removed = arguments.get("remove_tool")
            if isinstance(removed, str) and removed in self.tool_names and removed != name:
                self.tools = [tool for tool in self.tools if tool["name"] != removed]
                self.tool_names = self.tool_names - {removed}
            if self.options.silent_list_changes:
                return _text_result("changed the tool list without a word")
            self.notify("notifications/tools/list_changed")
            return _text_result("sent notifications/tools/list_changed")
        return _text_result(f"{name}: {arguments.get('text', '')}")

    def echo_text(self, text: str) -> str:
        size = self.options.huge_response
        if size is None:
            return text
        unit = text or "x"
        return (unit * (size // len(unit) + 1))[:size]

    # ----- background behaviour -----

    def start_list_changed_timer(self) -> None:
        period = self.options.list_changed_every
        if period is None or period <= 0 or self.list_changed_started:
            return
        self.list_changed_started = True

        def tick() -> None:
            while True:
                time.sleep(period)
                self.notify("notifications/tools/list_changed")

        threading.Thread(target=tick, daemon=True).start()

    def spawn_grandchild(self, *, new_session: bool) -> None:
        import subprocess  # only here: it costs milliseconds of every start

        stdio = None if self.options.grandchild_inherit_stdio else subprocess.DEVNULL
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", GRANDCHILD_PROGRAM],
            stdin=stdio,
            stdout=stdio,
            stderr=stdio,
            start_new_session=new_session,
        )
        # Never waited for: the grandchild is meant to outlive us.
        self.grandchildren.append(child.pid)
        _log(f"spawned {'setsid ' if new_session else ''}grandchild pid {child.pid}")

    def spawn_escaping_grandchild(self, label: str) -> None:
        """Detach a daemon as daemons do: fork, ``setsid``, fork, exec with an empty environment."""
        read, write = os.pipe()
        middle = os.fork()
        if middle == 0:
            try:
                os.setsid()
                daemon = os.fork()
                if daemon == 0:
                    null = os.open(os.devnull, os.O_RDWR)
                    for descriptor in (0, 1, 2):
                        os.dup2(null, descriptor)
                    # Every other descriptor is close-on-exec (PEP 446): the pipe included.
                    os.execve(sys.executable, [sys.executable, "-I", "-S", "-c", GRANDCHILD_PROGRAM, label], {})
                os.write(write, str(daemon).encode())
            finally:
                os._exit(0)
        os.close(write)
        os.waitpid(middle, 0)
        with os.fdopen(read, "rb") as pipe:
            pid = int(pipe.read())
        self.grandchildren.append(pid)
        _log(f"spawned escaping grandchild pid {pid}")


def _write_pid_file(path: str) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        handle.write(f"{os.getpid()}\n")
    os.replace(temporary, path)


def _flood_stderr(size: int) -> None:
    line = b"fault_server: stderr flood " + b"." * 100 + b"\n"
    stream = sys.stderr.buffer
    remaining = size
    while remaining > 0:
        chunk = line[:remaining] if remaining < len(line) else line
        stream.write(chunk)
        remaining -= len(chunk)
    stream.flush()


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the fault server until stdin closes (or a fault ends it)."""
    options = _parse_arguments(sys.argv[1:] if argv is None else argv)
    if options.exit_on_start is not None:
        _log(f"exiting on start with code {options.exit_on_start} (--exit-on-start)")
        os._exit(options.exit_on_start)
    if options.pid_file:
        _write_pid_file(options.pid_file)
    server = FaultServer(options)
    if options.grandchild:
        server.spawn_grandchild(new_session=False)
    if options.setsid_grandchild:
        server.spawn_grandchild(new_session=True)
    if options.escaping_grandchild is not None:
        server.spawn_escaping_grandchild(options.escaping_grandchild)
    # After spawning, so the grandchildren do not inherit SIG_IGN (they reset it anyway).
    if options.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if options.stderr_flood:
        _flood_stderr(options.stderr_flood)
    if options.random_stdout:
        with server.write_lock:
            server.stdout.write(os.urandom(options.random_stdout) + b"\n")
            server.stdout.flush()
    if options.garbage_stdout:
        with server.write_lock:
            server.stdout.write(GARBAGE_LINE)
            server.stdout.flush()
    server.serve()


if __name__ == "__main__":
    main()
