"""Keyed prompts through HAProxy in front of reference Agents on one PostgreSQL (`acp_v2_runtime.cluster`).

Every side is driven by the same plain Streamable HTTP client (tests/cluster/wire.py): CLIENTS connections at once,
each with its own session, each sending one `session/prompt` at a time and waiting for its answer on the session's
event stream. A round is a burst of BURST prompts per connection on each side being compared, the sides in an order
drawn per round (`paired`), and a figure is the median over the rounds. The lines:

- scale: prompts per second through the balancer to 3 nodes against 1 node (informational: the machine's two
  cores run the client, HAProxy, the nodes and PostgreSQL at once, so this bounds the figure, not the design);
- keyed against unkeyed prompts through the balancer to 3 nodes (goal >= 0.85);
- the answer's p50 and p99 through the balancer against straight to a node (one connection, one prompt at a time;
  goal for p99 <= 1.5);
- what `option http-no-delay` is for: the p50 of the same prompts through a balancer without it;
- CPU per prompt across every process (client, HAProxy, nodes, PostgreSQL's backends), through the balancer to 3
  nodes against straight to one node, so the cost can be projected onto a larger machine.

Needs haproxy and a PostgreSQL server (ACP_TEST_POSTGRES_DSN, default the one .ci/setup.d/30-postgresql.sh
starts); without them the module says so and yields nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from acp_v2_runtime.cluster import Cluster

from tests.cluster.wire import HttpPeer, new_key

from .common import Ratio

DSN = os.environ.get("ACP_TEST_POSTGRES_DSN", "postgresql://acp:acp@127.0.0.1:54329/acp_ledger")
CLIENTS = 6
BURST = 5
ROUNDS = 15
LATENCY_SAMPLES = 300
KEYED_GOAL = 0.85
P99_GOAL = 1.5
TICK = os.sysconf("SC_CLK_TCK")


class Side:
    """CLIENTS open connections to one URL, each with a session."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: list[httpx.AsyncClient] = []
        self.peers: list[tuple[HttpPeer, str]] = []

    async def open(self, count: int) -> Side:
        for _ in range(count):
            client = httpx.AsyncClient(timeout=30)
            peer = HttpPeer(client, self.url)
            await peer.open()
            self.clients.append(client)
            self.peers.append((peer, await peer.new_session()))
        return self

    async def burst(self, keyed: bool) -> float:
        """Seconds for BURST prompts on every connection at once."""

        async def one(peer: HttpPeer, session: str) -> None:
            for _ in range(BURST):
                answer = await peer.prompt(session, "bench", new_key() if keyed else None)
                assert "result" in answer, answer

        start = time.perf_counter()
        await asyncio.gather(*(one(peer, session) for peer, session in self.peers))
        return time.perf_counter() - start

    async def latencies(self, count: int) -> list[float]:
        peer, session = self.peers[0]
        found = []
        for _ in range(count):
            start = time.perf_counter()
            await peer.prompt(session, "bench", new_key())
            found.append(time.perf_counter() - start)
        return found

    async def close(self) -> None:
        for peer, _ in self.peers:
            await peer.close()
        for client in self.clients:
            await client.aclose()


async def paired_rates(a: Side, b: Side, keyed_a: bool, keyed_b: bool) -> tuple[float, float]:
    """Median prompts per second of each side over ROUNDS rounds, the order drawn per round."""
    order = random.Random(49)
    rates: dict[int, list[float]] = {0: [], 1: []}
    sides = [(0, a, keyed_a), (1, b, keyed_b)]
    prompts = CLIENTS * BURST
    await a.burst(keyed_a)  # warm both (connections, prepared statements, the ledger's caches)
    await b.burst(keyed_b)
    for _ in range(ROUNDS):
        order.shuffle(sides)
        for index, side, keyed in sides:
            rates[index].append(prompts / await side.burst(keyed))
    return statistics.median(rates[0]), statistics.median(rates[1])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU of `pids` (and of their waited-for children), from /proc."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / TICK


