"""Public class names of the generated models: names the spec states, that stay put when a variant is added.

datamodel-code-generator names every model it makes up by number (`AgentResponse1`, `SessionUpdateStateUpdate3`),
counting the branches of the union it belongs to, so adding a variant renames the others. Two passes keep the
package's public names to the spec's:

- before the code generator runs (`named_branches`), each union branch that the spec names is given a type of its
  own, named after its union and that name: a `title` (`AgentResponse` + `Result`), the constant of a tag property
  (`MultiSelectItems` + `String`), or, for the branch that takes unknown tags, the fallback name (`Other` + union,
  as generator/model/unions.py names every fallback);
- after it (`public_names`), each model it still made up is renamed: a model that extends one variant of a tagged
  union (the `state_update` variant of `SessionUpdate` over each state of `StateUpdate`) takes its owner's name and
  that variant's tag (`SessionUpdateStateUpdate` + `Running`); any other (the combinations the code generator makes
  of an object's fields with each member of a union it also is) becomes private (a leading `_`), part of the
  models' internal form and never a name to import.

`check` fails generation when a public name is still none of these (the tests list them too).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from . import naming, refinements, unions, upstream_form
from .spec import REF_PREFIX

_NUMBERED = re.compile(r"^(?P<owner>[A-Za-z_]\w*?)(?P<number>[0-9]+)$")


def named_branches(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (the code generator's input, changed in place and returned) with every union branch that the
    spec names moved to a type of its own under that name.

    A type that writes fields beside its union (`ElicitationFormMode`: a form, and one of two scopes) becomes a
    union of named types, each its fields with one branch, when every branch has a name; a named branch that
    extends such a union (`allOf` of it) becomes a union too, one type per member (`CreateElicitationRequestForm`
    + `Session`). The code generator would make the same combinations, numbered.
    """
    defs: dict[str, Any] = document["$defs"]
    done: set[str] = set()
    for owner in list(defs):
        _name_branches(owner, defs, done)
    for schema in defs.values():  # a title beside a reference names nothing more: the code generator need not see it
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key) if isinstance(schema, dict) else None
            if isinstance(branches, list):
                schema[key] = [_bare(b) for b in branches]
    return document


def _bare(branch: Any) -> Any:
    if isinstance(branch, dict) and "$ref" in branch and set(branch) <= {"$ref", "title", "description"}:
        return {"$ref": branch["$ref"]}
    return branch


def _name_branches(owner: str, defs: dict[str, Any], done: set[str]) -> None:
    if owner in done:
        return
    done.add(owner)
    schema = defs[owner]
    if not isinstance(schema, dict):
        return
    _distribute_over_union(owner, defs, done)
    schema = defs[owner]
    key = next((k for k in ("anyOf", "oneOf") if isinstance(schema.get(k), list)), None)
    if key is None or "discriminator" in schema:
        return
    branches = schema[key]
    fields = "properties" in schema
    names = [branch_name(owner, b, named_refs=fields) for b in branches]
    if fields and not all(names):
        return  # the code generator combines the fields with each branch itself (numbered: made private later)
    # the owner's own keywords (fields, a `not` over the known tags, ...) go with each branch; its marks stay
    moved = [k for k in schema if k not in (key, "description", "title") and not k.startswith("x-")]
    common = {k: schema[k] for k in moved if k != "type"} if fields else {}
    for index, (branch, name) in enumerate(zip(branches, names, strict=True)):
        if name is None:
            continue
        if name in defs:
            raise RuntimeError(f"{owner}: the name of its branch {index}, {name}, is already a type's")
        defs[name] = _branch_type(schema, branch, common)
        branches[index] = {"$ref": REF_PREFIX + name}
        _name_branches(name, defs, done)
    if fields:
        for k in moved:
            schema.pop(k, None)


