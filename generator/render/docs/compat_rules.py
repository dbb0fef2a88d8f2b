"""The "Compatibility rules" docs page: every rule of `python -m generator diff`, from its registry.

The examples name retry classes and decisions through placeholders that this renderer fills in from the spec, so
the page follows a rename in spec/retry-classes.yaml like every other page.
"""

from __future__ import annotations

from ... import paths
from ...compat_rules import AREAS, BREAKING, RULES, Rule
from ...model.spec import Spec
from ..markers import markdown_header
from ..templates import render_output

PAGE = paths.COMPATIBILITY_PAGE
SOURCE = "generator/compat_rules.py"


def render(spec: Spec) -> dict[str, str]:
    names = {
        "safest": spec.classes[0].name if spec.classes else "",
        "riskiest": spec.classes[-1].name if spec.classes else "",
        "first_decision": spec.decisions[0].name if spec.decisions else "",
        "last_decision": spec.decisions[-1].name if spec.decisions else "",
        "failure": spec.failure_kinds[-1].name if spec.failure_kinds else "",
    }
    areas = [(title, [_view(r, names) for r in RULES if r.area == area]) for area, title in AREAS.items()]
    return {
        PAGE: render_output(
            PAGE,
            header=markdown_header(SOURCE),
            source=SOURCE,
            areas=areas,
            classes=[c.name for c in spec.classes],
            decisions=[d.name for d in spec.decisions],
        )
    }


def _view(rule: Rule, names: dict[str, str]) -> dict[str, str]:
    severity = f"{rule.read} in params, {rule.written} in results" if rule.direction_aware else rule.read
    return {
        "id": rule.id,
        "summary": rule.summary,
        "why": rule.why,
        "old": _fill(rule.old, names),
        "new": _fill(rule.new, names),
        "severity": severity,
        "breaking": BREAKING in (rule.read, rule.written),
        "reverse": rule.reverse or "",
        "at": "OLD (it no longer exists in NEW)" if rule.at == "old" else "NEW",
        "all_only": "yes" if rule.all_only else "",
    }


def _fill(example: str, names: dict[str, str]) -> str:
    """Put the spec's names in place of the {placeholders} (other braces are YAML and stay)."""
    for key, value in names.items():
        example = example.replace("{" + key + "}", value)
    return example
