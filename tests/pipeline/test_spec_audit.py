"""The real spec against DESIGN.md's audit: 33 entries, the right classes, in every artifact.

Issue 12 re-examined five classes against the upstream method texts: session/cancel became unsafe (a late copy
cancels newer work); session/resume, session/close, tool_call/cancel and terminal/cancel stayed safe with
precise texts. Issue 25 made session/request_permission safe and elicitation/create unsafe (each copy asks the
user again), so that the duplicating methods are session/new and session/fork alone, as the RFD counts them
(tests/upstream/test_rfd_audit.py reads that statement from the RFD).
"""

from __future__ import annotations

import json
from pathlib import Path

from generator import paths

ROOT = Path(__file__).resolve().parents[2]
# (method, kind) -> class, from the method audit (26 requests, 7 notifications)
AUDIT = {
    ("initialize", "request"): "safe",
    ("auth/login", "request"): "safe",
    ("auth/logout", "request"): "safe",
    ("auth/status", "request"): "safe",
    ("session/new", "request"): "duplicating",
    ("session/fork", "request"): "duplicating",
    ("session/list", "request"): "safe",
    ("session/resume", "request"): "safe",
    ("session/close", "request"): "safe",
    ("session/delete", "request"): "safe",
    ("session/archive", "request"): "safe",
    ("session/unarchive", "request"): "safe",
    ("session/status", "request"): "safe",
    ("session/set_title", "request"): "safe",
    ("session/set_config_option", "request"): "safe",
    ("session/prompt", "request"): "keyed",
    ("tool_call/cancel", "request"): "safe",
    ("terminal/cancel", "request"): "safe",
    ("providers/list", "request"): "safe",
    ("providers/set", "request"): "safe",
    ("providers/disable", "request"): "safe",
    ("session/request_permission", "request"): "safe",
    ("elicitation/create", "request"): "unsafe",
    ("mcp/message", "request"): "unsafe",
    ("proxy/initialize", "request"): "safe",
    ("proxy/successor", "request"): "unsafe",
    ("session/cancel", "notification"): "unsafe",
    ("session/update", "notification"): "unsafe",
    ("elicitation/complete", "notification"): "safe",
    ("auth/status_update", "notification"): "safe",
    ("$/cancel_request", "notification"): "safe",
    ("mcp/message", "notification"): "unsafe",
    ("proxy/successor", "notification"): "unsafe",
}


def test_policy_has_every_audited_entry_with_its_class() -> None:
    policy = json.loads((ROOT / paths.POLICY).read_text())
    got = {(r["method"], r["kind"]): r["class"] for r in policy["methods"]}
    assert got == AUDIT
    prompt = next(r for r in policy["methods"] if r["method"] == "session/prompt")
    assert prompt["keyParam"] == "idempotencyKey"


def test_session_update_variants() -> None:
    policy = json.loads((ROOT / paths.POLICY).read_text())
    update = next(r for r in policy["methods"] if r["method"] == "session/update")
    variants = {v["name"]: v for v in update["variants"]}
    assert len(variants) == 23
    assert sum(v["stability"] == "stable" for v in variants.values()) == 19
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
