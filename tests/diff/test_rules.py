"""Each rule has a fixture pair whose report (text and JSON) and exit status match the reviewed expectation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.compat_rules import BREAKING, BY_ID, RULES
from generator.diff.report import JSON_KEYS
from tests.diff.support import CASES, build_side, case_names, run_case
from tests.support import run_generator

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


@pytest.mark.parametrize("case", [r.id for r in RULES if r.reverse is not None])
def test_a_fixture_pair_read_backwards_reports_the_reverse_rule(case: str, tmp_path: Path) -> None:
    """Swap OLD and NEW: the same subject is reported by the rule's reverse (or by a rule whose reverse it is)."""
    _, forward, _ = run_case(case, tmp_path / "forward", "json")
    build_side(tmp_path / "backward", case, "old")
    build_side(tmp_path / "backward", case, "new")
    extra_file = CASES / case / "args"
    extra = extra_file.read_text().split() if extra_file.exists() else []
    back = tmp_path / "backward"
    result = run_generator(
        "diff", str(back / "new"), str(back / "old"), "--root", str(back), "--format", "json", *extra
    )
    backward = json.loads(result.out)
    rule = BY_ID[case]
    for f in (row for row in json.loads(forward) if row["rule"] == case):
        partners = [
            g
            for g in backward
            if g["subject"] == f["subject"] and (g["rule"] == rule.reverse or BY_ID[g["rule"]].reverse == case)
        ]
        assert partners, f"{f['message']}: nothing reports it backwards in {[g['message'] for g in backward]}"
        g = partners[0]
        back = BY_ID[g["rule"]]
        if case.startswith("method-stability-"):
            # unstable-ness follows OLD's stability, which is exactly what these rules flip
            assert {f["severity"], g["severity"]} == {"unstable", "breaking"}
        elif f["severity"] == "unstable":
            assert g["severity"] == "unstable"
        elif not rule.direction_aware and not back.direction_aware:
            # the registry's severities hold both ways; a rule and its reverse differ where the registry says so
            assert (f["severity"], g["severity"]) == (rule.read, back.read)


@pytest.mark.parametrize("case", case_names())
def test_skipping_unchanged_types_reports_the_same(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare` skips the types that are the same on both sides, with all they reach; walking them anyway (no type
    skipped) must find exactly the same changes."""
    from generator.diff.compare import compare
    from generator.diff.schemas import TypeComparer
    from generator.diff.sources import load_spec_dir

    old, new = (load_spec_dir(build_side(tmp_path, case, side), tmp_path, label=side) for side in ("old", "new"))
    skipped = compare(old, new, include_all=True)
    monkeypatch.setattr(TypeComparer, "unchanged", lambda self: set())
    assert compare(old, new, include_all=True) == skipped
