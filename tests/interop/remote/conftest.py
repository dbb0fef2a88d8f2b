"""What the remote-transport interop tests share: the TypeScript programs of this folder compiled once per session
(as tests/interop compiles its own, with its compiler, flags and SDK), and servers started once per session on
free ports: the SDK's AcpServer serving its keyed Agent (sdk_server.ts) and our reference Agent served by
`python -m acp_v2_runtime.reference_agent --listen`. Fault proxies (acp_v2_runtime.conformance.network) go in
front of either; `sdk_client` runs the SDK's own Client (sdk_client_remote.ts) and returns the JSON lines it
printed.

A program of this folder is compiled when it is listed in PROGRAMS: add yours there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import compile_programs as compile_interop
from tests.interop.conftest import environment, missing

HERE = Path(__file__).resolve().parent
PROGRAMS = ("sdk_server.ts", "sdk_client_remote.ts", "stdio_bridge.ts")
START_LIMIT = 60.0
"""Seconds a server may take to say where it listens (a loaded two-core machine starting node or Python)."""
MATRIX: list[dict[str, Any]] = []
"""The fault matrix's cells as test_fault_matrix ran them, printed at the end of the run."""
RUN_LIMIT = 120.0
"""Seconds one run of the SDK Client may take before the test fails it."""


def compile_programs(node: str, names: tuple[str, ...], root: Path) -> Path:
    """Compiles `names`, programs of this folder, as tests/interop compiles its own; the directory of the `.js`."""
    return compile_interop(node, names, root, HERE)


@pytest.fixture(scope="session")
def remote_built(node: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding this folder's compiled programs (`sdk_server.js`, `sdk_client_remote.js`, ...)."""
    return compile_programs(node, PROGRAMS, tmp_path_factory.mktemp("remote-interop"))


@contextmanager
def served(
    command: list[str], ready: re.Pattern[str], url: Callable[[re.Match[str]], str], *, cpu: int | None = None
) -> Iterator[str]:
    """Starts a server process, waits for the line of its output that says where it listens, yields its endpoint
    URL and stops it (SIGTERM, then SIGKILL) when the block ends. Its output is drained, the tail kept for a
    failure's message. `cpu`: the one processor it may run on (the bench puts the servers it compares on one)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment(),
        # set in the child before it runs the program, so every thread it starts inherits it
        preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert process.stdout is not None
    tail: list[str] = []
    found: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            tail.append(line)
            del tail[:-40]
            match = ready.search(line)
            if match and not found:
                found.append(url(match))
                seen.set()
        seen.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not seen.wait(START_LIMIT) or not found:
            pytest.fail(f"{command[:3]} did not start:\n{''.join(tail)}", pytrace=False)
        yield found[0]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


def serve_sdk_agent(node: str, built: Path, *options: str, cpu: int | None = None) -> Any:
    """The SDK's AcpServer serving its keyed Agent (sdk_server.js `options`), as `served` runs it."""
    command = [node, str(built / "sdk_server.js"), "--port", "0", *options]
    return served(command, re.compile(r"^listening (\d+)"), lambda m: f"http://127.0.0.1:{m.group(1)}/", cpu=cpu)


def serve_our_agent(db: Path, cpu: int | None = None) -> Any:
    """Our reference Agent on the SQLite file `db`, served by `--listen` on a free port, as `served` runs it."""
    command = [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--listen", "127.0.0.1:0", "--db", str(db)]
    return served(command, re.compile(r"(https?://[^\s]+)"), lambda m: m.group(1), cpu=cpu)


@pytest.fixture(scope="session")
def sdk_agent_url(node: str, remote_built: Path) -> Iterator[str]:
    """The endpoint of the SDK's AcpServer serving its keyed Agent (sessions kept in its memory)."""
    with serve_sdk_agent(node, remote_built) as url:
        yield url


@pytest.fixture(scope="session")
def our_agent_url() -> Iterator[str]:
    """The endpoint of our reference Agent served over the remote transport, on an SQLite file."""
    folder = Path(tempfile.mkdtemp(prefix="remote-agent-"))
    try:
        with serve_our_agent(folder / "agent.db") as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_sdk_client(node: str, built: Path, url: str, profile: str, *options: str) -> list[dict[str, Any]]:
    """Runs sdk_client_remote.js against `url` and returns the JSON lines it printed (failing on a crash)."""
    done = subprocess.run(
        [node, str(built / "sdk_client_remote.js"), "--url", url, "--profile", profile, *options],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT,
        env=environment(),
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    crashed = [line for line in lines if line["event"] == "crash"]
    if done.returncode != 0 or crashed:
        pytest.fail(f"the SDK client failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}", pytrace=False)
    return lines


@pytest.fixture(scope="session")
def sdk_client(node: str, remote_built: Path) -> Callable[..., list[dict[str, Any]]]:
    """Runs the SDK's Client script: `sdk_client(url, profile, *options)` -> its JSON lines."""
    return lambda url, profile, *options: run_sdk_client(node, remote_built, url, profile, *options)


def remote_ready() -> None:
    """Skips (or, under CI, fails) when the remote extra's libraries are missing."""
    for module in ("httpx", "httpx_sse", "websockets", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            missing(f"{module} is not installed: pip install -e 'runtime[remote]'")
    if os.name != "posix":
        pytest.skip("the servers are stopped with POSIX signals")


def matrix_table(cells: list[dict[str, Any]]) -> str:
    """The fault matrix as a Markdown table: fault x profile x direction, with what each side saw."""
    rows = [
        "| fault | profile | direction | the proxy did / the Client was told | the Client saw first | attempts "
        "| same messageId | user messages replayed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in sorted(cells, key=lambda c: (c["fault"], c["profile"], c["direction"])):
        rows.append(
            f"| {cell['fault']} | {cell['profile']} | {cell['direction']} | {cell['proxy']} | {cell['first']} "
            f"| {cell['attempts']} | {'yes' if cell['same'] else 'NO'} | {cell['replayed']} |"
        )
    return "\n".join(rows)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MATRIX:
        terminalreporter.section("the remote transport's fault matrix")
        terminalreporter.write_line(matrix_table(MATRIX))
