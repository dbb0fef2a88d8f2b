"""The generated retry module: `may_resend` for every class, failure kind and key state, checked against the
decisions in retry-policy.json (which the spec gives), and the table against the spec's audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp_v2_schema import load_policy
from acp_v2_schema.retry import (
    CODED_FAILURES,
    DECISIONS,
    ERROR_DECISIONS,
    OTHER_ERROR_DECISIONS,
    POLICY,
    Decision,
    FailureKind,
    RetryClass,
    may_resend,
    retry_class,
)

from generator import paths

ROOT = Path(__file__).resolve().parents[2]
POLICY_JSON = json.loads((ROOT / paths.POLICY).read_text())


def _expected(decision: str, has_key: bool, allow: bool) -> bool:
    return {"always": True, "with-key": has_key, "opt-in": allow, "never": False}[decision]


def _example_method(cls: str) -> tuple[str, str]:
    row = next((r for r in POLICY_JSON["methods"] if r["class"] == cls), None)
    if row is None:  # the spec may leave a class unused
        pytest.skip(f"no method has the class {cls!r}")
    return row["method"], row["kind"]


CODED = [f["name"] for f in POLICY_JSON["failureKinds"] if f["byErrorCode"]]
ERROR_ROWS = [*POLICY_JSON["errorCodes"]["codes"], POLICY_JSON["errorCodes"]["otherCodes"]]


@pytest.mark.parametrize("cls", [c["name"] for c in POLICY_JSON["classes"]])
@pytest.mark.parametrize("failure", [f["name"] for f in POLICY_JSON["failureKinds"] if not f["byErrorCode"]])
@pytest.mark.parametrize("has_key", [False, True])
@pytest.mark.parametrize("allow", [False, True])
def test_may_resend_follows_the_class_decision(cls: str, failure: str, has_key: bool, allow: bool) -> None:
    method, kind = _example_method(cls)
    decision = next(c for c in POLICY_JSON["classes"] if c["name"] == cls)["decisions"][failure]
    got = may_resend(method, kind, failure, has_key, allow_duplicates=allow)
    assert got is _expected(decision, has_key, allow)
    assert may_resend(method, kind, FailureKind(failure), has_key, allow_duplicates=allow) is got


@pytest.mark.parametrize("cls", [c["name"] for c in POLICY_JSON["classes"]])
@pytest.mark.parametrize("row", ERROR_ROWS, ids=lambda r: str(r.get("code", "other")))
@pytest.mark.parametrize("has_key", [False, True])
def test_error_responses_follow_the_code_row(cls: str, row: dict, has_key: bool) -> None:
    method, kind = _example_method(cls)
    code = row.get("code", -1)  # -1: a code the table does not list
    for failure in CODED:
        got = may_resend(method, kind, failure, has_key, error_code=code, allow_duplicates=True)
        assert got is _expected(row["decisions"][cls], has_key, True)
        if not row["resendHelps"]:
            assert got is False


def test_error_code_tables_match_the_policy_document() -> None:
    assert {f.value for f in CODED_FAILURES} == set(CODED)
    assert {str(code) for code in ERROR_DECISIONS} == {str(r["code"]) for r in POLICY_JSON["errorCodes"]["codes"]}
    for row in POLICY_JSON["errorCodes"]["codes"]:
        assert {c.value: d.value for c, d in ERROR_DECISIONS[row["code"]].items()} == row["decisions"]
    other = POLICY_JSON["errorCodes"]["otherCodes"]["decisions"]
    assert {c.value: d.value for c, d in OTHER_ERROR_DECISIONS.items()} == other


def test_the_cases_that_matter_most() -> None:
    # Only what the RFD and the design fix: session/prompt is the keyed method, session/new a duplicating one, a
    # -32602 is never resent, and a message that was not sent may always go. Every other class is the spec's call.
    assert may_resend("session/prompt", "request", "no-response", has_key=False) is False
    assert may_resend("session/prompt", "request", "no-response", has_key=True) is True
    assert may_resend("session/prompt", "request", "error-response", has_key=True, error_code=-32602) is False
    assert may_resend("session/new", "request", "no-response", has_key=False) is False
    assert may_resend("session/new", "request", "no-response", has_key=False, allow_duplicates=True) is True
    for method, kind in POLICY:
        assert may_resend(method, kind, "not-sent", has_key=False) is True
        cls = POLICY[(method, kind)].retry_class.value
        never = _decision(cls, "no-response") == "never"
        assert may_resend(method, kind, "no-response", has_key=True, allow_duplicates=True) is not never


def _decision(cls: str, failure: str) -> str:
    return next(c for c in POLICY_JSON["classes"] if c["name"] == cls)["decisions"][failure]


def test_variants_and_unknown_methods() -> None:
    least_forgiving = RetryClass(POLICY_JSON["classes"][-1]["name"])  # the fallback: the last class in order
    for row in POLICY_JSON["methods"]:
        for variant in row.get("variants", []):
            method, kind, name = row["method"], row["kind"], variant["name"]
            assert retry_class(method, kind, name) is RetryClass(variant["class"])
            always = _decision(variant["class"], "no-response") == "always"
            assert may_resend(method, kind, "no-response", False, variant=name) is always
            # a variant the spec does not know (a later version's) gets the least forgiving class
            assert retry_class(method, kind, "_future_variant") is least_forgiving
    # extensions and methods from a newer version get the least forgiving class
    assert retry_class("_zed/custom") is least_forgiving
    assert may_resend("_zed/custom", "request", "no-response", has_key=True) is (
        _decision(least_forgiving.value, "no-response") == "always"
    )


def test_table_matches_the_policy_document() -> None:
    assert load_policy() == POLICY_JSON
    assert len(POLICY) == len(POLICY_JSON["methods"]) == len(list((ROOT / "spec" / "methods").glob("*.yaml")))
    for row in POLICY_JSON["methods"]:
        entry = POLICY[(row["method"], row["kind"])]
        assert entry.retry_class.value == row["class"]
        assert entry.key_param == row["keyParam"]
        assert entry.success_equivalent_errors == tuple(e["code"] for e in row["successEquivalentErrors"])
        assert dict(entry.variants) == {v["name"]: RetryClass(v["class"]) for v in row.get("variants", [])}
    for cls in RetryClass:
        assert set(DECISIONS[cls]) == set(FailureKind) - CODED_FAILURES
        assert all(isinstance(d, Decision) for d in DECISIONS[cls].values())


def test_table_is_immutable() -> None:
    with pytest.raises(TypeError):
        POLICY[("x", "request")] = POLICY[("session/prompt", "request")]  # type: ignore[index]
    with pytest.raises(TypeError):
        DECISIONS[RetryClass.SAFE][FailureKind.NO_RESPONSE] = Decision.NEVER  # type: ignore[index]
