"""Public class names of the generated models: names the spec states, that stay put when a variant is added.

datamodel-code-generator names every model it makes up by number (`AgentResponse1`, `SessionUpdateStateUpdate3`),
counting the branches of the union it belongs to, so adding a variant renames the others. Two passes keep the
package's public names to the spec's:

- before the code generator runs (`named_branches`), each union branch that the spec names is given a type of its
  own, named after its union and that name: a `title` (`AgentResponse` + `Result`), the constant of a tag property
  (`MultiSelectItems` + `String`), or, for the branch that takes unknown tags, the fallback name (`Other` + union,
  as generator/unions.py names every fallback);
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

from .. import naming, unions
from ..semantics import REF_PREFIX

_NUMBERED = re.compile(r"^(?P<owner>[A-Za-z_]\w*?)(?P<number>[0-9]+)$")


def named_branches(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (the code generator's input, changed in place and returned) with every union branch that the
    spec names moved to a type of its own under that name. Types that write fields beside their union keep their
    branches: the code generator combines those fields with each branch itself."""
    defs: dict[str, Any] = document["$defs"]
    for owner in list(defs):
        schema = defs[owner]
        if not isinstance(schema, dict) or "properties" in schema:
            continue
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if not isinstance(branches, list):
                continue
            for index, branch in enumerate(branches):
                name = branch_name(owner, branch)
                if name is None:
                    continue
                if name in defs:
                    raise RuntimeError(f"{owner}: the name of its branch {index}, {name}, is already a type's")
                moved = dict(branch)
                moved.pop("title", None)
                if "description" not in moved and isinstance(schema.get("description"), str):
                    moved = {"description": schema["description"], **moved}
                defs[name] = moved
                branches[index] = {"$ref": REF_PREFIX + name}
    return document


def branch_name(owner: str, branch: Any) -> str | None:
    """The name the spec gives a union branch of `owner`, or None (a reference, a constant, or a nameless one)."""
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
    spec's types alone (what `diff` compares): named branches, fallbacks, and variants extended by a type."""
    out: dict[str, str] = {}
    tagged: dict[str, unions.TaggedUnion] = {}
    for owner, schema in types.items():
        closed = unions.closed(schema)
        union = unions.tagged_union(closed, REF_PREFIX)
        if union is not None:
            tagged[owner] = union
            out[unions.fallback_name(owner)] = owner
        if not isinstance(closed, dict) or "properties" in closed:
            continue
        for key in ("anyOf", "oneOf"):
            for branch in closed.get(key) or []:
                name = branch_name(owner, branch)
                if name is not None:
                    out[name] = owner
    for owner, schema in types.items():
        for part in (schema.get("allOf") or []) if isinstance(schema, dict) else []:
            target = part.get("$ref", "").removeprefix(REF_PREFIX) if isinstance(part, dict) else ""
            if target in tagged:
                out.update({owner + naming.pascal_case(value): owner for value in tagged[target].known})
                out[unions.fallback_name(owner)] = owner
    return {name: owner for name, owner in out.items() if name not in types}


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


def check(names: list[str], document: dict[str, Any]) -> None:
    """Raise unless every public model name is a stated one (`stated`), a fallback, or an owner and a tag."""
    known = stated(document)
    wrong = sorted(n for n in names if not n.startswith("_") and n not in known and not _is_fallback(n, known))
    wrong = [n for n in wrong if _NUMBERED.match(n) or not any(n.startswith(k) for k in known)]
    if wrong:
        raise RuntimeError(f"generated models with names the spec does not state: {', '.join(wrong)}")
