"""Golden output per fixture spec: every artifact, byte for byte. Regenerate with `make golden`."""

from __future__ import annotations

import pytest

from tests.regen import golden_outputs
from tests.support import GOLDEN_COMMAND, SPEC_FIXTURES, fixture_cases, golden_mismatch


@pytest.mark.parametrize("case", fixture_cases(SPEC_FIXTURES))
def test_output_matches_golden(case: str) -> None:
    expected_dir = SPEC_FIXTURES / case / "expected"
    expected = {
        p.relative_to(expected_dir).as_posix(): p.read_bytes() for p in sorted(expected_dir.rglob("*")) if p.is_file()
    }
    actual = golden_outputs(case)
    missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
    assert not missing and not extra, (
        f"the set of generated files changed (no longer generated: {missing}; new: {extra}); "
        f"run `{GOLDEN_COMMAND}` and review the diff"
    )
    differing = [
        golden_mismatch(f"{case}/{rel}", expected[rel], actual[rel]) for rel in expected if actual[rel] != expected[rel]
    ]
    assert not differing, "\n\n".join(differing)
