"""No log record, error or diagnostic of a connection shows a header or env value or a URL's query (R-CFG-12).

The MCP SDK logs the URL it connects to, and its HTTP client every request's
URL at INFO; a token in the query would be printed on every call. The
library filters those loggers, and words its own errors without the values.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Literal

import attrs
import pytest
import trio
from presets import FAST_TRANSPORT

from wave_actors import DialError, ServerConfig, Source
from wave_actors._transport import open_connection
from wave_actors._transport.redaction import SDK_LOGGERS, RedactingFilter, install_log_redaction, redact_text
from wave_actors.testing import fault_server_entry, serve_reference_server

QUIET = attrs.evolve(FAST_TRANSPORT, ping_interval=None)  # no heartbeat pings in the servers' logs
SECRETS = ("query-secret-1", "header-secret-2", "env-secret-3", "password-secret-4")


def remote(url: str, kind: str) -> ServerConfig:
    return ServerConfig(
        name="remote",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type=kind,
        url=url,
        headers={"Authorization": f"Bearer {SECRETS[1]}"},
    )


def everything_logged(caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    for record in caplog.records:
        yield formatter.format(record)


def assert_no_secret(texts: Iterator[str] | list[str]) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, text


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_remote_servers_query_and_headers_never_reach_the_log(
    caplog: pytest.LogCaptureFixture, transport: Literal["streamable-http", "sse"]
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_reference_server(transport) as url:
        config = remote(f"{url}?api_key={SECRETS[0]}&v=2", "http" if transport == "streamable-http" else "sse")
        with trio.fail_after(30):
            async with open_connection(config, options=QUIET) as connection:
                result = await connection.call_tool("echo", {"text": "hi"}, timeout=10)
                assert not result.is_error
    logged = list(everything_logged(caplog))
    assert any("api_key=***" in text for text in logged)  # the URL is shown, its values are not
    assert_no_secret(logged)


async def test_a_failed_remote_dial_names_the_url_without_its_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_reference_server("streamable-http") as url:
        wrong = url.replace("/mcp", "/nowhere").replace("http://", f"http://user:{SECRETS[3]}@")
        config = remote(f"{wrong}?api_key={SECRETS[0]}", "http")
        with trio.fail_after(30), pytest.raises(DialError) as raised:
            async with open_connection(config, options=QUIET):
                pass
    assert_no_secret([str(raised.value), repr(raised.value), *everything_logged(caplog)])


async def test_a_stdio_servers_env_values_never_reach_errors_or_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    entry = fault_server_entry(exit_on_start=4)
    config = ServerConfig(
        name="local",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type="stdio",
        command=sys.executable,
        args=tuple(str(arg) for arg in entry["args"]),  # type: ignore[union-attr]
        env={"TOKEN": SECRETS[2]},
    )
    with trio.fail_after(10), pytest.raises(DialError) as raised:
        async with open_connection(config, options=QUIET):
            pass
    assert "code 4" in str(raised.value)
    assert_no_secret([str(raised.value), repr(config), *everything_logged(caplog)])


def test_the_filter_redacts_message_arguments_and_traceback() -> None:
    try:
        raise RuntimeError(f"Client error '401' for url 'https://h.example/mcp?token={SECRETS[0]}'")
    except RuntimeError:
        record = logging.LogRecord(
            "httpx2", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("GET", f"https://h/x?k={SECRETS[0]}"), None
        )
        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    shown = logging.Formatter().format(record)
    assert "https://h/x?k=***" in shown and "token=***" in shown
    assert_no_secret([shown])


def test_redaction_is_installed_on_every_sdk_logger_once() -> None:
    redacting = install_log_redaction()
    assert install_log_redaction() is redacting
    for name in SDK_LOGGERS:
        assert logging.getLogger(name).filters.count(redacting) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no url here", "no url here"),
        ("GET https://a.example/p?x=1&y=2 done", "GET https://a.example/p?x=***&y=*** done"),
        ("'http://u:pw@h:8/p?k=v#frag'", "'http://u:***@h:8/p?k=***#***'"),
        ("two: sse://a/?t=1 and http://b/c", "two: sse://a/?t=*** and http://b/c"),
    ],
)
def test_redact_text_masks_every_url_in_running_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected
