"""Build each language's generated retry table once per session, with its real toolchain, for the SDK tests.

Every build happens in a temporary directory: the generated file is copied there next to a small harness from
this folder and a vectors file that the test writes from the JSON conformance data. A missing toolchain skips
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
from generator.render.rust import rust_string
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


def typescript_vectors(keys: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """vectors.ts: the conformance data as TypeScript literals (JSON with ASCII escapes is valid TypeScript)."""

    def literal(value: Any) -> str:
        return json.dumps(value, ensure_ascii=True)

    key_items = [{"name": v["name"], "value": v["value"]} for v in keys["vectors"]]
    pairs = [{"a": c["a"], "b": c["b"]} for c in keys["comparisons"]]
    fields = ("method", "kind", "variant", "failure", "errorCode", "hasKey", "allowDuplicates")
    questions = [{name: c[name] for name in fields} for c in cases]
    return (
        "export const KEY_VECTORS: readonly { readonly name: string; readonly value: unknown }[] = "
        f"{literal(key_items)};\n"
        "export const COMPARISONS: readonly { readonly a: string; readonly b: string }[] = "
        f"{literal(pairs)};\n"
        "export const DECISION_CASES: readonly {\n"
        "  readonly method: string; readonly kind: string; readonly variant: string | null;\n"
        "  readonly failure: string; readonly errorCode: number | null; readonly hasKey: boolean;\n"
        "  readonly allowDuplicates: boolean;\n"
        f"}}[] = {literal(questions)};\n"
    )


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
    (work / "vectors.ts").write_text(typescript_vectors(key_vectors, decision_cases), encoding="utf-8")
    run([node, tsc, *TSC_FLAGS, "--outDir", "out", "harness.ts"], work)
    done = run([node, str(work / "out" / "harness.js")], work)
    data = json.loads(done.stdout)
    return Answers(data["keys"], data["decisions"], data["comparisons"], data["checks"], done.stdout)


# -- Rust ---------------------------------------------------------------------------------------------------------


def _option(value: str | None) -> str:
    return "None" if value is None else f"Some({rust_string(value)})"


def rust_vectors(keys: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """vectors.rs: the conformance data as Rust literals.

    A value that a Rust `&str` cannot hold (not a string, or a lone surrogate) becomes `None`: in Rust such a
    value never reaches the validator, because the JSON parser rejects it first.
    """
    lines = ["// Written by tests/sdk/conftest.py from generated/conformance/.", ""]
    lines.append("pub const KEY_VECTORS: &[KeyVector] = &[")
    for v in keys["vectors"]:
        holdable = isinstance(v["value"], str) and v.get("wellFormed", False)
        value = f"Some({rust_string(v['value'])})" if holdable else "None"
        lines.append(
            f"    KeyVector {{ name: {rust_string(v['name'])}, value: {value}, "
            f"valid: {str(v['valid']).lower()}, reason: {_option(v['reason'])} }},"
        )
    lines.append("];")
    lines.append("pub const COMPARISONS: &[(&str, &str)] = &[")
    lines += [f"    ({rust_string(c['a'])}, {rust_string(c['b'])})," for c in keys["comparisons"]]
    lines.append("];")
    lines.append("pub const DECISION_CASES: &[DecisionCase] = &[")
    for c in cases:
        lines.append(
            f"    DecisionCase {{ method: {rust_string(c['method'])}, kind: {rust_string(c['kind'])}, "
            f"variant: {_option(c['variant'])}, failure: {rust_string(c['failure'])}, "
            f"error_code: {'None' if c['errorCode'] is None else 'Some(' + str(c['errorCode']) + ')'}, "
            f"has_key: {str(c['hasKey']).lower()}, allow_duplicates: {str(c['allowDuplicates']).lower()} }},"
        )
    lines.append("];")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def rust_answers(
    tmp_path_factory: pytest.TempPathFactory, key_vectors: dict[str, Any], decision_cases: list[dict[str, Any]]
) -> Answers:
    """Compile the generated Rust with the harness under `rustc --test`, run it, and read its answers."""
    rustc = require_tool("rustc")
    work = tmp_path_factory.mktemp("rust")
    shutil.copy(RUST_SOURCE, work / "retry_policy.rs")
    shutil.copy(HERE / "harness.rs", work / "harness.rs")
    (work / "vectors.rs").write_text(rust_vectors(key_vectors, decision_cases), encoding="utf-8")
    run([rustc, "--edition", RUST_EDITION, "--test", "-D", "warnings", "-o", "harness", "harness.rs"], work)
    # The harness's one test prints the answers as JSON lines between markers; --nocapture lets them through.
    done = run([str(work / "harness"), "--nocapture", "--test-threads", "1"], work)
    data = json.loads(done.stdout.split("ANSWERS-BEGIN\n", 1)[1].split("ANSWERS-END", 1)[0])
    return Answers(data["keys"], data["decisions"], data["comparisons"], {}, done.stdout)
