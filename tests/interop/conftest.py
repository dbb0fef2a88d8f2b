"""The interop tests' toolchain: the pinned TypeScript SDK (tools/acp-sdk, `.ci/setup.d/12-acp-sdk.sh`) and the
pinned compiler (tools/typescript, `.ci/setup.d/10-node-typescript.sh`).

The TypeScript programs of this folder are compiled once per test session, strictly, against the SDK's own type
declarations, into a temporary directory whose `node_modules` points at tools/acp-sdk/node_modules (so node and
tsc resolve `@agentclientprotocol/sdk` from the pinned install). Missing node, SDK or compiler skips these tests
on a developer's machine, naming the setup script to run, and fails them under CI=true, as tests/sdk/ does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from acp_v2_runtime.conformance import handshake_key

from tests.support import ROOT

PARALLEL = 2
"""Runners that the interop tests start at once: no more than CI's cores, whatever else runs beside them."""
HERE = Path(__file__).resolve().parent
SDK_MODULES = ROOT / "tools" / "acp-sdk" / "node_modules"
TSC = ROOT / "tools" / "typescript" / "node_modules" / ".bin" / "tsc"
PROGRAMS = ("keyed_agent.ts", "sdk_client.ts", "example_agent.ts")
TSC_FLAGS = (
    "--strict",
    "--noUnusedLocals",
    "--noUnusedParameters",
    "--noImplicitReturns",
    "--noUncheckedIndexedAccess",
    "--target",
    "es2022",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--types",
    "node",
    "--skipLibCheck",  # the SDK's declarations are checked by its own build, with its own compiler
)


def missing(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (CI must run every interop test)", pytrace=False)
    pytest.skip(message)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the packages are installed editable: keep generated/ free of caches
    env.pop("ACP_REFERENCE_AGENT_LOG", None)
    env["ACP_CONFORMANCE_META_KEY"] = handshake_key()  # the TypeScript programs read the key from here
    return env


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        missing("node is not available; run .ci/setup.d/10-node-typescript.sh")
    assert found is not None
    return found


def compile_programs(node: str, names: tuple[str, ...], root: Path, folder: Path = HERE) -> Path:
    """Compiles `names` (TypeScript files of `folder`) in one tsc run into `root`; returns the directory of the
    `.js` files. Skips (fails under CI) when the SDK or the compiler is missing."""
    if not (SDK_MODULES / "@agentclientprotocol" / "sdk" / "package.json").exists():
        missing("the ACP TypeScript SDK is not installed; run .ci/setup.d/12-acp-sdk.sh")
    if not TSC.exists():
        missing("the pinned TypeScript compiler is not installed; run .ci/setup.d/10-node-typescript.sh")
    (root / "node_modules").symlink_to(SDK_MODULES, target_is_directory=True)
    (root / "package.json").write_text(json.dumps({"type": "module"}), encoding="utf-8")
    source = root / "src"
    source.mkdir()
    for name in names:
        shutil.copyfile(folder / name, source / name)
    done = subprocess.run(
        [node, str(TSC), *TSC_FLAGS, "--rootDir", str(source), "--outDir", str(root / "out")]
        + [str(source / name) for name in names],
        cwd=root,  # where tsc looks for node_modules/@types
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"tsc failed ({done.returncode}):\n{(done.stdout + done.stderr)[:6000]}", pytrace=False)
    return root / "out"


@pytest.fixture(scope="session")
def built(node: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding the compiled programs (`keyed_agent.js`, `sdk_client.js`)."""
    return compile_programs(node, PROGRAMS, tmp_path_factory.mktemp("interop"))


def verdicts(output: str) -> dict[str, tuple[str, str]]:
    """Each trace's verdict and its whole line, from the runner's output."""
    found = {}
    for line in output.splitlines():
        if line[:4] in ("PASS", "FAIL", "SKIP"):
            found[line.split()[1].rstrip(":")] = (line[:4], line)
    return found
