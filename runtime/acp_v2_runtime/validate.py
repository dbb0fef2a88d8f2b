"""Check a recorded ACP v2 session: `python -m acp_v2_runtime.validate [FILE]` (stdin when FILE is omitted or -).

The input is newline-delimited JSON-RPC, one message per line, as a proxy or a transport log records
it. Each line is read by the generated `acp_v2_schema.reader.MessageReader`: requests and notifications are routed
by `method`, responses by the `id` of a request seen on an earlier line, and params, results and error objects are
validated with the generated models. Each problem is printed as soon as it is found, as `line N: method: error`;
the exit status is 1 when there is any, 0 otherwise, and 2 when FILE cannot be read.

A message that is valid only once ACP's lenient-parsing rules have salvaged it (a bad value dropped where the
schema marks `x-deserialize-default-on-error`, a bad item skipped where it marks `x-deserialize-skip-invalid-items`,
a null taken as omitted where it marks `x-deserialize-default-on-null`) is accepted, as ACP's SDKs accept it, and
each salvage is printed as `line N: method: warning: ...`; warnings leave the exit status alone. With --strict,
each salvage is an error instead.

Methods whose names start with `_` are extensions: their params and results are not checked, but their responses
are still matched. A response whose request was not seen is reported, since nothing says what it answers.

Rules that span lines are checked too: a request whose id is already taken by an unanswered request from the same
side (the Client and the Agent number their requests apart, so one id may be pending once on each side), and an
idempotency key echoed in a `session/update` or a `session/list` result (a key sent in an earlier prompt, or a
member named after the key parameter, at any depth, whatever the escaping). A JSON-RPC batch is refused as ACP
refuses it (-32600), and so are ids beyond the range of a request id.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from acp_v2_schema import load_policy
from acp_v2_schema import protocol as M
from acp_v2_schema.models._base import SALVAGED
from acp_v2_schema.protocol import KnownErrorCode
from acp_v2_schema.reader import (
    KEY_PARAMS,
    ErrorResponse,
    Invalid,
    Message,
    MessageReader,
    Notification,
    Request,
    Response,
)


@dataclass(frozen=True)
class Problem:
    """One problem found on one line."""

    line: int
    method: str
    message: str
    warning: bool = False  # a value the lenient rules salvaged: reported, but the message is accepted

    def __str__(self) -> str:
        return f"line {self.line}: {self.method}: {'warning: ' if self.warning else ''}{self.message}"


def validate_lines(lines: Iterable[str | bytes], *, strict: bool = False) -> Iterator[Problem]:
    """Every problem in a stream of newline-delimited JSON-RPC messages, as each line is read.

    Lines may be bytes (a line that is not UTF-8 is then reported) or text; blank lines are skipped. Each value
    salvaged by the lenient rules is a warning, or with `strict` an error.
    """
    reader = MessageReader()
    session = SessionChecks()
    for number, line in enumerate(lines, start=1):
        for message in reader.read_line(line):
            found = findings(number, line, message, session, strict=strict)
            if found:
                yield from found


def findings(
    number: int, line: str | bytes, message: Message, session: SessionChecks, *, strict: bool = False
) -> list[Problem]:
    """The problems of one message read from line `number`: the one place where every finding is made.

    A value the lenient rules salvaged is a warning, or with `strict` an error."""
    spanning = session.check(number, line, message)
    invalid = type(message) is Invalid
    # SALVAGED is empty unless a model that a lenient read made is alive: one check a message, no lookups
    if not invalid and not spanning and not SALVAGED:
        return []  # the common case, made quick: nothing to report
    found = [Problem(number, message.method or "-", text) for text in message.problems] if invalid else []
    found += [Problem(number, method, text) for method, text in spanning]
    if SALVAGED and not invalid:
        # the member the models read: params, result or error (an extension's plain JSON salvages nothing)
        for where in ("params", "result", "error"):
            for salvage in getattr(getattr(message, where, None), "model_salvaged", ()):
                found.append(Problem(number, message.method or "-", f"{where}.{salvage}", warning=not strict))
    return found


# Where a key must never appear: the params of these notifications and the results of these requests.
NO_ECHO_NOTIFICATIONS = frozenset({M.SESSION_UPDATE})
NO_ECHO_RESULTS = frozenset({M.SESSION_LIST})
_NONE: tuple[tuple[str, str], ...] = ()


@cache
def _sides() -> dict[str, str]:
    """The side that sends each request (its direction in the retry table), for requests one side alone sends."""
    one_way = {"client-to-agent", "agent-to-client"}
    methods = load_policy()["methods"]
    return {e["method"]: e["direction"] for e in methods if e["kind"] == "request" and e["direction"] in one_way}


@cache
def _field_name(model: type[Any], name: str) -> str | None:
    """The attribute of a params model that holds the member `name`, or None."""
    for attribute, info in model.model_fields.items():
        if (info.alias or attribute) == name:
            return attribute
    return None


@dataclass
class SessionChecks:
    """The rules that span lines: ids pending twice on one side, and keys echoed where they must never be."""

    pending: dict[tuple[str, int | str], list[int]] = field(default_factory=dict)  # (side, id) -> request lines
    keys: dict[str, int] = field(default_factory=dict)  # key -> the line of the first prompt that sent it
    # What a line must hold, as text and as bytes, if a string of it can be a key or a key parameter's name.
    _needles: tuple[set[str], set[bytes]] = field(default_factory=lambda: (set(), set()))

    def __post_init__(self) -> None:
        for name in KEY_PARAMS.values():
            self._add_needle(name)

    def _add_needle(self, text: str) -> None:
        self._needles[0].add(text)
        self._needles[1].add(text.encode("utf-8", "surrogatepass"))

    def check(self, number: int, line: str | bytes, message: Message) -> Iterable[tuple[str, str]]:
        """(method, problem) for each rule the message breaks; remembers what later lines are checked against."""
        kind = type(message)
        if kind is Request or (
            kind is Invalid and message.code == KnownErrorCode.INVALID_PARAMS and message.id is not None
        ):
            assert message.method is not None
            found = self._request(number, message.method, message.id)
            if kind is Request and message.method in KEY_PARAMS and not message.extension:
                self._remember_key(number, message)  # type: ignore[arg-type]  # a Request here
            return found
        if kind is Response or kind is ErrorResponse or (kind is Invalid and message.code is None):
            if message.method is not None and message.id is not None:
                self._answered(message.method, message.id)
            if kind is Response and message.method in NO_ECHO_RESULTS:
                return self._echoes(message.method, line, "result")  # type: ignore[arg-type]
            return _NONE
        if kind is Notification and message.method in NO_ECHO_NOTIFICATIONS:
            return self._echoes(message.method, line, "params")
        return _NONE

    def _request(self, number: int, method: str, request_id: Any) -> Iterable[tuple[str, str]]:
        side = _sides().get(method)
        if side is None:
            return _NONE  # an extension, or a method either side may send: nothing tells the two numberings apart
        lines = self.pending.get((side, request_id))
        if lines is None:
            self.pending[(side, request_id)] = [number]
            return _NONE
        lines.append(number)
        if len(lines) == 1:
            return _NONE
        shown = json.dumps(request_id)[:80]
        return [
            (
                method,
                f"id {shown} is already used by the unanswered request on line {lines[0]}, sent by the same side "
                "(a response could not tell the two apart)",
            )
        ]

    def _answered(self, method: str, request_id: Any) -> None:
        side = _sides().get(method)
        lines = self.pending.get((side, request_id)) if side is not None else None
        if lines:
            lines.pop(0)
            if not lines:
                del self.pending[(side, request_id)]  # type: ignore[arg-type]  # side is set here

    def _remember_key(self, number: int, message: Request) -> None:
        attribute = _field_name(type(message.params), KEY_PARAMS[message.method])
        key = getattr(message.params, attribute) if attribute is not None else None
        if isinstance(key, str) and key not in self.keys:
            self.keys[key] = number
            self._add_needle(key)

    def _echoes(self, method: str, line: str | bytes, where: str) -> Iterable[tuple[str, str]]:
        """Where the message's `where` member holds a key: a member named after a key parameter, or a string (a
        value or a member name) equal to a key sent before. Values are compared as parsed, at any depth."""
        text = line if isinstance(line, str | bytes) else bytes(line)
        if isinstance(text, str):
            needles: set[Any] = self._needles[0]
            escaped = "\\u" in text or "\\/" in text
        else:
            needles = self._needles[1]
            escaped = b"\\u" in text or b"\\/" in text
        # Without those escapes a string that equals a key (or the parameter's name) is written as it is, so a line
        # holding none of them verbatim has none: the common case costs a few substring searches.
        if not escaped:
            for needle in needles:
                if needle in text:
                    break
            else:
                return _NONE
        try:
            value = json.loads(text).get(where)
        except (ValueError, RecursionError, AttributeError):
            return _NONE  # the reader accepted the line, so this does not happen; nothing to add if it does
        return [(method, text) for text in self._walk(value, where)]

    def _walk(self, value: Any, where: str) -> Iterator[str]:
        names = self._needles[0] - self.keys.keys()
        for path, is_name, string in _strings(value, where):
            if is_name and string in names:
                yield f"{path}: a member named {string}, so an idempotency key is echoed where keys never appear"
            elif string in self.keys:
                yield (
                    f"{path}: echoes the idempotency key of the prompt on line {self.keys[string]}"
                    " (keys never appear in session/update or session/list)"
                )


def _strings(value: Any, path: str) -> Iterator[tuple[str, bool, str]]:
    """(JSON path, is a member name, text) for every string in `value`, member names included, at any depth."""
    stack = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            yield here, False, item
        elif isinstance(item, dict):
            for name, inner in item.items():
                yield f"{here}.{name}", True, name
                stack.append((f"{here}.{name}", inner))
        elif isinstance(item, list):
            stack.extend((f"{here}[{index}]", inner) for index, inner in enumerate(item))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.validate",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", nargs="?", default="-", help="newline-delimited JSON-RPC (default: stdin)")
    parser.add_argument(
        "--strict", action="store_true", help="report each value the lenient rules salvaged as an error, not a warning"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns its exit status."""
    args = _parser().parse_args(argv)
    # A lone surrogate in a method name must print, not crash: escape what the output cannot encode.
    stdout = sys.stdout
    if hasattr(stdout, "reconfigure"):
        stdout.reconfigure(errors="backslashreplace")
    found = warned = 0
    seen = [0]

    def counted(stream: Iterable[bytes]) -> Iterator[bytes]:
        for line in stream:
            seen[0] += 1
            yield line

    try:
        # Binary lines, split on LF only: a CR is JSON whitespace, not the end of a message.
        with sys.stdin.buffer if args.file == "-" else Path(args.file).open("rb") as stream:
            for problem in validate_lines(counted(stream), strict=args.strict):
                found += not problem.warning
                warned += problem.warning
                print(problem, flush=True)
    except OSError as exc:
        print(f"cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    summary = f"{seen[0]} line(s), {found} problem(s)" + (f", {warned} warning(s)" if warned else "")
    print(summary, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
