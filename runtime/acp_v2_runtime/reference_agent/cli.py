"""A small ACP v2 Agent over stdio, built on the key ledger with an SQL store: the conformance reference.

The command line of `python -m acp_v2_runtime.reference_agent`; the package's docstring says what each flag does.
`--listen HOST:PORT` serves it over ACP's remote transport instead of stdio (remote.py).
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


def _address(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets); port 0 takes any free port."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return host, int(port)


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
    parser.add_argument(
        "--listen",
        type=_address,
        metavar="HOST:PORT",
        help="serve over ACP's remote transport (Streamable HTTP and WebSocket) at HOST:PORT instead of stdio; "
        "the URL is printed on stdout once it listens (port 0: any free port)",
    )
    args = parser.parse_args(argv)
    if args.listen is not None:
        return _listen(parser, args)
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


def _listen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        import httptools  # noqa: F401  (the server's HTTP parser)
        import uvicorn  # noqa: F401

        from . import remote
    except ImportError as exc:  # the extra is missing
        print(f"{parser.prog}: --listen needs acp-v2-runtime[remote] ({exc.name} is missing)", file=sys.stderr)
        return 2
    make = remote.factory(
        args.db, ignore_keys=args.ignore_keys, lease=args.lease, crash_after=args.crash_after, offers=args.offers
    )
    host, port = args.listen
    try:
        asyncio.run(remote.listen(make, host, port, db=args.db, ready=lambda url: print(url, flush=True)))
    except DatabaseRefused as exc:
        print(f"{parser.prog}: cannot use --db {redacted(args.db)}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{parser.prog}: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0
