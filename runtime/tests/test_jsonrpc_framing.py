"""The line reader the Agent and the runner share: whatever the chunking, it returns exactly the lines a split
on newlines gives, with every line over the limit replaced by an `Oversized` marker of its length. What a line
holds is the generated reader's to say (its strict reading is tested here too, as the Agent and runner use it)."""

from __future__ import annotations

import asyncio

from acp_v2_schema import reader as generated
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import Invalid, MessageReader
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_v2_runtime import jsonrpc
from acp_v2_runtime.jsonrpc import LineReader, Oversized


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


def test_the_limit_is_the_generated_readers():
    """The framing reads the reader's limit, and a line over it reads as the reader says (-32600, id null)."""
    assert jsonrpc.MAX_LINE_BYTES == generated.MAX_LINE_BYTES == 16 * 1024 * 1024
    assert LineReader.__init__.__defaults__ == (generated.MAX_LINE_BYTES,)
    refused = generated.line_too_long(generated.MAX_LINE_BYTES + 1)
    assert refused.code == Code.INVALID_REQUEST and refused.answer_id is None and refused.answered
    assert f"a line of {generated.MAX_LINE_BYTES + 1} bytes" in refused.problems[0]


def test_the_strict_reading_refuses_what_json_cannot_hold():
    reader = MessageReader(remember_requests=False, strict_json=True, keep_raw=True)
    for raw in [
        b"NaN",
        b"[Infinity]",
        b'{"a": -Infinity}',
        b"\xff",
        b"1" * 5000,
        b"[" * 100_000,
        b"{",
        b"1e999",
        b"\x0c",
    ]:
        (found,) = reader.read_line(raw)
        assert isinstance(found, Invalid) and found.code == Code.PARSE_ERROR and found.answer_id is None, raw[:20]
    assert reader.read_line(b"") == reader.read_line(b" \t\r ") == []
    (kept,) = reader.read_line(b' {"a": [1, 2.5, "\\ud800"]} ')
    assert kept.raw == {"a": [1, 2.5, "\ud800"]}
