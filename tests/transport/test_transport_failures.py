"""The transport's one error boundary: every failure from below becomes one of our errors.

Pure tests of :mod:`wave_actors._transport.failures`, no processes: the table
that says what each foreign exception means, the words each path gives it, and
the dial boundary's rules for the caller's own exceptions. R-TOOL-4, R-TOOL-6,
R-TOOL-9, R-RACE-4, R-CFG-9.
"""

from __future__ import annotations

import anyio
import httpx2
import mcp_types
import pydantic
import pydantic_core
import pytest
import trio
from mcp.shared.exceptions import MCPError

from wave_actors import DialError, ServerUnavailable, ToolCallError, ToolTimeout, WaveActorsError
from wave_actors._transport import StderrLog
from wave_actors._transport.failures import DialBoundary, Failure, classify, dial_error, request_error


class _Answer(pydantic.BaseModel):
    count: int


def _validation_error() -> pydantic.ValidationError:
    try:
        _Answer.model_validate({"count": "many"})
    except pydantic.ValidationError as error:
        return error
    raise AssertionError("the answer validated")


FOREIGN = [
    pytest.param(MCPError(mcp_types.REQUEST_TIMEOUT, "timed out"), Failure.TIMED_OUT, id="sdk-timeout"),
    pytest.param(MCPError(mcp_types.CONNECTION_CLOSED, "closed"), Failure.CLOSED, id="sdk-closed"),
    pytest.param(MCPError(mcp_types.INVALID_PARAMS, "no such tool"), Failure.ANSWERED, id="sdk-error-answer"),
    pytest.param(pydantic_core.PydanticSerializationError("unknown type"), Failure.UNSERIALIZABLE, id="pydantic-dump"),
    pytest.param(trio.BrokenResourceError(), Failure.CLOSED, id="trio-broken"),
    pytest.param(trio.ClosedResourceError(), Failure.CLOSED, id="trio-closed"),
    pytest.param(BrokenPipeError(32, "Broken pipe"), Failure.CLOSED, id="os"),
    pytest.param(TimeoutError(), Failure.CLOSED, id="timeout"),
    pytest.param(httpx2.ConnectError("connection refused"), Failure.BROKEN, id="httpx"),
    pytest.param(anyio.EndOfStream(), Failure.BROKEN, id="anyio"),
    pytest.param(_validation_error(), Failure.REJECTED, id="malformed-answer"),
    pytest.param(RuntimeError("output breaks the tool's schema"), Failure.REJECTED, id="sdk-rejects-result"),
]


@pytest.mark.parametrize(("error", "meaning"), FOREIGN)
def test_the_table_says_what_each_foreign_failure_means(error: Exception, meaning: Failure) -> None:
    assert classify(error) is meaning


@pytest.mark.parametrize(("error", "meaning"), FOREIGN)
def test_no_foreign_failure_escapes_a_request(error: Exception, meaning: Failure) -> None:
    # R-TOOL-6: callers see our hierarchy (and TypeError for their own bad arguments, R-TOOL-9).
    mapped = request_error(error, server="files", request="tools/call 'read'", timeout=2.5, loss_reason=None)
    assert isinstance(mapped, (WaveActorsError, TypeError))
    assert "'files'" in str(mapped) and "tools/call 'read'" in str(mapped)


def test_a_timed_out_call_says_its_deadline_and_that_it_is_not_retried() -> None:
    # R-TOOL-4
    error = MCPError(mcp_types.REQUEST_TIMEOUT, "timed out")
    mapped = request_error(error, server="files", request="tools/call 'read'", timeout=2.5, loss_reason=None)
    assert isinstance(mapped, ToolTimeout)
    assert "after 2.5 s" in str(mapped) and "will not be retried" in str(mapped)


def test_a_request_without_a_deadline_times_out_without_inventing_one() -> None:
    error = MCPError(mcp_types.REQUEST_TIMEOUT, "timed out")
    mapped = request_error(error, server="files", request="tools/list", timeout=None, loss_reason=None)
    assert isinstance(mapped, ToolTimeout) and " s;" not in str(mapped)


def test_a_request_on_a_lost_connection_says_why_it_was_lost() -> None:
    # R-RACE-4: the exit status beats "connection closed".
    for error in (MCPError(mcp_types.CONNECTION_CLOSED, "closed"), trio.BrokenResourceError()):
        mapped = request_error(
            error, server="files", request="tools/call 'read'", timeout=5, loss_reason="process exited with code 5"
        )
        assert isinstance(mapped, ServerUnavailable) and str(mapped).endswith("process exited with code 5")


def test_a_json_rpc_error_answer_keeps_its_code_and_message() -> None:
    error = MCPError(mcp_types.INVALID_PARAMS, "no such tool")
    mapped = request_error(error, server="files", request="tools/call 'nope'", timeout=5, loss_reason=None)
    assert isinstance(mapped, ToolCallError) and mapped.code == mcp_types.INVALID_PARAMS
    assert "no such tool" in str(mapped)


