"""A cluster: N Agent nodes on one store behind one HAProxy, started and stopped together, with a node killed or
restarted on request (the API tests and the history check drive).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from .balancer import Balancer, Settings, split_address
from .nodes import Node, free_port, reference_command

DEFAULT_NODES = 3
DEFAULT_PATH = "/"
"""Where the nodes serve ACP: the URL path the Client is given and the health check asks."""


class Cluster:
    """N nodes (`command`, a list with a {port} placeholder, default the reference Agent on `db`) behind HAProxy.

    Use it as a context manager, or call `start` and `stop`. `url` is what a Client connects to. Nodes are named
    n1, n2, …: the affinity cookie's value and HAProxy's server name. A node killed stays down until `restart`;
    HAProxy notices by its health checks (`wait_down`, `wait_up`).
    """

    def __init__(
        self,
        db: str,
        *,
        nodes: int = DEFAULT_NODES,
        command: Sequence[str] | None = None,
        listen: str | None = None,
        path: str = DEFAULT_PATH,
        node_host: str = "127.0.0.1",
        workdir: Path | None = None,
        **settings: object,
    ) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.path = path if path.startswith("/") else "/" + path
        self._own_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="acp-cluster-")) if workdir is None else workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        base = list(command) if command is not None else reference_command(db)
        self.nodes = [
            Node(f"n{i}", base, host=node_host, port=free_port(node_host), db=db, log=self.workdir / f"n{i}.log")
            for i in range(1, nodes + 1)
        ]
        listen = listen or f"127.0.0.1:{free_port()}"
        self.balancer = Balancer(
            Settings(
                listen=listen,
                servers=tuple((node.name, node.address) for node in self.nodes),
                stats_socket=self.workdir / "haproxy.sock",
                health_path=self.path,
                **settings,  # type: ignore[arg-type]
            ),
            self.workdir,
        )

    @property
    def url(self) -> str:
        """The balancer's URL, the one a Client is given."""
        host, port = split_address(self.balancer.settings.listen)
        host = "127.0.0.1" if host == "0.0.0.0" else f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}{self.path}"

    def node(self, which: int | str) -> Node:
        """A node by its name (`n2`) or its index from 0."""
        if isinstance(which, int):
            return self.nodes[which]
        for node in self.nodes:
            if node.name == which:
                return node
        raise KeyError(f"no node named {which!r} (the nodes are {', '.join(n.name for n in self.nodes)})")

    def node_url(self, which: int | str) -> str:
        """A node's own URL, past the balancer (for comparisons)."""
        node = self.node(which)
        return f"http://{node.host}:{node.port}{self.path}"

    def start(self) -> Cluster:
        """Start every node, then HAProxy, and wait until HAProxy reports every node up."""
        try:
            for node in self.nodes:
                node.start()
            self.balancer.start()
            for node in self.nodes:
                self.balancer.wait_for(node.name, "UP")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop HAProxy, then every node; remove the work directory the cluster made for itself."""
        self.balancer.stop()
        for node in self.nodes:
            node.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self, which: int | str) -> Node:
        """SIGKILL one node (a crash); HAProxy finds out by its checks or by the next connection refused."""
        node = self.node(which)
        node.kill()
        return node

    def restart(self, which: int | str, extra: Sequence[str] = ()) -> Node:
        """Start a node again on its port (killing it first if it runs), with `extra` arguments after the command;
        wait until HAProxy reports it up."""
        node = self.node(which)
        node.kill()
        node.start(extra)
        self.balancer.wait_for(node.name, "UP")
        return node

    def wait_down(self, which: int | str, timeout: float = 30.0) -> None:
        """Wait until HAProxy's checks have taken the node out."""
        self.balancer.wait_for(self.node(which).name, "DOWN", timeout)

    def wait_up(self, which: int | str, timeout: float = 30.0) -> None:
        self.balancer.wait_for(self.node(which).name, "UP", timeout)

    def states(self) -> dict[str, str]:
        """Each node's status as HAProxy sees it (`UP`, `DOWN`, …)."""
        return self.balancer.states()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
