"""What stability does to the published schemas: the stable file leaves unstable items out, the other marks them.

The facts are the model's (`TypeDef.stability`, `TypeDef.unstable_properties`, from `x-stability` in the spec;
see generator/check/stability.py). In `schema.json` an unstable type is absent, and so is every unstable property
(from `properties` and `required`) and every variant of a union that is an unstable type (its branch and its
discriminator mapping entry); the union's catch-all is derived again from the variants that remain, so a tag
that only the unstable file knows is an unknown tag to a stable reader, as in the published ACP schema. In
`schema.unstable.json` every unstable type and property keeps its place and its description starts with the
marker paragraph ACP's published schema uses (`**UNSTABLE**`, then a sentence, then the description), which the
SDKs' generators turn into their own notes (the TypeScript pipeline writes `@experimental`). The Python models
are generated from the unstable file, so their docstrings carry the same paragraph.
"""

from __future__ import annotations

from typing import Any

from ...check.stability import UNSTABLE, variant_target
from ...model import unions
from ...model.spec import REF_PREFIX, Spec

MARKER = "**UNSTABLE**"
# Our words for what the marker means; the published schema's convention is only the form: marker, blank line,
# a sentence, blank line, the description.
NOTE = "Not part of the stable protocol yet: it may change or go away in any release, without notice."
MARKED_HEAD = f"{MARKER}\n\n{NOTE}\n\n"  # what a marked description starts with


def marked(description: str) -> str:
    """A description with the unstable paragraph in front (once)."""
    if description.startswith(MARKER):
        return description
    return MARKED_HEAD + description if description else f"{MARKER}\n\n{NOTE}"


def is_marked(description: Any) -> bool:
    """Whether a description carries the unstable paragraph."""
    return isinstance(description, str) and description.startswith(MARKER)


def unstable_types(spec: Spec) -> set[str]:
    """The names of the unstable types."""
    return {t.name for t in spec.types if t.stability == UNSTABLE}


def with_markers(spec: Spec, defs: dict[str, Any]) -> dict[str, Any]:
    """`defs` (name -> schema, for the unstable file) with each unstable type and property marked."""
    out = dict(defs)
    for t in spec.types:
        schema = out.get(t.name)
        if schema is None or (t.stability != UNSTABLE and not t.unstable_properties):
            continue
        schema = dict(schema)
        if t.stability == UNSTABLE:
            schema = _described_first(schema, marked(schema.get("description", "")))
        if t.unstable_properties:
            props = dict(schema.get("properties", {}))
            for name in t.unstable_properties:
                if isinstance(props.get(name), dict):
                    props[name] = _described_first(props[name], marked(props[name].get("description", "")))
            schema["properties"] = props
        out[t.name] = schema
    return out


def stable_only(spec: Spec, defs: dict[str, Any]) -> dict[str, Any]:
    """`defs` (name -> schema, for the stable file) without unstable types, properties and variants."""
    gone = unstable_types(spec)
    hidden = {t.name: set(t.unstable_properties) for t in spec.types if t.unstable_properties}
    out: dict[str, Any] = {}
    for name, schema in defs.items():
        if name in gone:
            continue
        if name in hidden:
            schema = _without_properties(schema, hidden[name])
        out[name] = _without_variants(schema, gone)
    return {name: unions.opened(schema, out, REF_PREFIX) for name, schema in out.items()}


def _described_first(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, **{k: v for k, v in schema.items() if k != "description"}}


def _without_properties(schema: dict[str, Any], names: set[str]) -> dict[str, Any]:
    out = dict(schema)
    out["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in names}
    if "required" in schema:
        out["required"] = [r for r in schema["required"] if r not in names]
        if not out["required"]:
            del out["required"]
    return out


def _without_variants(schema: dict[str, Any], gone: set[str]) -> dict[str, Any]:
    """A union without the branches that are unstable types (and without its catch-all, derived again later)."""
    out = schema
    for key in ("oneOf", "anyOf"):
        branches = schema.get(key)
        if not isinstance(branches, list):
            continue
        kept = [b for b in branches if not _names(b, gone)]
        if len(kept) != len(branches):
            out = {**out, key: [b for b in kept if not unions.is_catch_all(b)]}
    discriminator = out.get("discriminator")
    if isinstance(discriminator, dict) and isinstance(discriminator.get("mapping"), dict):
        mapping = {k: v for k, v in discriminator["mapping"].items() if v.removeprefix(REF_PREFIX) not in gone}
        if len(mapping) != len(discriminator["mapping"]):
            out = {**out, "discriminator": {**discriminator, "mapping": mapping}}
    return out


def _names(branch: Any, gone: set[str]) -> bool:
    """Whether a union branch is the variant of one of `gone` (generator/check/stability.py's `variant_target`)."""
    return variant_target(branch) in gone
