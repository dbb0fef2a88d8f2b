"""Check a recorded ACP v2 session: `python -m acp_v2_runtime.validate [FILE]` (stdin when FILE is omitted or -).

The input is newline-delimited JSON-RPC, one message (or batch) per line, as a proxy or a transport log records
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
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from acp_v2_schema.models._base import SALVAGED
from acp_v2_schema.reader import Invalid, MessageReader


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
    for number, line in enumerate(lines, start=1):
        for message in reader.read_line(line):
            if isinstance(message, Invalid):
                for text in message.problems:
                    yield Problem(number, message.method or "-", text)
                continue
            # SALVAGED is empty unless a model that a lenient read made is alive: one check a message, no lookups
            if SALVAGED:
                # the member the models read: params, result or error (an extension's plain JSON salvages nothing)
                for where in ("params", "result", "error"):
                    for salvage in getattr(getattr(message, where, None), "model_salvaged", ()):
                        text = f"{where}.{salvage}"
                        yield Problem(number, message.method or "-", text, warning=not strict)


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