def test_unserializable_arguments_are_the_callers_type_error() -> None:
    # R-TOOL-9
    error = pydantic_core.PydanticSerializationError("Unable to serialize unknown type: <class 'object'>")
    mapped = request_error(error, server="files", request="tools/call 'read'", timeout=5, loss_reason=None)
    assert type(mapped) is TypeError and "JSON" in str(mapped)


def test_our_own_errors_pass_a_request_unchanged() -> None:
    ours = ToolCallError("server 'files': tools/list repeats the cursor 'a'")
    assert request_error(ours, server="files", request="tools/list", timeout=None, loss_reason=None) is ours


def test_a_dial_error_carries_the_tail_of_stderr() -> None:
    # R-CFG-9: stderr is never parsed, but its last lines say why a server would not start.
    stderr = StderrLog()
    stderr.feed(b"starting\nTraceback (most recent call last):\nImportError: no module named 'x'\n")
    mapped = dial_error(ConnectionError("process exited with code 1"), server="files", stderr=stderr)
    assert isinstance(mapped, DialError)
    assert "'files'" in str(mapped) and "code 1" in str(mapped) and "ImportError" in str(mapped)


def test_a_failure_before_the_handshake_is_a_dial_error() -> None:
    with pytest.raises(DialError, match="'files': connect failed: connection refused") as caught, DialBoundary("files"):
        raise ExceptionGroup("transport", [httpx2.ConnectError("connection refused")])
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)


def test_a_failure_after_the_handshake_is_a_lost_connection() -> None:
    # R-RACE-4: the SDK's HTTP client raises out of its task group when the server vanishes.
    lost = pytest.raises(ServerUnavailable, match="'files': connection lost")
    with lost as caught, DialBoundary("files") as boundary:
        boundary.established = True
        raise httpx2.ReadError("server disconnected")
    assert not isinstance(caught.value, DialError)


def test_the_callers_own_error_passes_unchanged_out_of_its_task_groups() -> None:
    theirs = ValueError("the host's own bug")
    theirs.__cause__ = KeyError("why")
    with pytest.raises(ValueError) as caught, DialBoundary("files") as boundary:
        boundary.established = True
        boundary.caller_error = theirs
        raise ExceptionGroup("watchers", [ExceptionGroup("session", [theirs])])
    assert caught.value is theirs and isinstance(theirs.__cause__, KeyError)


def test_our_own_errors_leave_the_boundary_unwrapped_with_their_cause() -> None:
    refused = MCPError(mcp_types.INVALID_REQUEST, "unsupported protocol version")
    ours = DialError("server 'files': connect failed: unsupported protocol version")
    ours.__cause__ = refused
    with pytest.raises(DialError) as caught, DialBoundary("files"):
        raise ExceptionGroup("session", [ours])
    assert caught.value is ours and ours.__cause__ is refused


def test_base_exceptions_and_several_failures_at_once_pass_untouched() -> None:
    # Like trio.Cancelled, which cannot be built outside trio: never ours to reword.
    with pytest.raises(KeyboardInterrupt), DialBoundary("files"):
        raise KeyboardInterrupt
    several = ExceptionGroup("both", [OSError("one"), OSError("two")])
    with pytest.raises(ExceptionGroup) as caught, DialBoundary("files"):
        raise several
    assert caught.value is several


def test_a_dial_error_keeps_the_error_lines_before_a_later_notice() -> None:
    # R-CFG-9: npm prints its update notice after the 404 that says why npx failed.
    stderr = StderrLog()
    stderr.feed(
        b"npm error code E404\n"
        b"npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found\n"
        b"npm error 404\n"
        b"npm error 404  'nope@*' is not in this registry.\n"
        b"npm notice\n"
        b"npm notice New major version of npm available! 10.9.2 -> 11.4.1\n"
        b"npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.4.1\n"
        b"npm notice To update run: npm install -g npm@11.4.1\n"
        b"npm notice\n"
    )
    excerpt = stderr.excerpt()

    assert excerpt.lines == (
        "npm error code E404",
        "npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found",
        "npm error 404  'nope@*' is not in this registry.",
        "npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.4.1",
        "npm notice To update run: npm install -g npm@11.4.1",
    )
    assert excerpt.total == 9 and excerpt.omitted == 4
    mapped = dial_error(ConnectionError("process exited with code 1"), server="time", stderr=stderr)
    assert "(5 of 9 lines, error lines kept first)" in str(mapped) and "is not in this registry" in str(mapped)


def test_a_python_traceback_keeps_its_exception_and_the_lines_above_it() -> None:
    stderr = StderrLog()
    stderr.feed(b"starting server\nloading plugins\n" + b"".join(b"  File 'x.py', line %d\n" % n for n in range(6)))
    stderr.feed(b"ModuleNotFoundError: No module named 'mcp'\nshutting down\n")

    lines = stderr.excerpt().lines

    assert len(lines) == 5 and "ModuleNotFoundError: No module named 'mcp'" in lines
    assert lines[-1] == "shutting down"  # the others are the latest, in the order written


def test_few_lines_are_kept_whole_and_in_order() -> None:
    stderr = StderrLog()
    stderr.feed(b"notice: starting\n\nerror: no token\n")

    excerpt = stderr.excerpt()

    assert excerpt.lines == ("notice: starting", "error: no token") and excerpt.omitted == 0
