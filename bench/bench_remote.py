"""Keyed prompts over ACP's remote transport, driven by the TypeScript SDK's own Client (sdk_client_remote.ts, with
createHttpStream or createWebSocketStream), over HTTP and over WebSocket:

- keyed against unkeyed `session/prompt`s on one served reference Agent (`python -m acp_v2_runtime.reference_agent
  --listen`, on an SQLite file): what the key costs end to end (goal: keyed >= 0.9 of unkeyed, per profile);
- our served reference Agent against the SDK's AcpServer serving its keyed Agent (tests/interop/remote/sdk_server.ts
  with --journal), both keyed (goal: ours >= 0.7 of the SDK's prompts per second, per profile).

Each Agent per prompt: checks the params (ours with the generated pydantic model, the SDK's with its zod
validator), inserts the user message with its key (ours: the key ledger's SQLite transaction; the SDK's: in
memory, plus a JSON line appended to its journal file before it is reported), reports it (`user_message`),
answers with its messageId, then runs the turn: `running`, one `agent_message` (stored the same way), `idle`. Both
stores survive a crash of the process and neither syncs the disk on each write (SQLite in WAL with
synchronous=NORMAL; the journal's appends).

One Client process drives both sides of a line, a connection and a session each: a batch of prompts on one side,
then on the other, the first side changing every round, each prompt sent when the previous one is answered, as an
editor does; the figure is each side's median batch rate. Both servers run on one processor, the Client on
another, so that where the system places a process cannot favour a side.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from .common import Ratio

KEY_GOAL = 0.9
SDK_GOAL = 0.7
ROUNDS = 61  # a median over fewer batches moved by a tenth from run to run on a loaded machine
BATCH = 20
PROFILES = ("http", "websocket")
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
SERVERS_CPU = CPUS[-1] if len(CPUS) > 1 else None
CLIENT_CPU = CPUS[0] if len(CPUS) > 1 else None


def missing() -> str | None:
    """Why the SDK's side cannot run here, or None."""
    from tests.interop.conftest import SDK_MODULES, TSC

    if shutil.which("node") is None:
        return "node is not available; run .ci/setup.d/10-node-typescript.sh"
    if not (SDK_MODULES / "@agentclientprotocol" / "sdk" / "package.json").exists() or not TSC.exists():
        return "the ACP TypeScript SDK or the pinned compiler is missing; run .ci/setup.d/12-acp-sdk.sh and 10-*.sh"
    for module in ("httpx", "httpx_sse", "websockets", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed: pip install -e 'runtime[remote]'"
    return None


@contextmanager
def _servers(tmp: Path, node: str, built: Path) -> Iterator[tuple[str, str]]:
    """Our served reference Agent and the SDK's AcpServer, on the servers' processor: (ours, the SDK's)."""
    from tests.interop.remote.conftest import serve_our_agent, serve_sdk_agent

    with ExitStack() as stack:
        ours = stack.enter_context(serve_our_agent(tmp / "agent.db", cpu=SERVERS_CPU))
        sdk = stack.enter_context(
            serve_sdk_agent(node, built, "--journal", str(tmp / "journal.jsonl"), cpu=SERVERS_CPU)
        )
        yield ours, sdk


def _measure(node: str, built: Path, profile: str, *sides: str) -> list[float]:
    """Prompts per second on each side (`URL|keyed` or `URL|unkeyed`), measured in alternation by one Client."""
    command = [node, str(built / "sdk_client_remote.js"), "--url", sides[0].split("|")[0], "--profile", profile]
    command += ["--bench", str(ROUNDS), "--batch", str(BATCH), "--timeout", "60000"]
    for side in sides:
        command += ["--side", side]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        preexec_fn=None if CLIENT_CPU is None else lambda: os.sched_setaffinity(0, {CLIENT_CPU}),
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    figures = [line["promptsPerSecond"] for line in lines if line["event"] == "bench"]
    if done.returncode != 0 or len(figures) != len(sides):
        raise SystemExit(f"bench_remote: the SDK client failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return figures


def run() -> list[Ratio]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            raise SystemExit(f"bench_remote: {reason} (CI must run this line)")
        print(f"  no line: {reason}", flush=True)
        return []
    from tests.interop.remote.conftest import compile_programs

    node = shutil.which("node")
    assert node is not None
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "ts").mkdir()
        built = compile_programs(node, ("sdk_server.ts", "sdk_client_remote.ts"), Path(tmp) / "ts")
        with _servers(Path(tmp), node, built) as (ours, sdk):
            for profile in PROFILES:
                keyed, unkeyed = _measure(node, built, profile, f"{ours}|keyed", f"{ours}|unkeyed")
                results.append(
                    Ratio(
                        f"remote {profile}: keyed vs unkeyed session/prompt on our served reference Agent (SQLite), "
                        f"the SDK's Client, batches of {BATCH} in alternation, median of {ROUNDS}",
                        keyed,
                        unkeyed,
                        "prompts/s",
                        KEY_GOAL,
                        higher_is_better=True,
                    )
                )
            for profile in PROFILES:
                mine, theirs = _measure(node, built, profile, f"{ours}|keyed", f"{sdk}|keyed")
                results.append(
                    Ratio(
                        f"remote {profile}: our served reference Agent (SQLite) vs the SDK's AcpServer with its keyed "
                        f"Agent (memory + journal file), keyed prompts by the SDK's Client, median of {ROUNDS}",
                        mine,
                        theirs,
                        "prompts/s",
                        SDK_GOAL,
                        higher_is_better=True,
                    )
                )
    return results
