"""Golden output per fixture spec: every artifact, byte for byte. Regenerate with `make golden`."""

from __future__ import annotations

import pytest

from tests.regen import golden_outputs
from tests.support import SPEC_FIXTURES

CASES = sorted(p.name for p in SPEC_FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES)
def test_output_matches_golden(case: str) -> None:
    expected_dir = SPEC_FIXTURES / case / "expected"
    expected = {
        p.relative_to(expected_dir).as_posix(): p.read_bytes() for p in sorted(expected_dir.rglob("*")) if p.is_file()
    }
    actual = golden_outputs(case)
    assert sorted(actual) == sorted(expected), "the set of generated files changed; run `make golden`"
    for rel in expected:
        assert actual[rel] == expected[rel], f"{rel} differs from its golden copy; run `make golden` and review"
