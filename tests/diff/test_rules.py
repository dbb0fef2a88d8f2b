"""Each rule has a fixture pair whose report (text and JSON) and exit status match the reviewed expectation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.diff.report import JSON_KEYS
from generator.diff.rules import BREAKING, RULES
from tests.diff.support import CASES, case_names, run_case

LINE = re.compile(r"^\S+:\d+:\d+: (breaking|compatible|unstable|accepted)\[[a-z-]+\]: .+$")


def test_every_rule_has_a_fixture_pair_that_reports_it() -> None:
    names = set(case_names())
    for rule in RULES:
        assert rule.id in names, f"rule {rule.id} has no fixture pair under {CASES}"
        expected = (CASES / rule.id / "expected.txt").read_text()
        assert f"[{rule.id}]" in expected, f"the fixture pair of {rule.id} does not report it"


@pytest.mark.parametrize("case", case_names())
def test_fixture_pair(case: str, tmp_path: Path) -> None:
    status, text, err = run_case(case, tmp_path / "text", "text")
    assert "Traceback" not in err
    assert text == (CASES / case / "expected.txt").read_text(), "report changed; run `make golden` and review"
    assert status == int((CASES / case / "expected.status").read_text())
    lines = text.splitlines()
    assert all(LINE.match(line) for line in lines), lines
    assert status == (1 if any(f" {BREAKING}[" in line for line in lines) else 0)

    status_json, out, _ = run_case(case, tmp_path / "json", "json")
    assert status_json == status
    rows = json.loads(out)
    assert out == (CASES / case / "expected.json").read_text()
    assert all(tuple(row) == JSON_KEYS for row in rows)
    # the two formats say the same thing, in the same order
    assert [
        f"{r['path']}:{r['line']}:{r['column']}: {r['severity']}[{r['rule']}]: {r['message']}" for r in rows
    ] == lines
    assert all(r["message"].startswith(r["subject"] + ":") for r in rows)
