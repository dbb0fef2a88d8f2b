"""The cluster tests' prerequisites: HAProxy (`.ci/setup.d/31-haproxy.sh`), a PostgreSQL server the nodes share
(`.ci/setup.d/30-postgresql.sh`, read from ACP_TEST_POSTGRES_DSN as runtime/tests does), and for the SDK client's
test node, the pinned SDK and compiler (as tests/interop). Each missing one skips the tests that need it, naming
the script to run; under CI=true they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp_v2_runtime.cluster import Cluster, reference_command

from tests.interop.conftest import SDK_MODULES, TSC, TSC_FLAGS, missing

HERE = Path(__file__).resolve().parent
DEFAULT_DSN = "postgresql://acp:acp@127.0.0.1:54329/acp_ledger"  # what .ci/setup.d/30-postgresql.sh creates


@pytest.fixture(scope="session")
def haproxy() -> str:
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if found is None:
        missing("haproxy is not installed; run .ci/setup.d/31-haproxy.sh")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def shared_dsn() -> str:
    """The PostgreSQL database every node of a test cluster shares."""
    dsn = os.environ.get("ACP_TEST_POSTGRES_DSN", DEFAULT_DSN)
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        missing(f"PostgreSQL is not reachable ({type(exc).__name__}); run .ci/setup.d/30-postgresql.sh")
    return dsn


@pytest.fixture(scope="module")
def cluster(haproxy: str, shared_dsn: str) -> Iterator[Cluster]:
    """Three reference Agents served on the remote transport, on one PostgreSQL database, behind HAProxy."""
    with Cluster(shared_dsn, nodes=3, command=reference_command(shared_dsn)) as running:
        yield running


@pytest.fixture(autouse=True)
def _every_node_up(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that killed or replaced a node leaves the cluster as it found it: every node up, as started."""
    yield
    if "cluster" in request.fixturenames:
        running: Cluster = request.getfixturevalue("cluster")
        for node in running.nodes:
            if not node.running or node.extra:
                running.restart(node.name)


@pytest.fixture(scope="session")
def sdk_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdk_cluster_client.ts compiled strictly against the pinned SDK (as tests/interop compiles its programs)."""
    node = shutil.which("node")
    if node is None:
        missing("node is not available; run .ci/setup.d/10-node-typescript.sh")
    if not (SDK_MODULES / "@agentclientprotocol" / "sdk" / "package.json").exists():
        missing("the ACP TypeScript SDK is not installed; run .ci/setup.d/12-acp-sdk.sh")
    if not TSC.exists():
        missing("the pinned TypeScript compiler is not installed; run .ci/setup.d/10-node-typescript.sh")
    assert node is not None
    root = tmp_path_factory.mktemp("cluster-ts")
    (root / "node_modules").symlink_to(SDK_MODULES, target_is_directory=True)
    (root / "package.json").write_text(json.dumps({"type": "module"}), encoding="utf-8")
    (root / "src").mkdir()
    shutil.copyfile(HERE / "sdk_cluster_client.ts", root / "src" / "sdk_cluster_client.ts")
    done = subprocess.run(
        [node, str(TSC), *TSC_FLAGS, "--rootDir", str(root / "src"), "--outDir", str(root / "out"),
         str(root / "src" / "sdk_cluster_client.ts")],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"tsc failed ({done.returncode}):\n{(done.stdout + done.stderr)[:6000]}", pytrace=False)
    return root / "out" / "sdk_cluster_client.js"


sys.dont_write_bytecode = True
