"""The generated TypeScript, compiled with the pinned `tsc` (strict and then some) and run with node."""

from __future__ import annotations

import shutil
from typing import Any

from tests.sdk.agreement import comparison_mismatches, decision_mismatches, key_mismatches
from tests.sdk.conftest import Answers


def test_types_and_freezing_hold_at_compile_and_run_time(typescript_answers: Answers) -> None:
    assert typescript_answers.checks, "the harness ran no checks"
    assert {name for name, ok in typescript_answers.checks.items() if not ok} == set()


def test_key_validator_passes_every_vector(typescript_answers: Answers, key_vectors: dict[str, Any]) -> None:
    assert all(answer["held"] for answer in typescript_answers.keys)  # JavaScript strings hold lone surrogates too
    assert key_mismatches(typescript_answers.keys, key_vectors["vectors"]) == []


def test_keys_compare_by_code_points(typescript_answers: Answers, key_vectors: dict[str, Any]) -> None:
    assert comparison_mismatches(typescript_answers.comparisons, key_vectors["comparisons"]) == []


def test_may_resend_passes_every_case(typescript_answers: Answers, decision_cases: list[dict[str, Any]]) -> None:
    assert decision_mismatches(typescript_answers.decisions, decision_cases) == []


def test_table_compiles_under_the_default_target(tmp_path) -> None:
    """An SDK may include the table as it is: no `target` or `lib` setting may be needed to compile it."""
    from tests.sdk.conftest import TS_SOURCE, TSC, TSC_FLAGS, require_tool, run

    node = require_tool("node")
    tsc = require_tool("tsc", TSC)
    flags = [flag for flag in TSC_FLAGS if flag not in ("--target", "es2020")]
    shutil.copy(TS_SOURCE, tmp_path / "retry-policy.ts")
    run([node, tsc, *flags, "--noEmit", "retry-policy.ts"], tmp_path)
