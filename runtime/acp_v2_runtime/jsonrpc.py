"""Newline-delimited JSON-RPC 2.0 transport, shared by the reference Agent and the conformance runner.

    reader = LineReader(stream)                      # an asyncio.StreamReader
    messages = MessageReader(remember_requests=False, strict_json=True, keep_raw=True)
    while (line := await reader.next_line()) is not None:
        found = [line_too_long(line.size)] if isinstance(line, Oversized) else messages.read_line(line)

This module only frames and writes: it never classifies a message. What a line holds (a request, a notification,
a response, or an `Invalid` with the JSON-RPC code and the id that answer it) is decided by the generated
`acp_v2_schema.reader`, which also fixes the longest line a peer reads (`MAX_LINE_BYTES`, 16 MiB): a longer line
is skipped to its end and reported as an `Oversized` marker, never buffered whole. Here are the framing, the
error response builder, the message of a -32602 answer, and the encoder.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from acp_v2_schema.reader import MAX_LINE_BYTES

__all__ = ["MAX_LINE_BYTES", "LineReader", "Oversized", "encode", "error", "invalid_params_message"]

_CHUNK = 64 * 1024
_MAX_REPORTED = 3  # how many validation errors one -32602 message lists


@dataclass(frozen=True)
class Oversized:
    """Stands for a line longer than the limit, which was read to its end and dropped (`line_too_long` reads it)."""

    size: int


class LineReader:
    """Reads newline-terminated lines from an asyncio stream without ever holding more than the limit."""

    def __init__(self, stream: asyncio.StreamReader, limit: int = MAX_LINE_BYTES) -> None:
        self._stream = stream
        self._limit = limit
        self._buffer = bytearray()
        self._eof = False

    async def next_line(self) -> bytes | Oversized | None:
        """The next line without its newline, an `Oversized` marker, or None at the end of the stream."""
        dropped = 0  # bytes of an oversized line thrown away so far
        scanned = 0  # the buffer holds no newline before this offset, so a long line is searched once
        while True:
            end = self._buffer.find(b"\n", scanned)
            scanned = len(self._buffer)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if dropped or len(line) > self._limit:
                    return Oversized(dropped + len(line))
                return line
            if len(self._buffer) > self._limit:
                dropped += len(self._buffer)  # too long already: forget it and skip to the newline
                self._buffer.clear()
                scanned = 0
            if self._eof:
                if dropped:
                    size = dropped + len(self._buffer)
                    self._buffer.clear()
                    return Oversized(size)
                if self._buffer:
                    line = bytes(self._buffer)  # a last line without a newline still counts
                    self._buffer.clear()
                    return line
                return None
            chunk = await self._stream.read(_CHUNK)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


def invalid_params_message(problems: list[str]) -> str:
    """The message of a -32602 answer: the first few problems, without the values that caused them."""
    shown = "; ".join(problems[:_MAX_REPORTED])
    more = len(problems) - _MAX_REPORTED
    return f"Invalid params: {shown}" + (f" (and {more} more)" if more > 0 else "")


def error(request_id: int | str | None, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC error response (`data` only when given)."""
    body: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line. `ensure_ascii` keeps any string (even a lone surrogate) encodable; a value JSON has
    no number for (NaN, an infinity) raises ValueError instead of being written as `NaN` or `Infinity`."""
    return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii") + b"\n"
