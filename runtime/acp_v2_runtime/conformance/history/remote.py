"""A history over URLs: the served Agent behind the kit's fault proxy, each Agent instance a bridge process.

`--url URL` judges an Agent already served there; `--nodes N -- NODE COMMAND` starts N nodes of the command (its
`{port}` and `{db}` filled per node, `{db}` being `--postgres URL`) behind the kit's own balancer (`Cluster`). Either
way the kit serves its fault proxy in front, and every Agent instance of the schedule is
`python -m acp_v2_runtime.remote.bridge --url PROXY`: one remote connection, whose transport failures come out as
no answer (the bridge exits), never as an error answer.

Over URLs a kill is a node killed behind the balancer (the real remote crash: every connection it served is lost,
and the retries that follow reach the other nodes); a close is the bridge ending politely (a DELETE on HTTP). With
a cluster, the proxy can also kill the node a prompt reached at the worst moments (`node-kill-after-forward`, while
it holds or inserts the key; `node-kill-after-answer`, just after it answered): the proxy names the node by the
balancer's cookie and `Remote.kill_by_cookie` kills it. Every killed node is started again in the background.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ...cluster import Cluster
from ..network import Fault, running_proxy
from ..network.faults import APPLIES_TO, KILLS

HOLD_LIMIT = 3.0
"""Seconds the proxy holds a POST of a held-POST fault before answering 504: the bridge waits for no deadline of
its own, so the hold must end for the connection to be seen lost (and the steps behind it to go on)."""


def faults_for(profile: str, kills: bool = False) -> tuple[str, ...]:
    """The network faults the proxy can make on `profile`, by name (the node kills too when `kills`)."""
    return tuple(f.value for f in Fault if profile in APPLIES_TO[f] and (kills or f not in KILLS))


class Remote:
    """The fault proxy in front of the Agent's URL, and the cluster behind it when the kit started one."""

    def __init__(self, proxy: Any, profile: str, cluster: Cluster | None) -> None:
        self.proxy, self.profile, self.cluster = proxy, profile, cluster
        self._restarts: dict[str, concurrent.futures.Future[None]] = {}  # node name -> its restart, running
        self._starter = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="node-restart")
        self._lock = threading.RLock()  # kills come from the kit's event loop and from the proxy's thread
        self._one_restart = threading.Lock()  # restarts one at a time (each waits for the balancer to see it up)
        self._killed: set[str] = set()  # nodes killed since the kit last asked (`take_killed`)

    def bridge(self) -> list[str]:
        """The Agent command of each instance: a bridge to the proxy."""
        module = "acp_v2_runtime.remote.bridge"
        return [sys.executable, "-m", module, "--url", self.proxy.url, "--profile", self.profile]

    def placement(self, instance: int) -> list[str]:
        """The bridge arguments that send instance `instance` to a node of its own (instance i to node i modulo the
        cluster's size, by the balancer's affinity cookie), so that a schedule, shrunk or replayed, puts its
        instances on the same nodes; none over a bare URL, where the kit knows no node."""
        if self.cluster is None:
            return []
        node = self.cluster.nodes[instance % len(self.cluster.nodes)].name
        return ["--cookie", f"{self.cluster.balancer.settings.cookie}={node}"]

    @property
    def faults(self) -> tuple[str, ...]:
        return faults_for(self.profile, kills=self.cluster is not None)

    def arm(self, fault: str) -> Any:
        """Arms `fault` for the next prompt through the proxy; the record says which request it fell on."""
        return self.proxy.arm(fault, self.profile)

    def reset(self) -> None:
        """Forget the faults armed, and the nodes killed, by an earlier schedule."""
        self.proxy.proxy.plan.reset()
        self.take_killed()

    def node_named(self, cookies: str) -> str | None:
        """The node the balancer's affinity cookie names among `cookies` (a Cookie or Set-Cookie value), if any."""
        assert self.cluster is not None
        cookie = f"{self.cluster.balancer.settings.cookie}="
        for part in cookies.replace(",", ";").split(";"):
            part = part.strip()
            if part.startswith(cookie) and part[len(cookie) :] in {n.name for n in self.cluster.nodes}:
                return part[len(cookie) :]
        return None

    def node_of(self, said: str) -> str | None:
        """The node a bridge is served by, from what it said on stderr (its affinity cookie), if it said it."""
        lines = [line for line in said.splitlines() if line.startswith("bridge: cookies ")]
        return self.node_named(lines[-1].removeprefix("bridge: cookies ")) if lines else None

    def node_serving(self, index: int, said: str = "") -> str:
        """The node whose cookie the bridge's stderr `said` names, else node `index` modulo the cluster's size."""
        assert self.cluster is not None
        name = self.node_of(said)
        return self.cluster.node(name if name is not None else index % len(self.cluster.nodes)).name

    async def kill_node(self, index: int, said: str = "") -> str:
        """SIGKILL the node serving instance `index` (`node_serving`), then start it again in the background; its
        name."""
        assert self.cluster is not None
        node = self.cluster.node(self.node_serving(index, said))
        restarting = self._restarts.get(node.name)
        if restarting is not None:  # killed a moment ago: let it come up first, then kill it again
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(restarting)
        self._kill(node.name)
        return node.name

    def kill_by_cookie(self, cookies: str) -> str | None:
        """The proxy's `Killer`: SIGKILL the live node the balancer's cookie names, start it again in the
        background; its name (None when the cookie names none, or the node is down already)."""
        name = self.node_named(cookies)
        if name is None:
            return None
        with self._lock:
            restarting = self._restarts.get(name)
            if restarting is not None and not restarting.done():
                return None
            return self._kill(name)

    def _kill(self, name: str) -> str:
        assert self.cluster is not None
        with self._lock:
            self.cluster.kill(name)
            self._killed.add(name)
            self._restarts[name] = self._starter.submit(self._restart, name)
        return name

    def take_killed(self) -> set[str]:
        """The nodes killed since the last call (by a kill step or by the proxy), by name."""
        with self._lock:
            killed, self._killed = self._killed, set()
        return killed

    def _restart(self, name: str) -> None:
        assert self.cluster is not None
        with self._one_restart:
            self.cluster.restart(name)

    async def settle(self) -> None:
        """Wait until every node killed is up again."""
        while True:
            with self._lock:
                running = [f for f in self._restarts.values() if not f.done()]
                if not running:
                    failed = [f for f in self._restarts.values() if f.exception() is not None]
                    self._restarts.clear()
                    break
            await asyncio.wait([asyncio.wrap_future(f) for f in running])
        if failed:
            raise failed[0].exception()  # type: ignore[misc]

    def close(self) -> None:
        self._starter.shutdown(wait=True)


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
    remote: Remote | None = None

    def killer(cookies: str) -> str | None:
        return remote.kill_by_cookie(cookies) if remote is not None else None

    try:
        with running_proxy(url, hold_limit=HOLD_LIMIT, killer=killer if cluster is not None else None) as proxy:
            remote = Remote(proxy, profile, cluster)
            try:
                yield remote
            finally:
                remote.close()
    finally:
        if cluster is not None:
            cluster.stop()
