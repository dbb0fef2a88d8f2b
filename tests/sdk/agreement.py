"""Compare one language's answers with the expected outcomes of the shared conformance vectors."""

from __future__ import annotations

from typing import Any


def key_mismatches(answers: list[dict[str, Any]], vectors: list[dict[str, Any]]) -> list[str]:
    """One line per vector whose answer differs from its expected outcome."""
    assert len(answers) == len(vectors), "the harness answered a different number of key vectors"
    problems = []
    for answer, vector in zip(answers, vectors, strict=True):
        if not answer["held"]:
            # A language that cannot hold the value as a string (Rust's str: not a string, or not well-formed
            # Unicode) rejects it while parsing JSON, before any key check: the same outcome, an invalid key.
            holdable = isinstance(vector["value"], str) and vector["wellFormed"]
            if vector["valid"] or holdable:
                problems.append(f"{vector['name']}: the harness could not hold it, but every SDK must")
            continue
        if (answer["valid"], answer["reason"]) != (vector["valid"], vector["reason"]):
            got = "valid" if answer["valid"] else answer["reason"]
            problems.append(f"{vector['name']}: expected {vector['reason'] or 'valid'}, got {got}")
    return problems


def decision_mismatches(answers: list[bool], cases: list[dict[str, Any]]) -> list[str]:
    """One line per retry-decision case whose answer differs from `mayResend` in the vectors."""
    assert len(answers) == len(cases), "the harness answered a different number of decision cases"
    return [
        f"{c['method']} {c['kind']} variant={c['variant']} {c['failure']} code={c.get('errorCode')} "
        f"hasKey={c['hasKey']} "
        f"allowDuplicates={c['allowDuplicates']}: expected {c['mayResend']}, got {answer}"
        for answer, c in zip(answers, cases, strict=True)
        if answer is not c["mayResend"]
    ]


def comparison_mismatches(answers: list[bool], comparisons: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c['a']!r} vs {c['b']!r}: expected same={c['same']}, got {answer}"
        for answer, c in zip(answers, comparisons, strict=True)
        if answer is not c["same"]
    ]
