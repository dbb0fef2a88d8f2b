"""The classes of the method files reach every artifact: the retry policy, the pages, the schema bundles.

Whether the classes are the right ones is checked against the design's method table and the RFD's audit, both read
from ../shared/ at test time (tests/upstream/test_rfd_audit.py); no copy of either is kept here, so a maintainer's
new method needs no edit of this file.
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
    # The classes themselves are checked against the design's table and the RFD in tests/upstream/test_rfd_audit.py
    # (read from ../shared/ at test time); here, that the table carries exactly what the method files say.
    spec = _spec()
    policy = json.loads((ROOT / paths.POLICY).read_text())
    got = {(r["method"], r["kind"]): (r["class"], r.get("keyParam")) for r in policy["methods"]}
    assert got == {(m.name, m.kind): (m.retry_class, m.key_param) for m in spec.methods}


def test_session_update_variants() -> None:
    spec = _spec()
    (update,) = [m for m in spec.methods if m.name == "session/update"]
    policy = json.loads((ROOT / paths.POLICY).read_text())
    row = next(r for r in policy["methods"] if r["method"] == "session/update")
    variants = {v["name"]: v for v in row["variants"]}
    assert sorted(variants) == sorted(v.name for v in update.variants)
    # The design's rule for the variants: whatever appends (every *_chunk) or shows again (notice) is unsafe, and
    # every variant that replaces or removes state is safe.
    for name, v in variants.items():
        expected = "unsafe" if name.endswith("_chunk") or name == "notice" else "safe"
        assert v["class"] == expected, name


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
