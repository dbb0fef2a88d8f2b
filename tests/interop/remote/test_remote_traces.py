"""The spec's conformance traces over ACP's remote transport, against both served Agents, over both profiles.

The conformance kit starts an Agent command per connection; here that command is stdio_bridge.ts, which carries
its stdio over the TypeScript SDK's own Client transport (createHttpStream or createWebSocketStream) to a served
Agent, so each process of a trace is a new connection to the same server, and a "restart" is a new connection
(the server keeps running). The verdicts come from the traces document: every trace passes on our reference Agent
(it offers the test hooks over the remote transport too); on the SDK's keyed Agent (sdk_server.ts), which offers no
hooks, a trace that needs one is skipped and every other one passes.

The four runs share the servers of the fault matrix and go `PARALLEL` at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from generator import paths
from tests.interop.conftest import PARALLEL, environment, verdicts
from tests.support import ROOT

TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))
HOOKS = {name for name, need in TRACES["needs"].items() if need["from"] == "handshake"}
TIMEOUT = 30  # the kit's --timeout: only a missing answer waits for it
RUNS = [(agent, profile) for agent in ("our Agent", "the SDK's Agent") for profile in ("http", "websocket")]


def expected(agent: str) -> dict[str, str]:
    """Each trace's verdict: PASS, or SKIP on an Agent offering no hooks when the trace needs one."""
    offers = HOOKS if agent == "our Agent" else set()
    return {
        trace["id"]: "SKIP" if set(trace.get("needs", ())) & (HOOKS - offers) else "PASS" for trace in TRACES["traces"]
    }


@pytest.fixture(scope="module")
def outputs(node: str, remote_built: Path, our_agent_url: str, sdk_agent_url: str) -> dict[tuple[str, str], str]:
    """The kit's output for each (Agent, profile), run through the bridge."""
    urls = {"our Agent": our_agent_url, "the SDK's Agent": sdk_agent_url}

    def kit(run: tuple[str, str]) -> str:
        agent, profile = run
        command = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", str(TIMEOUT), "--"]
        done = subprocess.run(
            [*command, node, str(remote_built / "stdio_bridge.js"), urls[agent], profile],
            capture_output=True,
            text=True,
            timeout=600,
            env=environment(),
            check=False,
        )
        return done.stdout + done.stderr[-3000:]

    with ThreadPoolExecutor(PARALLEL) as pool:
        return dict(zip(RUNS, pool.map(kit, RUNS), strict=True))


@pytest.mark.parametrize(("agent", "profile"), RUNS, ids=[f"{a}-{p}".replace(" ", "-") for a, p in RUNS])
def test_every_trace_over_the_remote_transport(agent: str, profile: str, outputs: dict[tuple[str, str], str]) -> None:
    output = outputs[(agent, profile)]
    seen = {trace: verdict for trace, (verdict, _) in verdicts(output).items()}
    assert seen == expected(agent), output
