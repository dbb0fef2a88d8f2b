"""The salvage table of the generated models: which fields of which classes a receiver salvages, and how.

The spec's `x-deserialize-*` annotations (generator/model/lenience.py) are per type and property; the models are classes
that datamodel-code-generator named, some of them made up (the variants of a union written inline). The table is
read off the final models source: a type that is a class names itself; a type that is a union alias stands for
every class its members reach (a property of the union's own is a property of each variant), and a property of
one inline branch for the classes that branch's member reaches. A refined object (generator/model/refinements.py) is one
flattened class that takes its branches' properties, so it takes the rules of the types its branches name too.
At run time a class also takes the rules of the
classes it derives from (models/_salvage.py), so a variant that extends a spec type salvages what that type does.
"""

from __future__ import annotations

import ast

from ...model import refinements
from ...model.spec import REF_PREFIX, Lenience, Spec

# The flags of one field, as models/_salvage.py reads them.
ON_ERROR, SKIP_INVALID_ITEMS, ON_NULL, REQUIRED = 1, 2, 4, 8

# The most salvages one lenient read makes (models/_salvage.py `MAX_SALVAGES`, the package README and the SDK
# authors' page say it): a message that needs more is refused. ACP sets no limit; this one is ours, so that what a
# hostile message costs stays bounded (real messages need a few).
MAX_SALVAGES = 100


def _union_members(node: ast.expr) -> list[str]:
    """The names joined by `|` at the top of an alias's value (inside `TypeAliasType("X", ...)` and `Annotated`)."""
    if isinstance(node, ast.Call) and len(node.args) == 2:
        return _union_members(node.args[1])
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Annotated":
        inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
        return _union_members(inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    if isinstance(node, ast.Name):
        return [node.id]
    return []


def rules(spec: Spec, source: str) -> dict[str, dict[str, int]]:
    """{class name: {wire name: flags}} for every class a spec type's annotations reach, sorted."""
    tree = ast.parse(source).body
    classes = {n.name for n in tree if isinstance(n, ast.ClassDef)}
    aliases = {
        n.targets[0].id: _union_members(n.value)
        for n in tree
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
    }

    def reached(name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if name in classes:
            return [name]
        if name in seen or name not in aliases:
            return []
        return [c for member in aliases[name] for c in reached(member, seen | {name})]

    by_name = {t.name: t for t in spec.types}
    table: dict[str, dict[str, int]] = {}
    for t in spec.types:
        for item in (*t.lenience, *_refined_branches(t.schema, by_name, {i.property for i in t.lenience})):
            flags = (
                (ON_ERROR if item.default_on_error else 0)
                | (SKIP_INVALID_ITEMS if item.skip_invalid_items else 0)
                | (ON_NULL if item.default_on_null else 0)
                | (REQUIRED if item.required else 0)
            )
            if not item.branch:
                targets = reached(t.name)
            else:
                members = aliases.get(t.name, [])
                index = item.branch[1]
                targets = reached(members[index]) if index < len(members) else []
            if not targets:
                where = ".".join(str(p) for p in (*item.branch, item.property))
                raise RuntimeError(f"{t.name}.{where}: no generated model class carries this lenient property")
            for target in targets:
                table.setdefault(target, {})[item.property] = flags
    return {name: dict(sorted(fields.items())) for name, fields in sorted(table.items())}


def _refined_branches(schema: dict, by_name: dict, own: set[str]) -> list[Lenience]:
    """The lenient properties that a refined object's branches bring from the types they name (its own win)."""
    if refinements.refined_by(schema) is None:
        return []
    found: list[Lenience] = []
    for branch in schema["anyOf"]:
        if not isinstance(branch, dict):
            continue
        refs = [branch.get("$ref")] + [part.get("$ref") for part in branch.get("allOf", []) if isinstance(part, dict)]
        for ref in refs:
            if isinstance(ref, str) and ref.removeprefix(REF_PREFIX) in by_name:
                for item in by_name[ref.removeprefix(REF_PREFIX)].lenience:
                    if not item.branch and item.property not in own:
                        own.add(item.property)
                        found.append(item)
    return found
