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
idempotency key echoed in a `session/update` or a `session/list` result (a string equal to a key the Client sent in
an earlier prompt, a value or a member name, at any depth, whatever the escaping; a member that merely has the key
parameter's name, inside an opaque value such as a tool's `rawInput`, is no echo). A JSON-RPC batch is refused
(-32600) as the ACP TypeScript SDK 2.4.0 refuses it, though ACP's v2 transports page says ACP follows JSON-RPC 2.0
on batches (the difference and its reason are in spec/upstream-differences.yaml); so are ids beyond the range of a
request id.

What it remembers across lines is bounded: the unanswered requests and the keys sent, each up to `--window`
(default {window:,}). Past it the oldest are forgotten, which is reported once as a warning; a response to a
forgotten request is then a warning too (its request cannot be told from one never sent).

Each line costs time linear in its length, keyed or not: keys are looked up among the strings of an update, never
searched for one by one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
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
    UNMATCHED,
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


WINDOW = 10_000
"""How many unanswered requests, and how many keys, the validator remembers by default (`--window`)."""


def validate_lines(lines: Iterable[str | bytes], *, strict: bool = False, window: int = WINDOW) -> Iterator[Problem]:
    """Every problem in a stream of newline-delimited JSON-RPC messages, as each line is read.

    Lines may be bytes (a line that is not UTF-8 is then reported) or text; blank lines are skipped. Each value
    salvaged by the lenient rules is a warning, or with `strict` an error. At most `window` unanswered requests
    and `window` keys are remembered (the oldest are forgotten past it, reported once).
    """
    if window < 1:
        raise ValueError("the window must hold at least one request")
    reader = MessageReader(window=window)
    session = SessionChecks(window=window)
    for number, line in enumerate(lines, start=1):
        for message in reader.read_line(line):
            found = findings(number, line, message, session, strict=strict)
            if reader.forgotten and not session.forgot_requests:
                session.forgot_requests = True  # the reader forgets the same requests as the session checks
                session.notes.append(session.window_note(number, "unanswered requests"))
            if session.notes:
                found = [*found, *session.notes]
                session.notes.clear()
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
    if invalid and session.forgot_requests and message.code is None and message.id is not None:
        # an answer to no request remembered: after some were forgotten, it may answer one of those
        found = [Problem(p.line, p.method, p.message, warning=UNMATCHED in p.message) for p in found]
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
    """The rules that span lines: ids pending twice on one side, and keys echoed where they must never be.

    At most `window` unanswered requests and `window` keys are remembered; past it the oldest are forgotten."""

    window: int = WINDOW
    pending: dict[tuple[str, int | str], list[int]] = field(default_factory=dict)  # (side, id) -> request lines
    keys: dict[str, int] = field(default_factory=dict)  # key -> the line of the first prompt that sent it
    forgot_requests: bool = False  # whether some unanswered request was forgotten (reported once)
    forgot_keys: bool = False
    notes: list[Problem] = field(default_factory=list)  # warnings to report after the line's own problems
    # the order in which requests and keys were first remembered, oldest first (an answered request stays here
    # until it reaches the front or the queue is compacted)
    _request_order: deque[tuple[str, int | str]] = field(default_factory=deque)
    _key_order: deque[str] = field(default_factory=deque)

    def window_note(self, number: int, what: str) -> Problem:
        """The one warning that the window overflowed, at line `number`."""
        return Problem(
            number,
            "-",
            f"more than {self.window:,} {what}: the oldest are forgotten from here on (--window)",
            warning=True,
        )

    def check(self, number: int, line: str | bytes, message: Message) -> Iterable[tuple[str, str]]:
        """(method, problem) for each rule the message breaks; remembers what later lines are checked against."""
        kind = type(message)
        if kind is Request or (
            kind is Invalid and message.code == KnownErrorCode.INVALID_PARAMS and message.id is not None
        ):
            assert message.method is not None
            found = self._request(number, message.method, message.id)
            if kind is Request and message.method in KEY_PARAMS and not message.extension:
                forgot = self.forgot_keys
                self._remember_key(number, message)  # type: ignore[arg-type]  # a Request here
                if self.forgot_keys and not forgot:
                    self.notes.append(self.window_note(number, "keys sent"))
            return found
        if kind is Response or kind is ErrorResponse or (kind is Invalid and message.code is None):
            if message.method is not None and message.id is not None:
                self._answered(message.method, message.id)
            if kind is Response and message.method in NO_ECHO_RESULTS and self.keys:
                return self._echoes(message.method, line, "result")  # type: ignore[arg-type]
            return _NONE
        if kind is Notification and message.method in NO_ECHO_NOTIFICATIONS and self.keys:
            return self._echoes(message.method, line, "params")
        return _NONE

    def _request(self, number: int, method: str, request_id: Any) -> Iterable[tuple[str, str]]:
        side = _sides().get(method)
        if side is None:
            return _NONE  # an extension, or a method either side may send: nothing tells the two numberings apart
        lines = self.pending.get((side, request_id))
        if lines is None:
            self.pending[(side, request_id)] = [number]
            self._request_order.append((side, request_id))
            if len(self.pending) > self.window:
                self._forget_request()  # reported once, with the reader's forgetting of the same request
            elif len(self._request_order) > 2 * self.window:
                # mostly answered requests: keep the order of those still pending (dicts keep insertion order)
                self._request_order = deque(self.pending)
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

    def _forget_request(self) -> None:
        """Forget the oldest unanswered request (the one remembered first that is still pending)."""
        order = self._request_order
        while order:
            oldest = order.popleft()
            if oldest in self.pending:
                del self.pending[oldest]
                return

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
            self._key_order.append(key)
            if len(self.keys) > self.window:
                del self.keys[self._key_order.popleft()]  # keys are never removed otherwise: the front is oldest
                self.forgot_keys = True

    def _echoes(self, method: str, line: str | bytes, where: str) -> Iterable[tuple[str, str]]:
        """Where the message's `where` member holds a key the Client sent: a string (a value or a member name) equal
        to one, compared as parsed, at any depth.

        The line's strings are looked up among the keys, in time linear in the line whatever the number of keys:
        a line without a backslash has every string written as it is, and a line that holds none of the keys is
        done with then; any other is parsed and walked."""
        text = line if isinstance(line, str) else bytes(line).decode("utf-8", "surrogatepass")
        # In a text without a backslash, a quote only ever opens or closes a string: the strings (values and member
        # names) are every other piece between quotes, and are looked up as they are written.
        if "\\" not in text and self.keys.keys().isdisjoint(text.split('"')[1::2]):
            return _NONE
        try:
            value = json.loads(text).get(where)
        except (ValueError, RecursionError, AttributeError):
            return _NONE  # the reader accepted the line, so this does not happen; nothing to add if it does
        return [(method, found) for found in self._walk(value, where)]

    def _walk(self, value: Any, where: str) -> Iterator[str]:
        keys = self.keys
        for path, _is_name, string in _strings(value, where):
            if string in keys:
                yield (
                    f"{path}: echoes the idempotency key of the prompt on line {keys[string]}"
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
        epilog=__doc__.split("\n\n", 1)[1].format(window=WINDOW),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", nargs="?", default="-", help="newline-delimited JSON-RPC (default: stdin)")
    parser.add_argument(
        "--strict", action="store_true", help="report each value the lenient rules salvaged as an error, not a warning"
    )
    parser.add_argument(
        "--window",
        type=_positive,
        default=WINDOW,
        metavar="N",
        help=f"remember at most N unanswered requests and N keys (default {WINDOW}); the oldest are forgotten",
    )
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, not {text!r}")
    return value


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
            for problem in validate_lines(counted(stream), strict=args.strict, window=args.window):
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
