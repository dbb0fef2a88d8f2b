"""The upstream audit: the spec differs from the pinned published schema only where the spec says so."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from generator.audit import command as audit
from generator.pipeline import load_spec
from tests.support import ROOT, run_generator
from tests.upstream.deliberate import deliberate

from .conftest import Upstream

SPEC = ROOT / "spec"


def test_only_listed_differences(upstream: Upstream) -> None:
    report = audit.run_audit(SPEC, ROOT, upstream.unstable_path, upstream.stable_path)
    assert report.unlisted == [], "\n".join(d.line() for d in report.unlisted)
    assert report.stale == [], [item.difference for item in report.stale]
    assert {d.line() for d in report.found} == {item.difference for item in report.listed}


def test_every_published_entry_has_a_retry_class(upstream: Upstream) -> None:
    spec = load_spec(SPEC, ROOT)
    ours = {(m.name, m.kind): (m.params, m.result) for m in spec.methods}
    listed = deliberate()  # a type of upstream's that we name differently is listed as theirs only, ours as ours
    for key, entry in audit.published_entries(upstream.schema).items():
        assert key in ours, key
        for mine, theirs in zip(ours[key], (entry.params, entry.result), strict=True):
            assert mine == theirs or (theirs in listed.theirs_only and mine in listed.types), (key, mine, theirs)


def test_the_command_line_exits_0(upstream: Upstream) -> None:
    run = run_generator("audit", str(upstream.unstable_path), "--root", str(ROOT))
    assert run.status == 0, run.out + run.err
    assert "0 not listed" in run.out


def test_shape_changes_are_found(upstream: Upstream, tmp_path: Path) -> None:
    """Each kind of wire difference the audit promises, planted in a copy of the published schema."""
    changed = copy.deepcopy(upstream.schema)
    defs = changed["$defs"]
    defs["Usage"]["properties"]["extraTokens"] = {"type": "integer"}
    defs["Cost"]["required"] = ["amount"]
    defs["TerminalSize"]["properties"]["cols"]["type"] = "string"
    defs["Error"]["properties"]["message"]["type"] = ["string", "null"]
    defs["ElicitationSchema"]["additionalProperties"] = False
    defs["SessionId"]["minLength"] = 1
    del defs["SetSessionTitleRequest"]["x-method"]
    path = tmp_path / "schema.unstable.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    lines = {d.line() for d in audit.run_audit(SPEC, ROOT, path, upstream.stable_path).unlisted}
    assert "type Usage: property extraTokens only there (optional) [in schema.unstable.json only]" in lines
    assert "type Cost.currency: required here, optional there [in schema.unstable.json only]" in lines
    assert 'type TerminalSize.cols: type here "integer", there "string" [in schema.unstable.json only]' in lines
    assert "type Error.message: nullable there, not here [in schema.unstable.json only]" in lines
    assert (
        "type ElicitationSchema: additionalProperties here absent, there false [in schema.unstable.json only]" in lines
    )
    assert "type SessionId: minLength here absent, there 1 [in schema.unstable.json only]" in lines
    assert "method session/set_title (request): params type only here [in schema.unstable.json only]" in lines


def test_a_missing_method_and_a_stale_listing_fail(upstream: Upstream, tmp_path: Path) -> None:
    changed = copy.deepcopy(upstream.schema)
    changed["$defs"]["PromptRequest"]["properties"]["idempotencyKey"] = changed["$defs"]["SessionId"]
    changed["$defs"]["FutureThingRequest"] = {"type": "object", "x-method": "future/thing", "x-side": "agent"}
    path = tmp_path / "schema.unstable.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    report = audit.run_audit(SPEC, ROOT, path, upstream.stable_path)
    assert not report.ok
    assert (
        "method future/thing (request): published there, but has no retry class here [in schema.unstable.json only]"
        in {d.line() for d in report.unlisted}
    )
    assert "type PromptRequest: property idempotencyKey only here (optional)" in {i.difference for i in report.stale}


def _stable_copy(upstream: Upstream, tmp_path: Path, change: Any) -> Path:
    """The published pair in `tmp_path`, the stable file changed by `change`."""
    (tmp_path / "schema.unstable.json").write_bytes(upstream.unstable_path.read_bytes())
    stable = upstream.stable
    change(stable["$defs"], upstream.schema["$defs"])
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(stable), encoding="utf-8")
    return path


def test_the_stable_files_are_compared_and_stability_differences_found(upstream: Upstream, tmp_path: Path) -> None:
    """Stable with stable: a def or property stable there but unstable here is found, and so is a leak."""

    def change(stable: dict[str, Any], every: dict[str, Any]) -> None:
        stable["Usage"] = every["Usage"]  # a def upstream would call stable
        stable["SessionCapabilities"]["properties"]["fork"] = every["SessionCapabilities"]["properties"]["fork"]
        del stable["Cost"]  # a def upstream would call unstable
        del stable["SessionInfo"]["properties"]["title"]
        stable["Implementation"]["required"] = ["name"]

    stable_path = _stable_copy(upstream, tmp_path, change)
    report = audit.run_audit(SPEC, ROOT, tmp_path / "schema.unstable.json", stable_path)
    lines = {d.line() for d in report.unlisted}
    assert "type Usage: unstable here, stable there" in lines
    assert "type SessionCapabilities.fork: unstable here, stable there" in lines
    assert "type Cost: stable here, unstable there" in lines
    assert "type SessionInfo.title: stable here, unstable there" in lines
    assert "type Implementation.version: required here, optional there [in schema.json only]" in lines
    assert not report.ok


def test_our_stable_file_is_the_published_stable_surface(upstream: Upstream) -> None:
    """Every def and property of the published stable file is in ours and stable, and ours adds only what is listed."""
    spec = load_spec(SPEC, ROOT)
    found = audit.compare(spec, upstream.schema, upstream.stable)
    assert not [d for d in found if d.what.endswith(" there") and "stable" in d.what], found
    ours = json.loads((ROOT / "generated" / "schema" / "schema.json").read_text(encoding="utf-8"))["$defs"]
    assert set(upstream.stable["$defs"]) <= set(ours)
    listed = {item.difference for item in audit.listed_in(spec)}
    for name in sorted(set(ours) - set(upstream.stable["$defs"])):
        assert f"type {name}: defined here only" in listed, name


def test_a_method_stability_difference_names_no_file(upstream: Upstream, tmp_path: Path) -> None:
    # An unstable request of ours whose params type upstream publishes under the same name, unstable there too.
    theirs, stable_defs = upstream.schema["$defs"], upstream.stable["$defs"]
    method = next(
        m
        for m in sorted(load_spec(SPEC, ROOT).methods, key=lambda m: m.name)
        if m.stability == "unstable" and m.kind == "request" and m.params in theirs and m.params not in stable_defs
    )

    def change(stable: dict[str, Any], every: dict[str, Any]) -> None:
        stable[method.params] = every[method.params]  # the method is stable there

    stable_path = _stable_copy(upstream, tmp_path, change)
    lines = {d.line() for d in audit.run_audit(SPEC, ROOT, tmp_path / "schema.unstable.json", stable_path).unlisted}
    assert f"method {method.name} (request): unstable here, stable there" in lines
    assert f"type {method.params}: unstable here, stable there" in lines


def test_the_command_line_needs_both_published_files(upstream: Upstream, tmp_path: Path) -> None:
    alone = tmp_path / "schema.unstable.json"
    alone.write_bytes(upstream.unstable_path.read_bytes())
    run = run_generator("audit", str(alone), "--root", str(ROOT))
    assert run.status == 2 and "pass it with --stable" in run.err, run.out + run.err
    paired = run_generator("audit", str(alone), "--stable", str(upstream.stable_path), "--root", str(ROOT))
    assert paired.status == 0, paired.out + paired.err


def test_a_method_the_envelope_order_leaves_out_follows_and_the_audit_names_it(
    upstream: Upstream, tmp_path: Path
) -> None:
    """A method of ours needs no place in ACP's order (it follows the listed ones); an ACP method left out of it
    generates, and the audit names it out of its published place."""
    root = tmp_path / "repo"
    shutil.copytree(SPEC, root / "spec", symlinks=True)
    envelopes = root / "spec/types/envelopes.yaml"
    text = envelopes.read_text(encoding="utf-8")
    assert text.count("        - initialize\n") == 1
    envelopes.write_text(text.replace("        - initialize\n", "", 1), encoding="utf-8")
    assert run_generator("validate", "--root", str(root)).status == 0
    lines = {
        d.line() for d in audit.run_audit(root / "spec", root, upstream.unstable_path, upstream.stable_path).unlisted
    }
    assert any("another order" in line for line in lines), lines
