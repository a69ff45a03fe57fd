"""The server-sent event parser: WHATWG framing, any chunking, and a bound on each event (R-TOOL-9)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from wave_actors._transport.eventstream import HEAD_BYTES, Event, EventParser, Oversized


def parse(stream: bytes, *, limit: int | None = None, cuts: list[int] | None = None) -> list[Event | Oversized]:
    parser = EventParser(limit)
    items: list[Event | Oversized] = []
    start = 0
    for cut in sorted(cuts or []):
        items += parser.feed(stream[start:cut])
        start = max(start, cut)
    items += parser.feed(stream[start:])
    return items


def test_events_are_framed_by_blank_lines_and_data_lines_are_joined() -> None:
    stream = b"event: endpoint\ndata: /messages?session=1\n\ndata: a\ndata: b\nid: 7\n\n"
    assert parse(stream) == [Event("endpoint", "/messages?session=1"), Event("message", "a\nb", "7")]


def test_every_line_ending_is_accepted_and_comments_are_skipped() -> None:
    stream = b": keep-alive\r\ndata: one\r\rdata: two\r\n\r\n: ping\n\ndata:three\n\n"
    assert parse(stream) == [Event(data="one"), Event(data="two"), Event(data="three")]


def test_retry_and_the_last_id_are_reported() -> None:
    assert parse(b"retry: 500\nid: x\ndata: 1\n\ndata: 2\n\n") == [
        Event(data="1", id="x", retry=500),
        Event(data="2", id="x"),
    ]


def test_an_event_the_stream_did_not_finish_is_not_reported() -> None:
    assert parse(b"data: whole\n\ndata: cut off") == [Event(data="whole")]


def test_an_oversized_event_is_dropped_with_its_head_and_the_stream_goes_on() -> None:
    # R-TOOL-9: the limit costs the one answer that passed it, never the connection.
    big = b'{"jsonrpc":"2.0","id":12,"result":{"content":"' + b"x" * 10_000 + b'"}}'
    stream = b"data: " + big + b"\n\ndata: after\n\n"
    [oversized, after] = parse(stream, limit=1000, cuts=[100, 3000, 5000])
    assert isinstance(oversized, Oversized)
    assert big.startswith(oversized.head) and b'"id":12' in oversized.head and len(oversized.head) <= HEAD_BYTES
    assert oversized.limit == 1000
    assert oversized.size == len(b"data: " + big)
    assert after == Event(data="after")


def test_the_limit_counts_the_lines_of_one_event() -> None:
    fits = b"data: " + b"x" * 94 + b"\n\n"  # a 100-byte line
    assert parse(fits, limit=100) == [Event(data="x" * 94)]
    assert isinstance(parse(fits.replace(b"\n\n", b"x\n\n"), limit=100)[0], Oversized)
    two_lines = b"data: " + b"x" * 44 + b"\ndata: " + b"y" * 45 + b"\n\n"  # 50 + 51 bytes
    assert isinstance(parse(two_lines, limit=100)[0], Oversized)


def test_a_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        EventParser(0)


# Properties.

values = st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=40)
events = st.lists(st.tuples(st.sampled_from(["message", "endpoint"]), st.lists(values, min_size=1, max_size=3)))


def encode(items: list[tuple[str, list[str]]], line_end: bytes) -> bytes:
    out = b""
    for kind, lines in items:
        out += b"event: " + kind.encode() + line_end
        out += b"".join(b"data: " + line.encode() + line_end for line in lines)
        out += line_end
    return out


@given(events, st.sampled_from([b"\n", b"\r\n", b"\r"]), st.lists(st.integers(0, 2000), max_size=20))
def test_chunking_never_changes_what_is_parsed(
    items: list[tuple[str, list[str]]], line_end: bytes, cuts: list[int]
) -> None:
    stream = encode(items, line_end)
    expected = [Event(kind, "\n".join(lines)) for kind, lines in items]
    assert parse(stream) == expected
    assert parse(stream, cuts=cuts) == expected


@given(events, st.integers(1, 200), st.lists(st.integers(0, 2000), max_size=20))
def test_events_under_the_limit_arrive_whole_and_the_others_are_reported_oversized(
    items: list[tuple[str, list[str]]], limit: int, cuts: list[int]
) -> None:
    stream = encode(items, b"\n")
    parsed = parse(stream, limit=limit, cuts=cuts)
    assert len(parsed) == len(items)
    for (kind, lines), item in zip(items, parsed, strict=True):
        size = len(b"event: " + kind.encode()) + sum(len(b"data: " + line.encode()) for line in lines)
        if size <= limit:
            assert item == Event(kind, "\n".join(lines))
        else:
            assert isinstance(item, Oversized)
            assert "\n".join(lines).encode().startswith(item.head)
