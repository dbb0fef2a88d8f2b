"""Open the tagged unions in the generated pydantic models, and let every model keep the fields it does not know.

datamodel-code-generator writes each tagged union as a closed, discriminated union (it is given the closed form,
see generator/model/unions.py). This pass rewrites each such alias so that a tag value the union does not know selects a
fallback model, `Other<Union>`, which keeps the tag and every other field; a known tag still selects its own
variant, so a malformed known variant stays an error: the fallback's tag field (`OtherTag`) refuses the known tags,
a check that only a message no known variant took ever reaches. Dispatch is one lookup of the tag by pydantic's
discriminated union.

A union written as `anyOf` branches that each fix one property to a constant, beside one open branch that takes any
other value (`CreateElicitationRequest`, by `mode`), is not a discriminated union in the schema, so the code
generator writes a plain union whose every branch pydantic would try; it too is rewritten to dispatch on that
property (`select_tag`), each constant to its branch and any other value to the open one.

`keep_unknown_fields` sets `extra="allow"` on every model, so that parsing and then dumping with
`model_dump(mode="json", by_alias=True, exclude_unset=True)` gives back the JSON that was read.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ... import paths
from ...model import naming, unions
from ...model.spec import REF_PREFIX, Spec
from ..templates import PARTIALS, render, render_output

UNKNOWN_TAG = "__unknown__"  # the Tag of a dispatched fallback; never a value on the wire (it is never looked up)
KNOWN_LABEL = "(known variants)"  # labels of a union's two branches in validation errors
OTHER_LABEL = "(other variant)"
SUPPORT_MODULE = paths.PYTHON_OPEN_UNIONS.rsplit("/", 1)[-1].removesuffix(".py")
_CONFIG_BLOCK = re.compile(r"^    model_config = ConfigDict\(\n(?:        .*\n)*?    \)\n", re.M)


def support_module(header: str) -> str:
    """`models/_open_unions.py`: the tag selector every open union uses."""
    return render_output(
        paths.PYTHON_OPEN_UNIONS,
        header=header,
        unknown_tag=UNKNOWN_TAG,
        known_label=KNOWN_LABEL,
        other_label=OTHER_LABEL,
    )


def keep_unknown_fields(source: str) -> str:
    """`source` (the generated models module) with models that keep the fields they do not know."""
    return _CONFIG_BLOCK.sub(_allow_extra, source)


def open_models(source: str, spec: Spec) -> str:
    """`source` (the generated models module) with open unions."""
    found = {
        t.name: union
        for t in spec.types
        if (union := unions.tagged_union(unions.closed(t.schema), REF_PREFIX)) is not None
    }
    tagged = {t.name: tag for t in spec.types if (tag := const_tag(t.schema)) is not None}
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source).body
    bases = {n.name: [b.id for b in n.bases if isinstance(b, ast.Name)] for n in tree if isinstance(n, ast.ClassDef)}
    classes = {n.name: n for n in tree if isinstance(n, ast.ClassDef)}
    aliases = {
        n.targets[0].id: n
        for n in tree
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
    }
    # Which union each variant class belongs to, and its tag value there (fallbacks get the unknown tag).
    variant_of = {t: (u, v) for u in found.values() for v, t in u.variants}
    variant_of.update({unions.fallback_name(name): (u, UNKNOWN_TAG) for name, u in found.items()})
    replaced: dict[int, tuple[int, str]] = {}
    for node in tree:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in found:
                replaced[node.lineno - 1] = (node.end_lineno or node.lineno, _open_alias(name, found[name], node))
            elif name in tagged and (text := _by_constant(name, tagged[name], node, classes, aliases)) is not None:
                replaced[node.lineno - 1] = (node.end_lineno or node.lineno, text)
            elif (composed := _composed(node, bases, variant_of)) is not None:
                replaced[node.lineno - 1] = (node.end_lineno or node.lineno, composed)
    missing = sorted(set(found) - {_name(lines[i]) for i in replaced})  # every union must have been opened
    if missing:
        raise RuntimeError(f"the generated models define no union alias for {', '.join(missing)}")
    out: list[str] = []
    index = 0
    while index < len(lines):
        if index in replaced:
            end, text = replaced[index]
            out.append(text)
            index = end
        else:
            out.append(lines[index])
            index += 1
    return "".join(out).replace(
        "\nfrom pydantic import ",
        f"\nfrom .{SUPPORT_MODULE} import KNOWN_VARIANTS, OTHER_VARIANT, OtherTag, select_tag\n"
        "from pydantic import Discriminator, Tag, ",
        1,
    )


def _allow_extra(match: re.Match[str]) -> str:
    """Keep unknown fields, unless the spec closed the object (`additionalProperties: false` gives `forbid`)."""
    block = match.group(0)
    if "extra=" in block:
        return block
    return block.replace("ConfigDict(\n", 'ConfigDict(\n        extra="allow",\n', 1)


def _composed(node: ast.Assign, bases: dict[str, list[str]], variant_of: dict[str, tuple]) -> str | None:
    """An alias whose members each extend one variant of the same union (a union variant that is itself a union,
    such as `state_update` over the states), rewritten to dispatch on that union's tag; None for any other alias."""
    value = node.value
    if not (isinstance(value, ast.Call) and len(value.args) == 2 and isinstance(value.args[1], ast.BinOp)):
        return None
    members = _members(value.args[1])
    if members is None:
        return None
    picks = []
    for member in members:
        hits = [variant_of[b] for b in bases.get(member, []) if b in variant_of]
        if len(hits) != 1:
            return None
        picks.append((member, *hits[0]))
    if len({id(u) for _, u, _ in picks}) != 1 or len(picks) < 2:
        return None
    union = picks[0][1]
    name = node.targets[0].id  # type: ignore[union-attr]
    chosen = [(member, value) for member, _, value in picks]
    # The members share the bases that make them this union's variant (`sessionUpdate: "state_update"`); the
    # fallback joins those to the inner union's fallback, so an unknown inner tag is kept here too.
    shared = [[b for b in bases.get(m, []) if b not in variant_of] for m in members]
    fallback_class = ""
    if all(s == shared[0] for s in shared) and shared[0] and UNKNOWN_TAG not in (v for _, v in chosen):
        inner = next(n for n, (u, v) in variant_of.items() if u is union and v == UNKNOWN_TAG)
        fallback = unions.fallback_name(name)
        fallback_class = render(
            f"{PARTIALS}/open_union_composed.py.j2",
            name=name,
            fallback=fallback,
            bases=[inner, *shared[0]],
            tag=union.tag,
        )
        chosen.append((fallback, UNKNOWN_TAG))
    return fallback_class + _dispatched(name, union, chosen)