def postgres_pids() -> list[int]:
    """Every PostgreSQL server process on this machine (the nodes' backends among them)."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if comm.read_text().strip() in ("postgres", "postmaster"):
                found.append(int(comm.parent.name))
    return found


async def cpu_per_prompt(side: Side, pids: list[int]) -> float:
    """CPU milliseconds per prompt, summed over this process, `pids` and PostgreSQL, for a few bursts."""
    every = [os.getpid(), *pids, *postgres_pids()]
    before = cpu_seconds(every)
    bursts = 6
    for _ in range(bursts):
        await side.burst(True)
    return (cpu_seconds(every) - before) * 1000 / (bursts * CLIENTS * BURST)


def node_pids(cluster: Cluster) -> list[int]:
    return [node.process.pid for node in cluster.nodes if node.process is not None]


async def measure(one: Cluster, three: Cluster, slow: Cluster) -> Iterator[Ratio]:
    to_one = await Side(one.url).open(CLIENTS)
    to_three = await Side(three.url).open(CLIENTS)
    direct = await Side(three.node_url(0)).open(CLIENTS)
    without = await Side(slow.url).open(1)
    try:
        rate_three, rate_one = await paired_rates(to_three, to_one, True, True)
        keyed, unkeyed = await paired_rates(to_three, to_three, True, False)
        through, straight, delayed = [], [], []
        for _ in range(LATENCY_SAMPLES // 20):  # interleaved in slices, so load elsewhere weighs on both alike
            through += await to_three.latencies(20)
            straight += await direct.latencies(20)
        for _ in range(2):
            delayed += await without.latencies(10)
        balancer = three.balancer.process
        cpu_through = await cpu_per_prompt(
            to_three, [*node_pids(three), *([balancer.pid] if balancer is not None else [])]
        )
        cpu_direct = await cpu_per_prompt(direct, node_pids(three)[:1])
    finally:
        for side in (to_one, to_three, direct, without):
            await side.close()
    return iter(
        [
            Ratio(
                "cluster scale: keyed prompts/s through HAProxy, 3 nodes vs 1 (two cores run the client, HAProxy, "
                "every node and PostgreSQL: they bound it)",
                rate_three, rate_one, "prompts/s", None, True,
            ),
            Ratio("cluster: keyed vs unkeyed prompts/s through HAProxy (3 nodes)", keyed, unkeyed, "prompts/s",
                  KEYED_GOAL, True),
            Ratio("cluster: p50 of a prompt's answer, through HAProxy vs straight to a node",
                  percentile(through, 0.5) * 1000, percentile(straight, 0.5) * 1000, "ms", None, False),
            Ratio("cluster: p99 of a prompt's answer, through HAProxy vs straight to a node",
                  percentile(through, 0.99) * 1000, percentile(straight, 0.99) * 1000, "ms", P99_GOAL, False),
            Ratio("cluster: p50 of a prompt's answer through HAProxy without vs with option http-no-delay",
                  statistics.median(delayed) * 1000, percentile(through, 0.5) * 1000, "ms", None, False),
            Ratio("cluster: CPU per keyed prompt across all processes, through HAProxy to 3 nodes vs straight to one",
                  cpu_through, cpu_direct, "ms", None, False),
        ]
    )  # fmt: skip


def run() -> Iterator[Ratio]:
    if shutil.which("haproxy") is None and shutil.which("haproxy", path="/usr/sbin") is None:
        print("cluster: skipped, haproxy is not installed (.ci/setup.d/31-haproxy.sh)")
        return
    try:
        import psycopg

        with psycopg.connect(DSN, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        print(f"cluster: skipped, PostgreSQL is not reachable ({type(exc).__name__}; .ci/setup.d/30-postgresql.sh)")
        return
    with (
        Cluster(DSN, nodes=1) as one,
        Cluster(DSN, nodes=3) as three,
        Cluster(DSN, nodes=1, extra=("no option http-no-delay",)) as slow,
    ):
        yield from asyncio.run(measure(one, three, slow))
