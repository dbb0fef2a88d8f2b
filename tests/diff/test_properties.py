"""Properties of the diff on the real spec: no change, no report; and a change reversed reverses its rule.

The mutations edit a copy of spec/ (without the worked examples, which a type change can legitimately break);
class names come from the spec's own model, never from this file.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.compat_rules import BY_ID, COMPATIBLE, READ, UNSTABLE, WRITTEN
from generator.diff.sources import load_spec_dir
from generator.pipeline import load_spec
from tests.diff.support import copy_real_spec
from tests.support import ROOT, run_generator

SPEC = ROOT / "spec"
MODEL = load_spec(SPEC, ROOT)
KEY_PARAMS = {(m.params, m.key_param) for m in MODEL.methods if m.key_param}
KEYED_CLASSES = {m.retry_class for m in MODEL.methods if m.key_param}  # these need a key parameter
PLAIN_METHODS = sorted(m.source for m in MODEL.methods if not m.key_param and not m.variants)
CLASSES = [c.name for c in MODEL.classes if c.name not in KEYED_CLASSES]
# Properties as written in spec/types (the model's schemas also hold derived ones, such as envelope members, that a
# YAML edit cannot remove).
_WRITTEN = {t.name: yaml.safe_load((ROOT / t.source).read_text())["types"][t.name] for t in MODEL.types}
OBJECT_TYPES = sorted(
    (t.source, t.name, p)
    for t in MODEL.types
    for p in _WRITTEN[t.name].get("properties", {})
    if (t.name, p) not in KEY_PARAMS
)
# ErrorCode's codes must match the error-code table of spec/retry-classes.yaml, so dropping one alone makes the spec
# invalid rather than different: it is left out.
CONST_SETS = sorted(
    (t.source, t.name)
    for t in MODEL.types
    if len([b for b in t.schema.get("anyOf", []) if "const" in b]) > 1 and t.name != "ErrorCode"
)


def _copy(dest: Path) -> Path:
    return copy_real_spec(dest / "spec", ignore=shutil.ignore_patterns("examples"))


def _edit_types(spec: Path, source: str, change) -> None:
    path = spec.parent / source
    data = yaml.safe_load(path.read_text())
    change(data["types"])
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _mutate(spec: Path, kind: str, pick: int) -> None:
    if kind == "class":
        source = PLAIN_METHODS[pick % len(PLAIN_METHODS)]
        path = spec.parent / source
        data = yaml.safe_load(path.read_text())
        others = [c for c in CLASSES if c != data["retry"]["class"]]
        data["retry"]["class"] = others[pick % len(others)]
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    elif kind in ("required", "remove"):
        source, name, prop = OBJECT_TYPES[pick % len(OBJECT_TYPES)]

        def change(types: dict) -> None:
            schema = types[name]
            required = schema.setdefault("required", [])
            if kind == "remove":
                del schema["properties"][prop]
                if prop in required:
                    required.remove(prop)
            elif prop in required:
                required.remove(prop)
            else:
                required.append(prop)
            if not required:
                del schema["required"]

        _edit_types(spec, source, change)
    else:
        source, name = CONST_SETS[pick % len(CONST_SETS)]

        def drop(types: dict) -> None:
            branches = types[name]["anyOf"]
            consts = [i for i, b in enumerate(branches) if "const" in b]
            del branches[consts[pick % len(consts)]]

        _edit_types(spec, source, drop)


def _diff(old: Path, new: Path, root: Path) -> list[dict]:
    result = run_generator("diff", str(old), str(new), "--root", str(root), "--format", "json")
    assert result.status in (0, 1), result.err
    return json.loads(result.out)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(kind=st.sampled_from(["class", "required", "remove", "const"]), pick=st.integers(0, 10_000))
def test_reversing_a_change_reverses_its_rule_and_severity(kind: str, pick: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = _copy(root / "a")
        after = _copy(root / "b")
        _mutate(after, kind, pick)
        assert _diff(before, before, root) == []
        assert _diff(after, after, root) == []
        forward, backward = _diff(before, after, root), _diff(after, before, root)
        assert forward, f"{kind} mutation {pick} reported nothing"
        reach = load_spec_dir(after, root, label="b").reach()
        reach_a = load_spec_dir(before, root, label="a").reach()
        for f in forward:
            rule = BY_ID[f["rule"]]
            if rule.reverse is None:
                continue
            partners = [
                g
                for g in backward
                if g["subject"] == f["subject"] and (g["rule"] == rule.reverse or BY_ID[g["rule"]].reverse == rule.id)
            ]
            assert partners, f"{f} has no reverse in {backward}"
            g = partners[0]
            if f["severity"] == UNSTABLE:
                assert g["severity"] == UNSTABLE
                continue
            back = BY_ID[g["rule"]]
            owner = f["subject"].split(".")[0].split("[")[0]
            roles = {role for role, _ in reach.get(owner, set()) | reach_a.get(owner, set())}
            assert f["severity"] == rule.severity(frozenset(roles)) and g["severity"] == back.severity(frozenset(roles))
            if len(roles) == 1:
                role = READ if READ in roles else WRITTEN
                said = (rule.read, back.read) if role == READ else (rule.written, back.written)
                if said[0] != said[1]:  # the registry says this change flips severity when reversed
                    assert {f["severity"], g["severity"]} == {"breaking", COMPATIBLE}
