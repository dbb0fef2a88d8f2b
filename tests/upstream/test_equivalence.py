"""Equivalence with the published schema, measured by drawing instances on both sides.

upstream -> ours: instances drawn from each published params and result type (with the listed differences
applied, see `_restricted`) must be accepted by our JSON Schema and our pydantic models.
ours -> upstream: instances drawn from our types must be accepted by the published schema and our pydantic models.
Draws are derandomized, so a run is reproducible; the number of instances checked per type is printed at the end.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from generator.audit import command as audit
from generator.pipeline import load_spec
from generator.render.schema.bundles import bundle
from tests.support import ROOT

from .conftest import DRAWS, Upstream
from .strategies import Drawer

EXAMPLES = 25  # per type and direction: 59 types, two directions, well inside the time budget


@cache
def _ours() -> dict[str, Any]:
    return bundle(load_spec(ROOT / "spec", ROOT), unstable=True)


def _restricted(published: dict[str, Any]) -> dict[str, Any]:
    """The published schema narrowed where our models are knowingly stricter, so that its draws are ones we must
    accept: the model of IdleStateUpdate is flat (generator/model/refinements.py), so its error is checked whatever the
    stop reason."""
    out = copy.deepcopy(published)
    defs = out["$defs"]
    defs["IdleStateUpdate"]["properties"]["error"] = {"anyOf": [{"$ref": "#/$defs/Error"}, {"type": "null"}]}
    return out


def _validator(document: dict[str, Any], name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": document["$defs"], "$ref": f"#/$defs/{name}"})


def _pairs(published: dict[str, Any]) -> list[tuple[str, str]]:
    spec = load_spec(ROOT / "spec", ROOT)
    ours = {(m.name, m.kind): m for m in spec.methods}
    out = set()
    for key, entry in audit.published_entries(published).items():
        for role in ("params", "result"):
            theirs = getattr(entry, role)
            if theirs is not None:
                out.add((getattr(ours[key], role), theirs))
    return sorted(out)


@pytest.fixture(scope="module")
def models() -> Any:
    from acp_v2_schema import models

    return models


def _draw(drawer: Drawer, name: str, accepts: Draft202012Validator) -> list[Any]:
    """Up to EXAMPLES instances of the named type that its own schema accepts (the strategies over-approximate)."""
    kept: list[Any] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(drawer.named(name))
    def draw(value: Any) -> None:
        if accepts.is_valid(value):
            kept.append(value)

    draw()
    return kept


def _check(upstream: Upstream, models: Any, direction: str) -> None:
    published = upstream.schema
    source = _restricted(published) if direction == "upstream" else _ours()
    drawer = Drawer(source["$defs"])
    failures: list[str] = []
    for ours_name, theirs_name in _pairs(published):
        name = theirs_name if direction == "upstream" else ours_name
        accepts_source = _validator(source, name)
        targets = {
            "our JSON Schema": _validator(_ours(), ours_name),
            "the published schema": _validator(published, theirs_name),
        }
        adapter = TypeAdapter(getattr(models, ours_name))
        kept = _draw(drawer, name, accepts_source)
        DRAWS[f"{direction} -> {'ours' if direction == 'upstream' else 'upstream'}: {name}"] = len(kept)
        for value in kept:
            for label, validator in targets.items():
                error = next(iter(validator.iter_errors(value)), None)
                if error is not None:
                    failures.append(f"{name}: {label} rejects {value!r}: {error.message[:200]}")
            try:
                adapter.validate_json(json.dumps(value), strict=True)  # as the validator does
            except ValidationError as exc:
                failures.append(f"{name}: the pydantic model rejects {value!r}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"


def test_upstream_instances_are_accepted_here(upstream: Upstream, models: Any) -> None:
    _check(upstream, models, "upstream")


def test_our_instances_are_accepted_upstream(upstream: Upstream, models: Any) -> None:
    _check(upstream, models, "ours")
