"""Cutting a stdio server's stdout into protocol lines, whatever the chunks (R-CFG-9, R-TOOL-12).

The framer is pure: bytes in, lines out. The pipe hands over chunks that end
anywhere, so every property here holds for every way of cutting the stream.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from wave_actors._transport.framing import HEAD_BYTES, TAIL_BYTES, LineFramer, LongLine


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes | LongLine]:
    return [line for chunk in chunks for line in framer.feed(chunk)]


def cut(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` in chunks of the given sizes (cycled), none empty."""
    chunks: list[bytes] = []
    start = 0
    while start < len(data):
        size = sizes[len(chunks) % len(sizes)]
        chunks.append(data[start : start + size])
        start += size
    return chunks


def test_a_chunk_of_whole_lines_gives_them_in_order_without_newlines() -> None:
    framer = LineFramer(1024)
    assert framer.feed(b'{"a": 1}\n{"b": 2}\n') == [b'{"a": 1}', b'{"b": 2}']


def test_a_line_split_across_chunks_comes_out_once_it_ends() -> None:
    framer = LineFramer(1024)
    assert framer.feed(b'{"id"') == []
    assert framer.feed(b": 7") == []
    assert framer.feed(b'}\n{"id": 8}\n{"i') == [b'{"id": 7}', b'{"id": 8}']
    assert framer.feed(b'd": 9}\n') == [b'{"id": 9}']


def test_blank_lines_are_no_message() -> None:
    framer = LineFramer(1024)
    assert framer.feed(b"\n  \n\t\r\n{}\n\n") == [b"{}"]
    assert framer.feed(b"  ") == []
    assert framer.feed(b"\n") == []  # a blank line that ended in the next chunk


def test_a_carriage_return_stays_with_its_line() -> None:
    # JSON ignores trailing white space; the framer does not guess at line endings.
    assert LineFramer(1024).feed(b"{}\r\n") == [b"{}\r"]


def test_a_line_as_long_as_the_bound_passes() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"1234\n12") == [b"1234"]
    assert framer.feed(b"34\n") == [b"1234"]


# R-TOOL-12: a line over the bound is skipped, never held whole; its ends are kept, and the lines after it go on.


def test_a_line_longer_than_the_bound_comes_back_as_its_ends_even_when_it_arrives_in_one_chunk() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"{}\n12345\n{}\n") == [b"{}", LongLine(b"12345", b"12345", 5), b"{}"]


def test_a_line_finished_in_a_later_chunk_is_measured_whole() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"123") == []
    assert framer.feed(b"45\n{}\n") == [LongLine(b"12345", b"12345", 5), b"{}"]


def test_an_unfinished_line_past_the_bound_is_skipped_as_it_arrives_and_the_next_lines_are_framed() -> None:
    framer = LineFramer(10)
    assert framer.feed(b"0123456789") == []
    assert framer.held == 10
    assert framer.feed(b"abc") == []
    line = b"0123456789abc" + b"x" * 3 * (HEAD_BYTES + TAIL_BYTES) + b"end"
    for start in range(13, len(line), 1000):
        assert framer.feed(line[start : start + 1000]) == []
        assert framer.held <= HEAD_BYTES + TAIL_BYTES
    assert framer.feed(b'\n{"late":1}\n') == [
        LongLine(line[:HEAD_BYTES], line[-TAIL_BYTES:], len(line)),
        b'{"late":1}',
    ]
    assert framer.held == 0


def test_the_lines_before_a_long_one_are_given_at_once() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"{}\n[]\n0123456789") == [b"{}", b"[]"]
    assert framer.feed(b"\n") == [LongLine(b"0123456789", b"0123456789", 10)]


@given(
    lines=st.lists(st.binary(min_size=1, max_size=40).filter(lambda line: b"\n" not in line and not line.isspace())),
    sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=5),
)
def test_every_cut_of_a_stream_gives_the_same_lines(lines: list[bytes], sizes: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    framer = LineFramer(64)
    assert feed_all(framer, cut(data, sizes)) == lines


@given(
    lines=st.lists(st.binary(min_size=1, max_size=200).filter(lambda line: b"\n" not in line and not line.isspace())),
    sizes=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=5),
    limit=st.integers(min_value=1, max_value=120),
)
def test_every_cut_gives_the_short_lines_whole_and_the_long_ones_by_their_ends_holding_no_more_than_the_bound(
    lines: list[bytes], sizes: list[int], limit: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    framer = LineFramer(limit)
    items: list[bytes | LongLine] = []
    for chunk in cut(data, sizes):
        items += framer.feed(chunk)
        assert framer.held <= max(limit, HEAD_BYTES + TAIL_BYTES)
    expected = [
        line if len(line) <= limit else LongLine(line[:HEAD_BYTES], line[-TAIL_BYTES:], len(line)) for line in lines
    ]
    assert items == expected
