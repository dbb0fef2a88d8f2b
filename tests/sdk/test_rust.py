"""The generated Rust, compiled by `rustc` as a warning-free library and under `--test` with a harness."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.sdk.agreement import comparison_mismatches, decision_mismatches, key_mismatches
from tests.sdk.conftest import RUST_EDITION, RUST_SOURCE, Answers, require_tool, run


def test_harness_tests_pass(rust_answers: Answers) -> None:
    assert "test result: ok." in rust_answers.output


def test_key_validator_passes_every_vector(rust_answers: Answers, key_vectors: dict[str, Any]) -> None:
    assert key_mismatches(rust_answers.keys, key_vectors["vectors"]) == []
    held = [v["name"] for v, a in zip(key_vectors["vectors"], rust_answers.keys, strict=True) if a["held"]]
    assert len(held) > len(key_vectors["vectors"]) // 2, "most vectors must reach the Rust validator"


def test_keys_compare_by_code_points(rust_answers: Answers, key_vectors: dict[str, Any]) -> None:
    assert comparison_mismatches(rust_answers.comparisons, key_vectors["comparisons"]) == []


def test_may_resend_passes_every_case(rust_answers: Answers, decision_cases: list[dict[str, Any]]) -> None:
    assert decision_mismatches(rust_answers.decisions, decision_cases) == []


def test_library_builds_without_warnings_and_is_formatted(tmp_path: Path) -> None:
    rustc = require_tool("rustc")
    shutil.copy(RUST_SOURCE, tmp_path / "retry_policy.rs")
    args = [rustc, "--edition", RUST_EDITION, "--crate-type", "lib", "-D", "warnings", "retry_policy.rs"]
    run([*args, "-o", "libretry_policy.rlib"], tmp_path)
    rustfmt = require_tool("rustfmt")
    run([rustfmt, "--edition", RUST_EDITION, "--check", "retry_policy.rs"], tmp_path)
