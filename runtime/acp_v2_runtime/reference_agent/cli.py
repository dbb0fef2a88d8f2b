"""A small ACP v2 Agent over stdio, built on the key ledger with an SQL store: the conformance reference.

The command line of `python -m acp_v2_runtime.reference_agent`; the package's docstring says what each flag does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys

from .hooks import OFFERS
from .storage import DatabaseRefused, redacted
from .transport import Agent


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse turns the ValueError into a usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.reference_agent", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--db",
        required=True,
        help="where sessions, messages and keys live: an SQLite file, or a postgresql:// URL that several Agents share",
    )
    parser.add_argument("--ignore-keys", action="store_true", help="ignore idempotencyKey (to prove the runner fails)")
    parser.add_argument(
        "--lease", type=_seconds, default=30.0, help="seconds before an abandoned claim expires (a positive number)"
    )
    parser.add_argument("--crash-after", choices=("claim", "insert"), help="SIGKILL itself at this point (tests)")
    parser.add_argument(
        "--offers",
        type=lambda text: tuple(name for name in text.split(",") if name),
        default=OFFERS,
        help=f"what the initialize result offers the conformance runner, comma-separated (default {','.join(OFFERS)})",
    )
    args = parser.parse_args(argv)
    try:
        agent = Agent(
            args.db, ignore_keys=args.ignore_keys, lease=args.lease, crash_after=args.crash_after, offers=args.offers
        )
    except DatabaseRefused as exc:
        print(f"{parser.prog}: cannot use --db {redacted(args.db)}: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(agent.serve())
    return 0
