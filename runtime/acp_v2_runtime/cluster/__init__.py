"""Several ACP Agent nodes on one store behind HAProxy, started by one command.

    python -m acp_v2_runtime.cluster --db postgresql://user:pw@host/agents [--nodes 3] [--listen 127.0.0.1:8000]
    python -m acp_v2_runtime.cluster --db URL --node-command 'node my_agent.js --port {port} --db {db}'

Each node is an Agent served on ACP's remote transport (by default the reference Agent, `python -m
acp_v2_runtime.reference_agent --listen HOST:PORT --db URL`; any other through `--node-command`, whose `{port}`,
`{host}` and `{db}` are filled per node). HAProxy runs from the template `haproxy.cfg.in` beside this module:
cookie affinity set on the first answer of each ACP connection, SSE and WebSocket passed through without delay,
health checks on the ACP endpoint, a refused connection redispatched to a live node, idle limits above the event
stream's keep-alive. site/running-a-cluster.md is the operator's page.

    balancer   the configuration (rendered from the template), the haproxy process, its runtime API
    nodes      one Agent process per node: start, kill (a crash), stop, restart on the same port
    launcher   `Cluster`: the nodes and the balancer together; what tests and the history check drive
    cli        the command line (run by __main__)
"""

from .balancer import Balancer, BalancerError, Settings, render
from .launcher import Cluster
from .nodes import Node, NodeError, parse_command, reference_command

__all__ = [
    "Balancer",
    "BalancerError",
    "Cluster",
    "Node",
    "NodeError",
    "Settings",
    "parse_command",
    "reference_command",
    "render",
]