def const_tag(schema: Any) -> str | None:
    """The property that picks the branch of an `anyOf` whose branches each fix it to a constant, but for one open
    branch that refuses those constants (`not`); None for any other schema."""
    branches = schema.get("anyOf") if isinstance(schema, dict) and "discriminator" not in schema else None
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    fixed: list[set[str]] = []
    open_branches = 0
    for branch in branches:
        if not isinstance(branch, dict):
            return None
        properties = branch.get("properties") if isinstance(branch.get("properties"), dict) else {}
        names = {k for k, v in properties.items() if isinstance(v, dict) and "const" in v}
        if names:
            fixed.append(names)
        elif "not" in branch:
            open_branches += 1
        else:
            return None
    common = set.intersection(*fixed) if fixed else set()
    return sorted(common)[0] if len(common) == 1 and open_branches == 1 else None


def _by_constant(
    name: str, tag: str, node: ast.Assign, classes: dict[str, ast.ClassDef], aliases: dict[str, ast.Assign]
) -> str | None:
    """The alias `name` (a union of branches picked by the constant of `tag`) dispatched on that property; None
    when its members do not each fix one constant (or, for one of them, take any string)."""
    value = node.value
    if not (isinstance(value, ast.Call) and len(value.args) == 2):
        return None
    members = _members(value.args[1])
    attribute = naming.snake_case(tag)
    chosen: list[tuple[str, str]] = []
    for member in members or []:
        values = {_tag_value(c, attribute, classes) for c in _classes_of(member, classes, aliases)}
        if len(values) != 1 or None in values:
            return None
        chosen.append((member, values.pop()))  # type: ignore[arg-type]  # None is refused above
    known = [v for _, v in chosen if v != UNKNOWN_TAG]
    if len(known) != len(set(known)) or len(chosen) - len(known) != 1:
        return None
    return render(
        f"{PARTIALS}/open_union_dispatched.py.j2", name=name, tag=tag, attribute=attribute, members=chosen, known=known
    )


