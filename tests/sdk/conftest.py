"""Build each language's generated retry table once per session, with its real toolchain, for the SDK tests.

Every build happens in a temporary directory: the generated file is copied there next to a small harness from
this folder and the JSON conformance files, which each harness reads as they are (the Rust one with the small
reader in json_reader.rs, since it builds with the standard library alone). A missing toolchain skips
these tests on a developer's machine but fails them in CI (CI=true), where `.ci/setup.d/` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from generator import paths
from tests.support import ROOT

HERE = Path(__file__).resolve().parent
CONFORMANCE = ROOT / paths.CONFORMANCE
TS_SOURCE = ROOT / paths.TYPESCRIPT
RUST_SOURCE = ROOT / paths.RUST
TSC = ROOT / "tools" / "typescript" / "node_modules" / ".bin" / "tsc"
# Stricter than --strict alone: generated code must also be clean for SDKs that turn these on.
TSC_FLAGS = (
    "--strict",
    "--noUnusedLocals",
    "--noUnusedParameters",
    "--noImplicitReturns",
    "--noFallthroughCasesInSwitch",
    "--exactOptionalPropertyTypes",
    "--noUncheckedIndexedAccess",
    "--target",
    "es2020",
    "--module",
    "commonjs",
)
RUST_EDITION = "2021"


def require_tool(name: str, path: Path | None = None) -> str:
    """The path of a tool, or a skip (a failure in CI) naming what to install."""
    if path is None and name.startswith("rust"):
        # rustup installs into ~/.cargo/bin, which a non-login shell may not have on PATH
        cargo_bin = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / name
        path = cargo_bin if shutil.which(name) is None else None
    found = str(path) if path is not None and path.exists() else shutil.which(name)
    if found is None:
        hint = "run .ci/setup.d/10-node-typescript.sh" if name in ("tsc", "node") else f"install {name}"
        message = f"{name} is not available; {hint}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI must run every SDK test)", pytrace=False)
        pytest.skip(message)
    return found


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a tool; a non-zero exit fails the test with everything the tool printed."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        printed = f"{done.stdout}\n{done.stderr}"
        if len(printed) > 6000:
            printed = printed[:6000] + "\n[… cut]"
        pytest.fail(f"{' '.join(args[:2])} failed ({done.returncode}):\n{printed}", pytrace=False)
    return done


def load_json(name: str) -> dict[str, Any]:
    return json.loads((CONFORMANCE / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def key_vectors() -> dict[str, Any]:
    return load_json("idempotency-key.json")


@pytest.fixture(scope="session")
def decision_cases() -> list[dict[str, Any]]:
    return load_json("retry-decisions.json")["cases"]


@dataclass
class Answers:
    """What one language's harness answered, in the order of the vectors and cases."""

    keys: list[dict[str, Any]]
    decisions: list[bool]
    comparisons: list[bool]
    checks: dict[str, bool]
    output: str


# -- TypeScript ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def typescript_answers(
    tmp_path_factory: pytest.TempPathFactory, key_vectors: dict[str, Any], decision_cases: list[dict[str, Any]]
) -> Answers:
    """Compile the generated TypeScript with `tsc`, run the harness with node, and read its answers."""
    node = require_tool("node")
    tsc = require_tool("tsc", TSC)
    work = tmp_path_factory.mktemp("typescript")
    shutil.copy(TS_SOURCE, work / "retry-policy.ts")
    shutil.copy(HERE / "harness.ts", work / "harness.ts")
    for path in (paths.KEY_VECTORS, paths.DECISION_VECTORS):  # read by the harness as they are
        shutil.copy(ROOT / path, work / Path(path).name)
    run([node, tsc, *TSC_FLAGS, "--outDir", "out", "harness.ts"], work)
    done = run([node, str(work / "out" / "harness.js")], work)
    data = json.loads(done.stdout)
    return Answers(data["keys"], data["decisions"], data["comparisons"], data["checks"], done.stdout)


# -- Rust ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rust_answers(
    tmp_path_factory: pytest.TempPathFactory, key_vectors: dict[str, Any], decision_cases: list[dict[str, Any]]
) -> Answers:
    """Compile the generated Rust with the harness under `rustc --test`, run it, and read its answers."""
    rustc = require_tool("rustc")
    work = tmp_path_factory.mktemp("rust")
    shutil.copy(RUST_SOURCE, work / "retry_policy.rs")
    for name in ("harness.rs", "json_reader.rs"):
        shutil.copy(HERE / name, work / name)
    for path in (paths.KEY_VECTORS, paths.DECISION_VECTORS):  # read by the harness as they are
        shutil.copy(ROOT / path, work / Path(path).name)
    run([rustc, "--edition", RUST_EDITION, "--test", "-D", "warnings", "-o", "harness", "harness.rs"], work)
    # The harness's one test prints the answers as JSON lines between markers; --nocapture lets them through.
    done = run([str(work / "harness"), "--nocapture", "--test-threads", "1"], work)
    data = json.loads(done.stdout.split("ANSWERS-BEGIN\n", 1)[1].split("ANSWERS-END", 1)[0])
    return Answers(data["keys"], data["decisions"], data["comparisons"], {}, done.stdout)
