"""The line reader the Agent and the runner share: whatever the chunking, it returns exactly the lines a split
on newlines gives, with every line over the limit replaced by an `Oversized` marker of its length."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_v2_runtime import jsonrpc
from acp_v2_runtime.jsonrpc import LineReader, Oversized, ParseError, parse_line


async def read_all(data: bytes, cuts: list[int], limit: int, chunk: int) -> list[bytes | Oversized]:
    stream = asyncio.StreamReader()
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        stream.feed_data(data[start:cut])
        start = max(start, cut)
    stream.feed_eof()
    reader = LineReader(stream, limit)
    original, jsonrpc._CHUNK = jsonrpc._CHUNK, chunk
    try:
        return [line async for line in _lines(reader)]
    finally:
        jsonrpc._CHUNK = original


async def _lines(reader: LineReader):
    while (line := await reader.next_line()) is not None:
        yield line


@settings(max_examples=300, deadline=None, database=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    final_newline=st.booleans(),
    limit=st.integers(0, 30),
    chunk=st.integers(1, 17),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_lines_come_back_whatever_the_chunking(lines, final_newline, limit, chunk, cuts):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    expected = data.split(b"\n")
    if not data or data.endswith(b"\n"):
        expected.pop()  # the split leaves an empty string after the last newline
    want = [Oversized(len(line)) if len(line) > limit else line for line in expected]
    assert asyncio.run(read_all(data, cuts, limit, chunk)) == want


def test_a_line_over_the_limit_is_never_held_whole():
    """Reading a long line keeps at most the limit plus one chunk in memory."""
    sizes = []

    async def go():
        stream = asyncio.StreamReader()
        reader = LineReader(stream, limit=1000)
        stream.feed_data(b"x" * 200_000 + b"\nok\n")
        stream.feed_eof()
        original = reader._stream.read

        async def watched(n: int) -> bytes:
            sizes.append(len(reader._buffer))
            return await original(n)

        reader._stream.read = watched  # type: ignore[method-assign]
        return [await reader.next_line(), await reader.next_line(), await reader.next_line()]

    assert asyncio.run(go()) == [Oversized(200_000), b"ok", None]
    assert max(sizes) <= 1000 + jsonrpc._CHUNK


def test_parse_line_refuses_what_json_cannot_hold():
    for raw in [b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"\xff", b"1" * 5000, b"[" * 100_000, b"", b"{"]:
        try:
            parse_line(raw)
        except ParseError:
            continue
        raise AssertionError(f"{raw[:20]!r} was accepted")
    assert parse_line(b' {"a": [1, 2.5, "\\ud800"]} ') == {"a": [1, 2.5, "\ud800"]}
