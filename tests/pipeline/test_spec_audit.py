"""The classes of the method files reach every artifact: the retry policy, the pages, the schema bundles.

Which class a method has is the spec's call; only the sets the RFD fixes (its keyed and duplicating methods) are
checked against the RFD, read from ../shared/ at test time (tests/upstream/test_rfd_audit.py). Nothing here names a
method's class, so a maintainer's new method or changed class needs no edit of this file.
"""

from __future__ import annotations

import json
from pathlib import Path

from generator import paths

ROOT = Path(__file__).resolve().parents[2]


def _spec():
    from generator.pipeline import load_spec

    return load_spec(ROOT / "spec", ROOT)


def test_policy_has_every_entry_with_the_class_of_its_method_file() -> None:
    # That the table carries exactly what the method files say; the RFD's sets: tests/upstream/test_rfd_audit.py.
    spec = _spec()
    policy = json.loads((ROOT / paths.POLICY).read_text())
    got = {(r["method"], r["kind"]): (r["class"], r.get("keyParam")) for r in policy["methods"]}
    assert got == {(m.name, m.kind): (m.retry_class, m.key_param) for m in spec.methods}


def test_every_variant_has_the_class_of_its_method_file() -> None:
    spec = _spec()
    policy = json.loads((ROOT / paths.POLICY).read_text())
    for method in spec.methods:
        row = next(r for r in policy["methods"] if (r["method"], r["kind"]) == (method.name, method.kind))
        got = {v["name"]: v["class"] for v in row.get("variants", [])}
        assert got == {v.name: v.retry_class for v in method.variants}, method.title


def test_every_entry_has_a_page_and_schemas_pass_the_meta_schema() -> None:
    from jsonschema import Draft202012Validator

    policy = json.loads((ROOT / paths.POLICY).read_text())
    for row in policy["methods"]:
        page = ROOT / "site" / (row["page"].rstrip("/") + ".md")
        assert page.is_file(), page
        assert row["class"] in page.read_text()
    for path in (paths.SCHEMA_STABLE, paths.SCHEMA_UNSTABLE):
        Draft202012Validator.check_schema(json.loads((ROOT / path).read_text()))


def test_unstable_bundle_marks_method_types() -> None:
    bundle = json.loads((ROOT / paths.SCHEMA_UNSTABLE).read_text())
    prompt = bundle["$defs"]["PromptRequest"]
    assert (prompt["x-method"], prompt["x-side"], prompt["x-retry-class"]) == ("session/prompt", "agent", "keyed")
    assert bundle["$comment"].startswith("@generated")
