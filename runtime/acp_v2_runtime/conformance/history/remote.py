"""A history over URLs: the served Agent behind the kit's fault proxy, each Agent instance a bridge process.

`--url URL` judges an Agent already served there; `--nodes N -- NODE COMMAND` starts N nodes of the command (its
`{port}` and `{db}` filled per node, `{db}` being `--postgres URL`) behind the kit's own balancer (`Cluster`). Either
way the kit serves its fault proxy in front, and every Agent instance of the schedule is
`python -m acp_v2_runtime.remote.bridge --url PROXY`: one remote connection, whose transport failures come out as
no answer (the bridge exits), never as an error answer.

Over URLs a kill is a node killed behind the balancer (the real remote crash: every connection it served is lost,
and the retries that follow reach the other nodes); a close is the bridge ending politely (a DELETE on HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ...cluster import Cluster
from ..network import Fault, running_proxy
from ..network.faults import APPLIES_TO

HOLD_LIMIT = 3.0
"""Seconds the proxy holds a POST of a held-POST fault before answering 504: the bridge waits for no deadline of
its own, so the hold must end for the connection to be seen lost (and the steps behind it to go on)."""


def faults_for(profile: str) -> tuple[str, ...]:
    """The network faults the proxy can make on `profile`, by name."""
    return tuple(f.value for f in Fault if profile in APPLIES_TO[f])


class Remote:
    """The fault proxy in front of the Agent's URL, and the cluster behind it when the kit started one."""

    def __init__(self, proxy: Any, profile: str, cluster: Cluster | None) -> None:
        self.proxy, self.profile, self.cluster = proxy, profile, cluster
        self._restarts: dict[str, asyncio.Task[None]] = {}
        self._lock = threading.Lock()

    def bridge(self) -> list[str]:
        """The Agent command of each instance: a bridge to the proxy."""
        module = "acp_v2_runtime.remote.bridge"
        return [sys.executable, "-m", module, "--url", self.proxy.url, "--profile", self.profile]

    @property
    def faults(self) -> tuple[str, ...]:
        return faults_for(self.profile)

    def arm(self, fault: str) -> Any:
        """Arms `fault` for the next prompt through the proxy; the record says which request it fell on."""
        return self.proxy.arm(fault, self.profile)

    def reset(self) -> None:
        """Forget the faults armed by an earlier schedule."""
        self.proxy.proxy.plan.reset()

    def node_of(self, said: str) -> str | None:
        """The node a bridge is served by, from what it said on stderr (its affinity cookie), if it said it."""
        assert self.cluster is not None
        cookie = f"{self.cluster.balancer.settings.cookie}="
        lines = [line for line in said.splitlines() if line.startswith("bridge: cookies ")]
        for part in lines[-1].removeprefix("bridge: cookies ").split("; ") if lines else ():
            if part.startswith(cookie) and part[len(cookie) :] in {n.name for n in self.cluster.nodes}:
                return part[len(cookie) :]
        return None

    async def kill_node(self, index: int, said: str = "") -> str:
        """SIGKILL the node whose cookie the bridge's stderr `said` names (else node `index` modulo the cluster's
        size), then start it again in the background; its name."""
        assert self.cluster is not None
        name = self.node_of(said)
        node = self.cluster.node(name if name is not None else index % len(self.cluster.nodes))
        restarting = self._restarts.pop(node.name, None)
        if restarting is not None:
            with contextlib.suppress(Exception):
                await restarting
        self.cluster.kill(node.name)
        self._restarts[node.name] = asyncio.create_task(asyncio.to_thread(self._restart, node.name))
        return node.name

    def _restart(self, name: str) -> None:
        assert self.cluster is not None
        with self._lock:
            self.cluster.restart(name)

    async def settle(self) -> None:
        """Wait until every node killed is up again."""
        for task in list(self._restarts.values()):
            await task
        self._restarts.clear()


@contextlib.contextmanager
def remote_target(
    url: str | None, profile: str, *, nodes: int, command: list[str], postgres: str | None
) -> Iterator[Remote]:
    """The Agent to judge over URLs: `url`, or `nodes` nodes of `command` on `postgres` behind a balancer; the
    fault proxy in front of it."""
    cluster = None
    if url is None:
        assert postgres is not None
        command = [part.replace("{db}", postgres) for part in command]
        cluster = Cluster(postgres, nodes=nodes, command=command).start()
        url = cluster.url
    try:
        with running_proxy(url, hold_limit=HOLD_LIMIT) as proxy:
            yield Remote(proxy, profile, cluster)
    finally:
        if cluster is not None:
            cluster.stop()
