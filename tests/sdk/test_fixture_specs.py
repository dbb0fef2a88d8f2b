"""The SDK renderers on the small fixture specs: a spec without `IdempotencyKey` (minimal) or with only a few
entries (keyed) must still give TypeScript and Rust that compile cleanly, and vectors that read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.pipeline import load_spec
from generator.render.sdk import rust, typescript, vectors
from generator.render.sdk import tables as sdk
from tests.sdk.conftest import RUST_EDITION, TSC, TSC_FLAGS, require_tool, run
from tests.support import SPEC_FIXTURES, fixture_cases, make_project

CASES = fixture_cases(SPEC_FIXTURES)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """The SDK files of every fixture spec, by case."""
    out = {}
    for case in CASES:
        root = make_project(tmp_path_factory.mktemp(case), case)
        out[case] = sdk.render_code(load_spec(root / "spec", root))
    return out


def test_typescript_compiles(rendered: dict[str, dict[str, str]], tmp_path: Path) -> None:
    node = require_tool("node")
    tsc = require_tool("tsc", TSC)
    for case, files in rendered.items():  # one tsc run for all cases: starting the compiler is the slow part
        (tmp_path / case).mkdir()
        (tmp_path / case / "retry-policy.ts").write_text(files[typescript.TS_PATH], encoding="utf-8")
    run([node, tsc, *TSC_FLAGS, "--noEmit", *(f"{case}/retry-policy.ts" for case in rendered)], tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_rust_compiles_without_warnings(case: str, rendered: dict[str, dict[str, str]], tmp_path: Path) -> None:
    rustc = require_tool("rustc")
    (tmp_path / "retry_policy.rs").write_text(rendered[case][rust.RUST_PATH], encoding="utf-8")
    run([rustc, "--edition", RUST_EDITION, "--crate-type", "lib", "-D", "warnings", "retry_policy.rs"], tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_key_parts_follow_the_spec(case: str, rendered: dict[str, dict[str, str]]) -> None:
    files = rendered[case]
    has_key_type = any("IdempotencyKey:" in p.read_text() for p in (SPEC_FIXTURES / case / "spec").rglob("*.yaml"))
    assert (vectors.KEY_VECTORS_PATH in files) is has_key_type
    assert ("validate_idempotency_key" in files[rust.RUST_PATH]) is has_key_type
    assert ("isValidIdempotencyKey" in files[typescript.TS_PATH]) is has_key_type
    for path, text in files.items():
        if path.endswith(".json"):
            assert json.loads(text)["$comment"].startswith("@generated")
