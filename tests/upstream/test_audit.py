"""The upstream audit: the spec differs from the pinned published schema only where the spec says so."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

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
        if key in listed.left_out:
            assert key not in ours, f"{key} is listed as left out, yet the spec has it"
            continue
        assert key in ours, key
        for mine, theirs in zip(ours[key], (entry.params, entry.result), strict=True):
            assert mine == theirs or (theirs in listed.theirs_only and mine in listed.types), (key, mine, theirs)


def test_the_command_line_exits_0(upstream: Upstream) -> None:
    run = run_generator("audit", str(upstream.unstable_path), "--root", str(ROOT))
    assert run.status == 0, run.out + run.err
    assert "0 not listed" in run.out


def _quiet(upstream: Upstream) -> tuple[dict[str, Any], dict[str, Any]]:
    """The published defs the audit finds no difference in (the same name and wire shape here, in both files):
    those of the full file, and those of the stable file, by name.

    The probes below are planted in these, chosen by shape, never by name: a maintainer may rename or reshape any
    def of ours (and list the difference), and each planted change stays the only difference of its def."""
    spec = load_spec(SPEC, ROOT)
    lines = [d.line() for d in audit.compare(spec, upstream.schema, upstream.stable)]
    noisy = {named.group(1) for line in lines if (named := re.match(r"type (\w+)", line))}
    for method in spec.methods:  # a method's own differences are told by method, its types' by type
        if any(line.startswith(f"method {method.name} ") for line in lines):
            noisy.update(t for t in (method.params, method.result) if t)
    generated = ROOT / "generated" / "schema"
    ours = json.loads((generated / "schema.unstable.json").read_text(encoding="utf-8"))["$defs"]
    ours_stable = json.loads((generated / "schema.json").read_text(encoding="utf-8"))["$defs"]
    noisy |= _bases(upstream.schema)
    every = {n: d for n, d in sorted(upstream.schema["$defs"].items()) if n in ours and n not in noisy}
    stable = {n: d for n, d in sorted(upstream.stable["$defs"].items()) if n in ours_stable and n in every}
    return every, stable


def _bases(schema: Any) -> set[str]:
    """The defs a variant extends (through `allOf` beside properties of its own, as a tagged union's variants do):
    the audit compares them as part of the variants, so a change planted in one is told there, in other words."""
    found: set[str] = set()
    if isinstance(schema, dict):
        extends = (schema.get("allOf") or ()) if "properties" in schema else ()
        for part in extends:
            if isinstance(part, dict) and str(part.get("$ref", "")).startswith("#/$defs/"):
                found.add(part["$ref"].removeprefix("#/$defs/"))
        for value in schema.values():
            found |= _bases(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _bases(value)
    return found


def _pick(defs: dict[str, Any], used: set[str], fits: Any) -> tuple[str, Any]:
    """The first def (by name) not used yet for which `fits(def)` gives something (a property name, or True)."""
    for name, schema in defs.items():
        if name in used or not isinstance(schema, dict):
            continue
        found = fits(schema)
        if found:
            used.add(name)
            return name, found
    pytest.skip(f"no published def has the shape this probe needs ({fits.__doc__})")


def _property(kind: str) -> Any:
    """A property of the def whose schema is plainly of JSON type `kind` (a type, a description, a format, bounds)."""

    def fits(schema: dict[str, Any]) -> str | None:
        for name, prop in sorted((schema.get("properties") or {}).items()):
            if (
                isinstance(prop, dict)
                and prop.get("type") == kind
                and set(prop) <= {"type", "description", "format", "minimum", "maximum"}
            ):
                return name
        return None

    fits.__doc__ = f"a property of type {kind}"
    return fits


def test_shape_changes_are_found(upstream: Upstream, tmp_path: Path) -> None:
    """Each kind of wire difference the audit promises, planted in a copy of the published schema."""
    every, _ = _quiet(upstream)
    changed = copy.deepcopy(upstream.schema)
    defs = changed["$defs"]
    used: set[str] = set()
    expected = []

    def objects(schema: dict[str, Any]) -> bool:
        """an object with properties"""
        return schema.get("type") == "object" and bool(schema.get("properties"))

    name, _ = _pick(every, used, objects)
    defs[name]["properties"]["probeOnlyThere"] = {"type": "integer"}
    expected.append(f"type {name}: property probeOnlyThere only there (optional)")

    name, dropped = _pick(every, used, _second_required)
    defs[name]["required"] = [p for p in defs[name]["required"] if p != dropped]
    expected.append(f"type {name}.{dropped}: required here, optional there")

    name, prop = _pick(every, used, _property("integer"))
    defs[name]["properties"][prop]["type"] = "string"
    expected.append(f'type {name}.{prop}: type here "integer", there "string"')

    name, prop = _pick(every, used, _property("string"))
    defs[name]["properties"][prop]["type"] = ["string", "null"]
    expected.append(f"type {name}.{prop}: nullable there, not here")

    def open_object(schema: dict[str, Any]) -> bool:
        """an object that says nothing of additionalProperties"""
        return objects(schema) and "additionalProperties" not in schema

    name, _ = _pick(every, used, open_object)
    defs[name]["additionalProperties"] = False
    expected.append(f"type {name}: additionalProperties here absent, there false")

    def plain_string(schema: dict[str, Any]) -> bool:
        """a string without a minimum length"""
        return schema.get("type") == "string" and "minLength" not in schema and "enum" not in schema

    name, _ = _pick(every, used, plain_string)
    defs[name]["minLength"] = 1
    expected.append(f"type {name}: minLength here absent, there 1")

    requests = {m.params: m.name for m in load_spec(SPEC, ROOT).methods if m.kind == "request" and m.params}

    def a_request(schema: dict[str, Any]) -> bool:
        """the params of a request"""
        return "x-method" in schema

    name, _ = _pick({n: d for n, d in every.items() if n in requests}, used, a_request)
    del defs[name]["x-method"]
    expected.append(f"method {requests[name]} (request): params type only here")

    path = tmp_path / "schema.unstable.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    lines = {d.line() for d in audit.run_audit(SPEC, ROOT, path, upstream.stable_path).unlisted}
    for line in expected:
        assert f"{line} [in schema.unstable.json only]" in lines, (line, sorted(lines))


def test_a_missing_method_and_a_stale_listing_fail(upstream: Upstream, tmp_path: Path) -> None:
    """A published method we lack fails the audit; a property we list as ours alone, once published, is stale."""
    listed = sorted(deliberate().properties)
    changed = copy.deepcopy(upstream.schema)
    ours = json.loads((ROOT / "generated" / "schema" / "schema.unstable.json").read_text(encoding="utf-8"))["$defs"]
    for type_name, prop in listed[:1]:  # upstream publishes it too now
        changed["$defs"][type_name].setdefault("properties", {})[prop] = ours[type_name]["properties"][prop]
    changed["$defs"]["FutureThingRequest"] = {"type": "object", "x-method": "future/thing", "x-side": "agent"}
    path = tmp_path / "schema.unstable.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    report = audit.run_audit(SPEC, ROOT, path, upstream.stable_path)
    assert not report.ok
    assert (
        "method future/thing (request): published there, but has no retry class here [in schema.unstable.json only]"
        in {d.line() for d in report.unlisted}
    )
    stale = {item.difference for item in report.stale}
    for type_name, prop in listed[:1]:
        assert any(line.startswith(f"type {type_name}: property {prop} only here") for line in stale), stale


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
    every, stable_defs = _quiet(upstream)
    used: set[str] = set()
    unstable_only = {n: d for n, d in every.items() if n not in upstream.stable["$defs"]}
    promoted, _ = _pick(unstable_only, used, lambda schema: True)  # a def upstream would call stable

    def gained(name: str) -> str | None:
        stable_props = set(upstream.stable["$defs"][name].get("properties") or {})
        extra = sorted(set(every[name].get("properties") or {}) - stable_props)
        return extra[0] if extra else None

    grown, prop = next(((n, p) for n in stable_defs if n not in used and (p := gained(n))), (None, None))
    if grown is None:
        pytest.skip("no published def has a property only its unstable form carries")
    used.add(grown)
    dropped, _ = _pick(stable_defs, used, lambda schema: True)  # a def upstream would call unstable
    name_optional, optional = _pick(stable_defs, used, _optional_property)
    name_required, loosened = _pick(stable_defs, used, _second_required)

    def change(stable: dict[str, Any], every_def: dict[str, Any]) -> None:
        stable[promoted] = every_def[promoted]
        stable[grown]["properties"][prop] = every_def[grown]["properties"][prop]
        del stable[dropped]
        del stable[name_optional]["properties"][optional]
        stable[name_required]["required"] = [p for p in stable[name_required]["required"] if p != loosened]

    stable_path = _stable_copy(upstream, tmp_path, change)
    report = audit.run_audit(SPEC, ROOT, tmp_path / "schema.unstable.json", stable_path)
    lines = {d.line() for d in report.unlisted}
    for line in (
        f"type {promoted}: unstable here, stable there",
        f"type {grown}.{prop}: unstable here, stable there",
        f"type {dropped}: stable here, unstable there",
        f"type {name_optional}.{optional}: stable here, unstable there",
        f"type {name_required}.{loosened}: required here, optional there [in schema.json only]",
    ):
        assert line in lines, (line, sorted(lines))
    assert not report.ok


def _optional_property(schema: dict[str, Any]) -> str | None:
    """an optional property"""
    required = set(schema.get("required") or ())
    return next((p for p in sorted(schema.get("properties") or {}) if p not in required), None)


def _second_required(schema: dict[str, Any]) -> str | None:
    """two required properties"""
    required = schema.get("required") or []
    return required[1] if len(required) >= 2 and schema.get("properties") else None


def test_our_stable_file_is_the_published_stable_surface(upstream: Upstream) -> None:
    """Every def and property of the published stable file is in ours and stable, and ours adds only what is listed."""
    spec = load_spec(SPEC, ROOT)
    found = audit.compare(spec, upstream.schema, upstream.stable)
    assert not [d for d in found if d.what.endswith(" there") and "stable" in d.what], found
    ours = json.loads((ROOT / "generated" / "schema" / "schema.json").read_text(encoding="utf-8"))["$defs"]
    renamed = deliberate().theirs_only  # a published def we name otherwise, listed as defined there only
    assert set(upstream.stable["$defs"]) - renamed <= set(ours)
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
