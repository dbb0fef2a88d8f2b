"""Newline-delimited JSON-RPC 2.0 framing, shared by the reference Agent and the conformance runner.

    reader = LineReader(stream)                      # an asyncio.StreamReader
    while (raw := await reader.next_line()) is not None:
        message = parse_line(raw)                    # ParseError: answer -32700
        incoming = classify(message)                 # InvalidMessage: answer -32600
        problems = params_problems(method, kind, params)   # non-empty: answer -32602

What a valid request id is comes from the generated `RequestId` type, and which type a method's params must
match comes from the generated retry table (each (method, kind) entry names its params and result types); the
codes are `acp_v2_schema.protocol.KnownErrorCode`. Nothing here restates a rule of the spec.

Limits that JSON-RPC leaves to implementations: a line may hold at most `MAX_LINE_BYTES` bytes (a longer line is
skipped to its end and reported, never buffered whole), and text JSON cannot represent (invalid UTF-8, `NaN`,
`Infinity`, a number too large for a 64-bit float such as `1e999`, integers Python refuses to read, nesting deeper
than the interpreter can parse) is a parse error. A lone surrogate escape is text, as JSON allows.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from acp_v2_schema import load_policy
from acp_v2_schema.reader import adapter, check
from pydantic import ValidationError

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line either side reads (16 MiB, newline excluded); longer lines get an error, not a crash."""

JSON_WHITESPACE = b" \t\r\n"
"""The bytes JSON counts as whitespace; a line of nothing else carries no message and gets no answer."""

_CHUNK = 64 * 1024
_MAX_REPORTED = 3  # how many validation errors one -32602 message lists


class ParseError(ValueError):
    """A line that is not one JSON value (answered with -32700 and a null id)."""


class InvalidMessage(ValueError):
    """A JSON value that is not a valid JSON-RPC message (answered with -32600).

    `request_id` is the message's id when that id itself is valid (so the answer can name it), else None.
    """

    def __init__(self, reason: str, request_id: int | str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.request_id = request_id


@dataclass(frozen=True)
class Oversized:
    """Stands for a line longer than the limit, which was read to its end and dropped."""

    size: int

    def __str__(self) -> str:
        return f"a line of {self.size} bytes, longer than the limit of {MAX_LINE_BYTES}"


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


def _no_constant(name: str) -> Any:
    raise ParseError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent, as a float; one beyond a float's range is a parse error, since
    JSON has no infinity to stand for it (and it could never be written back as JSON)."""
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


def parse_line(raw: bytes) -> Any:
    """The JSON value on one line; raises ParseError for anything that is not UTF-8 JSON text."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"the line is not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ParseError("the value is nested too deeply") from None
    except ParseError:
        raise
    except ValueError as exc:  # json.JSONDecodeError, and integers longer than Python reads
        raise ParseError(str(exc)) from None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names = {dict: "object", list: "array", str: "string", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def valid_id(value: Any) -> int | str | None:
    """`value` when it is a valid JSON-RPC request id by the generated `RequestId` type, else None."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None  # cheap rejection of the common cases; the generated type decides the rest
    try:
        return adapter("RequestId").validate_python(value, strict=True)
    except ValidationError:
        return None


@dataclass(frozen=True)
class Call:
    """A request (`id` set) or a notification (`id` None). `params` is None when the member is omitted."""

    method: str
    params: dict[str, Any] | list[Any] | None
    id: int | str | None

    @property
    def kind(self) -> Literal["request", "notification"]:
        """The retry table's name for this kind of message."""
        return "notification" if self.id is None else "request"


@dataclass(frozen=True)
class Response:
    """A response: `error` is the error object (already checked) or None, and then `result` holds the result."""

    id: int | str | None
    result: Any
    error: dict[str, Any] | None


def is_response_shaped(message: Any) -> bool:
    """True for an object with no `method` and a `result` or `error`: a reply, which is never answered."""
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


def classify(message: Any) -> Call | Response:
    """What a parsed message is, or InvalidMessage saying why it is neither a valid call nor a valid response."""
    if isinstance(message, list):
        raise InvalidMessage("a batch (JSON array) is not an ACP message; send one object per line")
    if not isinstance(message, dict):
        raise InvalidMessage(f"a message is a JSON object, not {json_type(message)}")
    has_id = "id" in message
    request_id = valid_id(message["id"]) if has_id else None
    if message.get("jsonrpc") != "2.0":
        raise InvalidMessage('"jsonrpc" must be exactly "2.0"', request_id)
    if "method" not in message:
        return _response(message, request_id)
    method = message["method"]
    if not isinstance(method, str):
        raise InvalidMessage(f'"method" must be a string, not {json_type(method)}', request_id)
    if has_id and request_id is None:
        raise InvalidMessage(_id_problem(message["id"]))
    params = message.get("params")
    if "params" in message and not isinstance(params, dict | list):
        raise InvalidMessage(f'"params" must be an object or an array, not {json_type(params)}', request_id)
    return Call(method, params, request_id)


def _id_problem(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            adapter("RequestId").validate_python(value, strict=True)
        except ValidationError as exc:  # the bound it breaks, in pydantic's words
            bounds = [
                e["msg"].lower() for e in exc.errors(include_url=False) if e["type"].endswith(("_equal", "_than"))
            ]
            return '"id" is an integer outside the range of a request id' + (f" ({bounds[0]})" if bounds else "")
    return f'"id" must be a string or an integer, not {json_type(value)}'


def _response(message: dict[str, Any], request_id: int | str | None) -> Response:
    if ("result" in message) == ("error" in message):
        raise InvalidMessage('a response has exactly one of "result" and "error" (and a request has "method")')
    if "id" not in message or (message["id"] is not None and request_id is None):
        raise InvalidMessage('a response has an "id" that is a string, an integer, or null')
    if "error" in message:
        problems = _problems("Error", message["error"], "error")
        if problems:
            raise InvalidMessage("; ".join(problems), request_id)
        return Response(request_id, None, message["error"])
    return Response(request_id, message["result"], None)


@cache
def _entries() -> dict[tuple[str, str], dict[str, Any]]:
    """The retry table's entries by (method, kind); they name each entry's params and result types."""
    return {(e["method"], e["kind"]): e for e in load_policy()["methods"]}


def type_name(method: str, kind: str, part: Literal["params", "result"]) -> str | None:
    """The generated type the spec names for a method's params or result, or None when it names none."""
    entry = _entries().get((method, kind))
    return entry[part] if entry is not None else None


def key_param(method: str) -> str | None:
    """The name of a request's idempotency-key parameter (keyed methods only), from the retry table."""
    entry = _entries().get((method, "request"))
    return entry["keyParam"] if entry is not None else None


def _problems(name: str, value: Any, where: str) -> list[str]:
    """Problems with `value` as an instance of the generated type `name`; never repeats the value itself.

    The check is the generated reader's: strict, as the wire is JSON, with the error paths readers show.
    """
    try:
        return list(check(name, value, where)[1])
    except RecursionError:
        return [f"{where}: nests too deeply"]


def params_problems(method: str, kind: str, params: Any) -> list[str]:
    """Problems with a call's params by the generated type its method names (omitted params count as `{}`)."""
    name = type_name(method, kind, "params")
    if name is None:
        return []
    return _problems(name, {} if params is None else params, "params")


def result_problems(method: str, result: Any) -> list[str]:
    """Problems with a request's result by the generated result type of its method."""
    name = type_name(method, "request", "result")
    return [] if name is None else _problems(name, result, "result")


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
