"""The command line of `python -m acp_v2_runtime.cluster`: start the cluster, print its URL, take commands on
standard input (`kill n2`, `restart n2`, `status`, `quit`), stop everything on `quit`, Ctrl-C, SIGTERM, or the
end of input at a terminal (Ctrl-D); input that ends elsewhere (`</dev/null` under a supervisor) leaves it serving
until a signal.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from ..reference_agent.storage import redacted
from .balancer import BalancerError
from .launcher import DEFAULT_NODES, DEFAULT_PATH, Cluster
from .nodes import NodeError, parse_command

HELP = "commands: kill NODE | restart NODE | status | quit   (NODE: n1, n2, …)"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.cluster",
        description="N ACP Agent nodes on one store behind HAProxy; prints the URL a Client connects to.",
    )
    found.add_argument("--db", required=True, help="the store every node shares: a postgresql:// URL")
    found.add_argument("--nodes", type=_positive, default=DEFAULT_NODES, help=f"how many (default {DEFAULT_NODES})")
    found.add_argument("--listen", default="127.0.0.1:8000", help="host:port HAProxy binds (default %(default)s)")
    found.add_argument(
        "--node-command",
        type=parse_command,
        help="the command that serves one node, with {port} (and optionally {host}, {db}) filled per node; "
        "default: the reference Agent, python -m acp_v2_runtime.reference_agent --listen {host}:{port} --db {db}",
    )
    found.add_argument("--path", default=DEFAULT_PATH, help="the URL path the nodes serve ACP on (default /)")
    found.add_argument(
        "--idle-timeout", default="60s", help="HAProxy's idle limit for requests and event streams (default 60s)"
    )
    found.add_argument("--workdir", type=Path, help="where the configuration and logs go (default: a new temp dir)")
    return found


def _command(cluster: Cluster, line: str) -> bool:
    """Act on one line of standard input; False to stop."""
    words = line.split()
    if not words:
        return True
    verb, *rest = words
    try:
        if verb in ("quit", "exit"):
            return False
        if verb == "status":
            print(" ".join(f"{name}={state}" for name, state in cluster.states().items()), flush=True)
        elif verb == "kill" and len(rest) == 1:
            cluster.kill(rest[0])
            print(f"killed {rest[0]}", flush=True)
        elif verb == "restart" and len(rest) == 1:
            cluster.restart(rest[0])
            print(f"restarted {rest[0]} (up)", flush=True)
        else:
            print(HELP, flush=True)
    except (KeyError, NodeError, TimeoutError) as exc:
        print(f"error: {exc}", flush=True)
    return True


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM stops the cluster as Ctrl-C does."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    # The operator's run keeps its configuration and logs after the stop (a Cluster made without a workdir
    # removes its own).
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="acp-cluster-"))
    cluster = Cluster(
        args.db, nodes=args.nodes, command=args.node_command, listen=args.listen, path=args.path,
        workdir=workdir, idle_timeout=args.idle_timeout,
    )  # fmt: skip
    try:
        cluster.start()
    except (BalancerError, NodeError, TimeoutError) as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"cluster: {len(cluster.nodes)} nodes on {redacted(args.db)}", flush=True)
        for node in cluster.nodes:
            print(f"  {node.name} {node.address} (log {node.log})", flush=True)
        print(f"  haproxy {cluster.balancer.settings.listen} (config {cluster.balancer.config})", flush=True)
        print(f"url: {cluster.url}", flush=True)
        print(HELP + "; Ctrl-C stops everything", flush=True)
        for line in sys.stdin:
            if not _command(cluster, line):
                break
        else:
            if sys.stdin.isatty():
                return 0
            # input ended (e.g. </dev/null under a supervisor): keep serving until a signal
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
        print(f"cluster: stopped (configuration and logs kept in {workdir})", flush=True)
    return 0
