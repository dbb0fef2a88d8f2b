"""Check a recorded ACP v2 session: `python -m acp_v2_runtime.validate [FILE]` (stdin when FILE is omitted or -).

The input is newline-delimited JSON-RPC, one message per line, as a proxy or a transport log records it. Each
request and notification is matched to its method by `method`; each response by the `id` of a request seen on an
earlier line. Params, results and error objects are validated with the generated models. Every problem is printed
as `line N: method: error`; the exit status is 1 when there is any, 0 otherwise (2 when FILE cannot be read).

Methods whose names start with `_` are extensions and are not checked. A response whose request was not seen is
reported, since nothing says what its result should be.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from acp_v2_schema import load_policy, models
from pydantic import TypeAdapter, ValidationError

_NO_PARAMS: dict[str, Any] = {}


@dataclass(frozen=True)
class Problem:
    """One problem found on one line."""

    line: int
    method: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.method}: {self.message}"


@cache
def _entries() -> dict[tuple[str, str], dict[str, Any]]:
    """The retry table's entries by (method, kind); they name each entry's params and result types."""
    return {(e["method"], e["kind"]): e for e in load_policy()["methods"]}


@cache
def _adapter(type_name: str) -> TypeAdapter[Any]:
    return TypeAdapter(getattr(models, type_name))


def _check(type_name: str | None, value: Any, where: str) -> list[str]:
    """Problems with `value` as an instance of the named generated type (none when no type is named)."""
    if type_name is None:
        return []
    try:
        # Strict JSON mode, as the wire is JSON: "2" is not a protocol version, though lax mode would accept it.
        _adapter(type_name).validate_json(json.dumps(value), strict=True)
    except ValidationError as exc:
        out = []
        for error in exc.errors(include_url=False):
            path = ".".join(str(part) for part in (where, *error["loc"]))
            out.append(f"{path}: {error['msg']}")
        return out
    return []


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


class Validator:
    """Validates messages one by one, remembering the requests it has seen so that responses can be matched."""

    def __init__(self) -> None:
        # request id -> methods of the requests with that id that are still unanswered (both sides may reuse ids)
        self.pending: dict[str, list[str]] = {}

    def message(self, line: int, message: Any) -> Iterator[Problem]:
        """Every problem with one parsed message."""
        if not isinstance(message, dict):
            yield Problem(line, "-", f"a JSON-RPC message is an object, not {_json_type(message)}")
            return
        if message.get("jsonrpc") != "2.0":
            yield Problem(line, str(message.get("method", "-")), 'jsonrpc must be "2.0"')
        if "method" in message:
            yield from self._call(line, message)
        elif "result" in message or "error" in message:
            yield from self._response(line, message)
        else:
            yield Problem(line, "-", "neither a request, a notification nor a response")

    def _call(self, line: int, message: dict[str, Any]) -> Iterator[Problem]:
        method = message["method"]
        if not isinstance(method, str):
            yield Problem(line, "-", f"method must be a string, not {_json_type(method)}")
            return
        if method.startswith("_"):
            return  # an extension: its shape is private to the peers
        kind = "request" if "id" in message else "notification"
        entry = _entries().get((method, kind))
        if entry is None:
            other = "notification" if kind == "request" else "request"
            known = (method, other) in _entries()
            yield Problem(line, method, f"ACP v2 has no {kind} of this name" + (f" (it is a {other})" if known else ""))
            return
        if kind == "request":
            request_id = message["id"]
            if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
                yield Problem(line, method, f"id must be a string or an integer, not {_json_type(request_id)}")
            else:
                self.pending.setdefault(json.dumps(request_id), []).append(method)
        params = message.get("params")
        for text in _check(entry["params"], _NO_PARAMS if params is None else params, "params"):
            yield Problem(line, method, text)

    def _response(self, line: int, message: dict[str, Any]) -> Iterator[Problem]:
        key = json.dumps(message.get("id"))
        candidates = self.pending.get(key, [])
        if "error" in message:
            method = candidates.pop(0) if candidates else "-"
            for text in _check("Error", message["error"], "error"):
                yield Problem(line, method, text)
            return
        if not candidates:
            yield Problem(line, "-", f"a response to id {key}, but no unanswered request with that id came before")
            return
        # Both sides number their own requests, so one id may be pending twice: the first method it fits wins.
        reports = []
        for method in candidates:
            problems = _check(_entries()[(method, "request")]["result"], message["result"], "result")
            if not problems:
                candidates.remove(method)
                return
            reports.append((method, problems))
        method, problems = reports[0]
        candidates.remove(method)
        for text in problems:
            yield Problem(line, method, text)


def validate_lines(lines: Iterable[str]) -> Iterator[Problem]:
    """Every problem in a stream of newline-delimited JSON-RPC messages (blank lines are skipped)."""
    validator = Validator()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            message = json.loads(text)
        except ValueError as exc:
            yield Problem(number, "-", f"not valid JSON ({exc})")
            continue
        batch = message if isinstance(message, list) else [message]
        for item in batch:
            yield from validator.message(number, item)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print(__doc__.strip().splitlines()[0])
        return 0 if args and args[0] in ("-h", "--help") else 2
    try:
        if not args or args[0] == "-":
            problems = list(validate_lines(sys.stdin))
        else:
            with Path(args[0]).open(encoding="utf-8") as stream:
                problems = list(validate_lines(stream))
    except OSError as exc:
        print(f"cannot read {args[0]}: {exc.strerror}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