def _classes_of(member: str, classes: dict[str, ast.ClassDef], aliases: dict[str, ast.Assign]) -> list[str]:
    """The model classes a union member stands for: itself, or the members of the alias it names."""
    if member in classes:
        return [member]
    node = aliases.get(member)
    value = node.value if node is not None else None
    if isinstance(value, ast.Call) and len(value.args) == 2:
        return [c for m in _members(value.args[1]) or [] for c in _classes_of(m, classes, aliases)]
    return []


def _tag_value(cls: str, attribute: str, classes: dict[str, ast.ClassDef]) -> str | None:
    """The constant a class's `attribute` holds (`Literal["form"]`), UNKNOWN_TAG for a plain `str`, else None."""
    for statement in classes[cls].body:
        if isinstance(statement, ast.AnnAssign) and getattr(statement.target, "id", None) == attribute:
            kind = statement.annotation
            if isinstance(kind, ast.Subscript) and getattr(kind.value, "id", None) == "Literal":
                inner = kind.slice
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    return inner.value
                return None
            return UNKNOWN_TAG if isinstance(kind, ast.Name) and kind.id == "str" else None
    return None


def _name(line: str) -> str:
    return line.split("=", 1)[0].strip()


def _members(expr: ast.expr) -> list[str] | None:
    """The class names of an `A | B | ...` expression, in order; None when it is anything else."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
        left, right = _members(expr.left), _members(expr.right)
        return None if left is None or right is None else left + right
    return [expr.id] if isinstance(expr, ast.Name) else None


def _variant_classes(node: ast.Assign) -> list[str]:
    """The class names in a generated union alias `Name = TypeAliasType("Name", Annotated[A | B | ..., Field()])`."""
    call = node.value
    assert isinstance(call, ast.Call) and len(call.args) == 2
    annotated = call.args[1]
    assert isinstance(annotated, ast.Subscript) and isinstance(annotated.slice, ast.Tuple)
    names = _members(annotated.slice.elts[0])
    if names is None:
        raise RuntimeError(f"unexpected members in a generated union: {ast.unparse(annotated)}")
    return names


def _open_alias(name: str, union: unions.TaggedUnion, node: ast.Assign) -> str:
    classes = _variant_classes(node)
    by_type = {type_name: value for value, type_name in union.variants}
    if sorted(classes) != sorted(by_type):
        raise RuntimeError(f"{name}: the generated variants {classes} differ from the spec's {sorted(by_type)}")
    return render(
        f"{PARTIALS}/open_union_alias.py.j2",
        name=name,
        fallback=unions.fallback_name(name),
        tag=union.tag,
        attribute=naming.snake_case(union.tag),
        members=classes,
        known=list(union.known),
    )


def _dispatched(name: str, union: unions.TaggedUnion, members: list[tuple[str, str]]) -> str:
    """The text of a union dispatched on its tag by `select_tag` (members: class and tag value)."""
    return render(
        f"{PARTIALS}/open_union_dispatched.py.j2",
        name=name,
        tag=union.tag,
        attribute=naming.snake_case(union.tag),
        members=members,
        known=[value for _, value in members if value != UNKNOWN_TAG],
    )