def _branch_type(owner: dict[str, Any], branch: dict[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    """A named branch as a type: its own schema, with the owner's fields when it has any (and its description)."""
    if "$ref" in branch:
        out: dict[str, Any] = {"type": "object", **common, "allOf": [{"$ref": branch["$ref"]}]}
    else:
        out = {k: v for k, v in branch.items() if k != "title"}
        if common:
            out = {**{k: v for k, v in common.items() if k not in ("properties", "required")}, **out}
            out["type"] = "object"
            out["properties"] = {**common.get("properties", {}), **out.get("properties", {})}
            required = [
                *common.get("required", []),
                *(r for r in out.get("required", []) if r not in common.get("required", [])),
            ]
            if required:
                out["required"] = required
    description = branch.get("description", owner.get("description"))
    return {"description": description, **out} if isinstance(description, str) else out


def _distribute_over_union(owner: str, defs: dict[str, Any], done: set[str]) -> None:
    """A type that extends (`allOf`) one untagged union of named types, beside fields of its own, as a union of
    types that each extend one of those: the code generator would number them."""
    schema = defs[owner]
    parts = schema.get("allOf")
    if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
        return
    target = str(parts[0].get("$ref", "")).removeprefix(REF_PREFIX)
    if target not in defs or target == owner:
        return
    _name_branches(target, defs, done)
    union = defs[target]
    key = next((k for k in ("anyOf", "oneOf") if isinstance(union.get(k), list)), None)
    if key is None or "discriminator" in union or "properties" in union:
        return
    members = [str(b.get("$ref", "")).removeprefix(REF_PREFIX) if isinstance(b, dict) else "" for b in union[key]]
    if not all(m.startswith(target) and m != target and m in defs for m in members):
        return
    own = {k: v for k, v in schema.items() if k not in ("allOf", "description")}
    refs = []
    for member in members:
        name = owner + member.removeprefix(target)
        if name in defs:
            raise RuntimeError(f"{owner}: {name}, its member for {member}, is already a type's")
        defs[name] = {
            **({"description": schema["description"]} if "description" in schema else {}),
            **own,
            "allOf": [{"$ref": REF_PREFIX + member}],
        }
        done.add(name)
        refs.append({"$ref": REF_PREFIX + name})
    defs[owner] = {**({"description": schema["description"]} if "description" in schema else {}), key: refs}


def branch_name(owner: str, branch: Any, *, named_refs: bool = False) -> str | None:
    """The name the spec gives a union branch of `owner`, or None (a constant, a nameless branch, or a reference,
    which names its type already, unless `named_refs`: a titled reference in a type with fields of its own)."""
    if named_refs and isinstance(branch, dict) and "$ref" in branch and isinstance(branch.get("title"), str):
        return owner + naming.pascal_case(branch["title"])
    if not isinstance(branch, dict) or "$ref" in branch or "const" in branch or branch.get("type") == "null":
        return None
    if branch.get("type") not in ("object", "array") and "properties" not in branch and "allOf" not in branch:
        return None
    title = branch.get("title")
    if title == unions.CATCH_ALL_TITLE or ("not" in branch and title is None):
        return unions.fallback_name(owner)
    if isinstance(title, str) and title:
        return owner + naming.pascal_case(title)
    required = branch.get("required") or []
    for prop, value in (branch.get("properties") or {}).items():
        if prop in required and isinstance(value, dict) and isinstance(value.get("const"), str):
            return owner + naming.pascal_case(value["const"])
    return None


def model_classes(types: dict[str, Any]) -> dict[str, str]:
    """The public class names the models give besides the types' own, each with the type it belongs to, from the
    spec's types alone (what `diff` compares): named branches (as `named_branches` names them), fallbacks, and the
    variants a type extends."""
    # the code generator's input is closed and flattened (render/python/package.py) before its branches are named
    closed = unions.closed({"$defs": types})
    # the tagged unions first: naming the branches changes the closed schemas in place
    tagged = {
        owner: union
        for owner, schema in closed["$defs"].items()
        if (union := unions.tagged_union(schema, REF_PREFIX)) is not None
    }
    document = named_branches(refinements.flattened(closed, REF_PREFIX))
    out: dict[str, str] = {name: _owner(name, types) for name in document["$defs"] if name not in types}
    out.update({unions.fallback_name(owner): owner for owner in tagged})
    for owner, schema in types.items():
        for part in (schema.get("allOf") or []) if isinstance(schema, dict) else []:
            target = part.get("$ref", "").removeprefix(REF_PREFIX) if isinstance(part, dict) else ""
            if target in tagged:
                out.update({owner + naming.pascal_case(value): owner for value in tagged[target].known})
                out[unions.fallback_name(owner)] = owner
    return {name: owner for name, owner in out.items() if name not in types}


def _owner(name: str, types: dict[str, Any]) -> str:
    """The type a made-up name belongs to: the longest type name it starts with (after a fallback's prefix)."""
    bare = name.removeprefix(unions.FALLBACK_PREFIX) if not any(name.startswith(t) for t in types) else name
    return max((t for t in types if bare.startswith(t)), key=len, default=bare)


def problems(name: str, schema: Any, types: Any) -> list[tuple[str, tuple[str | int, ...], str]]:
    """(code, path inside the type, message) for each branch of `name` whose class name a type already takes."""
    if not isinstance(schema, dict):
        return []
    found = []
    closed = unions.closed(schema)
    fields = "properties" in closed
    for key in ("anyOf", "oneOf"):
        for index, branch in enumerate(closed.get(key) or []):
            taken = branch_name(name, branch, named_refs=fields)
            if taken is not None and taken in types:
                message = f"type {taken!r} takes the class name of branch {index} of {name!r}; rename one of them"
                found.append(upstream_form.problem("class-name-taken", (key, index), message))
    return found


def stated(document: dict[str, Any]) -> set[str]:
    """The type names of the code generator's input: the spec's, and the branches `named_branches` named."""
    return set(document["$defs"])


def public_names(source: str, document: dict[str, Any], spec_types: dict[str, Any]) -> str:
    """`source` (the generated models) with every model the code generator made up renamed (see the docstring).

    `document` is the code generator's input (its type names are the stated ones), `spec_types` the spec's types
    by name (to find the tagged unions and their variants).
    """
    known = stated(document)
    tag_of: dict[str, str] = {}  # variant type -> its tag value in its union
    for schema in spec_types.values():
        union = unions.tagged_union(unions.closed(schema), REF_PREFIX)
        if union is not None:
            tag_of.update({type_name: value for value, type_name in union.variants})
    tree = ast.parse(source).body
    defined: dict[str, ast.stmt] = {}
    for node in tree:
        if isinstance(node, ast.ClassDef):
            defined[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            defined[node.targets[0].id] = node
    renames: dict[str, str] = {}
    taken = set(defined)
    for name, node in defined.items():
        if name.startswith("_") or name in known or _is_fallback(name, known):
            continue
        numbered = _NUMBERED.match(name)
        owner = numbered.group("owner") if numbered else None
        wanted = None
        if isinstance(node, ast.ClassDef) and owner in known:
            tags = [tag_of[b.id] for b in node.bases if isinstance(b, ast.Name) and b.id in tag_of]
            if len(tags) == 1:
                wanted = owner + naming.pascal_case(tags[0])
        if wanted is None or wanted in taken:
            wanted = "_" + name
        renames[name] = wanted
        taken.add(wanted)
    if not renames:
        return source
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, renames), key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda found: renames[found.group()], source)


def _is_fallback(name: str, known: set[str]) -> bool:
    return name.startswith(unions.FALLBACK_PREFIX) and name.removeprefix(unions.FALLBACK_PREFIX) in known


def check(names: list[str], spec_types: dict[str, Any]) -> None:
    """Raise unless every public model name is a spec type's or one `model_classes` gives (what `diff` compares)."""
    allowed = set(spec_types) | set(model_classes(spec_types))
    wrong = sorted(n for n in names if not n.startswith("_") and n not in allowed)
    if wrong:
        raise RuntimeError(f"generated models with names the spec does not state: {', '.join(wrong)}")
