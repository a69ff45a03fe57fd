"""Cutting a stdio server's stdout into protocol lines, whatever the chunks (R-CFG-9).

The framer is pure: bytes in, lines out. The pipe hands over chunks that end
anywhere, so every property here holds for every way of cutting the stream.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from wave_actors._transport.framing import LineFramer


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes]:
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


def test_an_unfinished_line_held_past_the_bound_is_dropped_and_nothing_follows() -> None:
    framer = LineFramer(10)
    assert framer.feed(b"0123456789") == []
    assert not framer.overflowed
    assert framer.feed(b"abc") == []
    assert framer.overflowed
    assert framer.feed(b'\n{"late": true}\n') == []


def test_a_line_as_long_as_the_bound_passes() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"1234\n12") == [b"1234"]
    assert framer.feed(b"34\n") == [b"1234"]
    assert not framer.overflowed


def test_a_line_longer_than_the_bound_stops_the_framer_even_when_it_arrives_in_one_chunk() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"{}\n12345\n{}\n") == [b"{}"]
    assert framer.overflowed
    assert framer.feed(b"{}\n") == []


def test_a_line_finished_in_a_later_chunk_is_measured_whole() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"123") == []
    assert framer.feed(b"45\n{}\n") == []
    assert framer.overflowed


def test_the_lines_before_an_overflowing_tail_are_still_given() -> None:
    framer = LineFramer(4)
    assert framer.feed(b"{}\n[]\n0123456789") == [b"{}", b"[]"]
    assert framer.overflowed


@given(
    lines=st.lists(st.binary(min_size=1, max_size=40).filter(lambda line: b"\n" not in line and not line.isspace())),
    sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=5),
)
def test_every_cut_of_a_stream_gives_the_same_lines(lines: list[bytes], sizes: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    framer = LineFramer(64)
    assert feed_all(framer, cut(data, sizes)) == lines
    assert not framer.overflowed
