"""Lines on stdout that are not JSON-RPC are logged sparingly: a first line, then a count (R-CFG-9, R-HOST-4).

A flood of random bytes is tens of thousands of lines; the log gets a few
records and the connection carries on.
"""

from __future__ import annotations

import logging
import re

import pytest
import trio
from presets import FAST_TRANSPORT

from wave_actors import ServerConfig, Source
from wave_actors._transport import open_connection
from wave_actors._transport.noise import NoiseLog
from wave_actors.testing import fault_server_entry

NOISE_LOGGER = "wave_actors._transport.noise"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == NOISE_LOGGER]


def test_the_first_line_is_shown_and_the_rest_of_the_window_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    noise = NoiseLog("s", window=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, NOISE_LOGGER):
        for index in range(1_000):
            clock.now = index * 0.005
            noise.line(b"garbage %d" % index)
        assert len(messages(caplog)) == 1 and "garbage 0" in messages(caplog)[0]
        clock.now = 10.5
        noise.tick()
    logged = messages(caplog)
    assert len(logged) == 2
    assert "999 more lines that are not JSON-RPC within 10 s" in logged[1] and "garbage 999" in logged[1]
    assert noise.total == 1_000


def test_a_count_is_logged_when_the_stream_ends_and_a_new_window_shows_a_line_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    noise = NoiseLog("s", window=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, NOISE_LOGGER):
        noise.line(b"a")
        noise.line(b"b")
        noise.tick()  # the window is not over: nothing yet
        assert len(messages(caplog)) == 1
        clock.now = 30.0
        noise.line(b"c")  # a new window: the count of the old one, then this line
        noise.flush()
        noise.flush()
    assert [re.sub(r":.*", "", text) for text in messages(caplog)] == [
        "server 's' wrote a line that is not JSON-RPC to stdout (logs belong on stderr)",
        "server 's' wrote 1 more lines that are not JSON-RPC within 10 s of the one shown; the last",
        "server 's' wrote a line that is not JSON-RPC to stdout (logs belong on stderr)",
    ]


async def test_a_megabyte_of_random_bytes_on_stdout_is_a_few_records_and_the_connection_stays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # R-HOST-4: the flood costs log lines, bounded, never the connection.
    entry = fault_server_entry(random_stdout=1 << 20)
    config = ServerConfig(
        name="noisy",
        source=Source.CONSTRUCTOR,
        origin="constructor",
        type="stdio",
        command=str(entry["command"]),
        args=tuple(str(arg) for arg in entry["args"]),  # type: ignore[union-attr]
    )
    with caplog.at_level(logging.DEBUG), trio.fail_after(20):
        async with open_connection(config, options=FAST_TRANSPORT) as connection:
            result = await connection.call_tool("echo", {"text": "after the flood"}, timeout=5)
            assert result.content[0].text == "after the flood"  # type: ignore[union-attr]
    flood = [record for record in caplog.records if "not JSON-RPC" in record.getMessage()]
    assert 1 <= len(flood) <= 3
    counted = sum(int(match.group(1)) for r in flood if (match := re.search(r"wrote (\d+) more lines", r.getMessage())))
    assert counted > 1_000  # about 4 000 lines: one newline in 256 random bytes
    # Nothing else logs a record per line either (the SDK is not handed the noise).
    assert len(caplog.records) < 50
