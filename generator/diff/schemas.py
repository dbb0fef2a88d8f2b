"""The type rules: compare two JSON Schemas node by node and name every change by its rule.

Types are compared by name. Inside a type the walk follows the structure: properties, items, union variants,
constraints. Where both sides refer to the same named type it stops (that type is compared on its own); where a
reference now points at another type, the two targets are compared in step, so a rename that keeps the shape
reports nothing on the wire. Annotations (description, title, examples, x-*) only ever give description changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .change import Change, Scope, Where
from .shapes import (
    MISSING,
    TEXTS,
    UNIONS,
    Node,
    Tagged,
    Values,
    accepts,
    branch_label,
    is_open,
    ref_name,
    show,
    signature,
    strip,
    strip_deep,
    type_set,
    types_text,
    value_set,
    view,
)
from .snapshot import Snapshot, reachable

_LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains")
_UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains")
_SHAPE = ("pattern", "format", "multipleOf", "contentEncoding", "contentMediaType", "propertyNames", "uniqueItems")
_OPEN_OBJECT = ("additionalProperties", "unevaluatedProperties")
# Keywords that the walk compares itself; every other keyword is compared as a whole (schema-changed).
_HANDLED = frozenset(
    {"type", "properties", "required", "items", "const", "enum", "default", "$ref", "allOf"}
    | set(_LOWER)
    | set(_UPPER)
    | set(_SHAPE)
    | set(_OPEN_OBJECT)
    | set(UNIONS)
)


Emit = Callable[[Change], None]


class TypeComparer:
    """Compares the types two snapshots share, reporting through `emit`."""

    def __init__(self, old: Snapshot, new: Snapshot, emit: Emit) -> None:
        self.old, self.new, self.emit = old, new, emit
        self.in_step: set[tuple[str, str]] = set()

    def named(self, old_name: str, new_name: str, subject: str | None = None) -> None:
        """Compare old type `old_name` with new type `new_name` (the same name, or a method's retargeted type)."""
        if (old_name, new_name) in self.in_step:
            return
        self.in_step.add((old_name, new_name))
        owner = new_name
        a, b = self._def(self.old, old_name), self._def(self.new, new_name)
        self.node(a, b, subject or new_name, owner)

    def unchanged(self) -> set[str]:
        """The shared types whose walk could report nothing: each has the same schema on both sides, and so has
        every type it reaches through $refs (a union reads its variants' tags from their definitions, so a change
        there is reported on the union too)."""
        old, new = self.old.types, self.new.types
        same = {name for name in old.keys() & new.keys() if old[name] == new[name]}
        refs: dict[str, list[str]] = {}
        return {name for name in same if reachable(new, name, refs) <= same}

    @staticmethod
    def _def(side: Snapshot, name: str) -> Node:
        file, path = side.origins[name]
        return Node(side.types[name], file, path)

    # -- reporting ------------------------------------------------------------------------------------------
    def _report(self, rule: str, subject: str, owner: str, text: str, a: Where | None, b: Where | None) -> None:
        self.emit(Change(rule, subject, f"{subject}: {text}", Scope("type", owner), a, b))

    # -- the walk -------------------------------------------------------------------------------------------
    def node(self, a: Node, b: Node, subject: str, owner: str) -> None:
        if isinstance(a.schema, dict) and isinstance(b.schema, dict):
            self._texts(a, b, subject, owner)
        a, null_a = view(a)
        b, null_b = view(b)
        if null_a != null_b:
            rule = "nullability-removed" if null_a else "nullability-added"
            said = "no longer accepts null" if null_a else "now accepts null"
            self._report(rule, subject, owner, said, a.at(), b.at())
        ra, rb = ref_name(a.schema), ref_name(b.schema)
        if ra is not None and ra == rb:
            return  # the same named type: compared on its own
        if ra is not None or rb is not None:
            pair = (ra or f"@{a.file}{a.path}", rb or f"@{b.file}{b.path}")
            if pair in self.in_step:
                return
            self.in_step.add(pair)
            if (ra is not None and ra not in self.old.types) or (rb is not None and rb not in self.new.types):
                return  # a dangling reference is the loader's business
            a2 = self._def(self.old, ra) if ra is not None else a
            b2 = self._def(self.new, rb) if rb is not None else b
            self.node(a2, b2, subject, owner)
            return
        if not isinstance(a.schema, dict) or not isinstance(b.schema, dict):
            if strip(a.schema) != strip(b.schema):
                self._report("schema-changed", subject, owner, "the schema changed", a.at(), b.at())
            return
        self._shapes(a, b, subject, owner)

    def _texts(self, a: Node, b: Node, subject: str, owner: str) -> None:
        for key in TEXTS:
            old, new = a.schema.get(key), b.schema.get(key)
            if old != new and (isinstance(old, str) or isinstance(new, str)):
                said = "removed" if new is None else "added" if old is None else "changed"
                self._report("description-changed", subject, owner, f"{key} {said}", a.at(key), b.at(key))

    # -- what a node is -------------------------------------------------------------------------------------
    def _shapes(self, a: Node, b: Node, subject: str, owner: str) -> None:
        va, vb = value_set(a.schema), value_set(b.schema)
        ua, ub = self._tagged(a, self.old), self._tagged(b, self.new)
        if va is not None and vb is not None:
            self._value_sets(a, b, va, vb, subject, owner)
            self._keywords(a, b, subject, owner, skip=set(UNIONS) | {"enum", "const", "type"})
            return
        if ua is not None and ub is not None:
            self._unions(a, b, ua, ub, subject, owner)
            self._keywords(a, b, subject, owner, skip=set(UNIONS))
            return
        if va is not None or vb is not None:
            plain = b.schema if va is not None else a.schema
            if not any(k in plain for k in (*UNIONS, "enum", "const")):
                closed = (va or vb)[1] is False  # type: ignore[index]
                if closed:  # a free value became a fixed set (or back)
                    rule = "constraint-tightened" if vb is not None else "constraint-loosened"
                    said = "now limited to fixed values" if vb is not None else "no longer limited to fixed values"
                    self._report(rule, subject, owner, said, a.at(), b.at())
                    return
        has_a = any(k in a.schema for k in UNIONS)
        has_b = any(k in b.schema for k in UNIONS)
        if (ua is None) != (ub is None) or has_a != has_b:
            self._report("type-changed", subject, owner, "changed between a union and a single shape", a.at(), b.at())
            return
        if has_a and has_b:
            self._branches(a, b, subject, owner)
            self._keywords(a, b, subject, owner, skip=set(UNIONS))
            return
        self._keywords(a, b, subject, owner, skip=set())

    def _tagged(self, node: Node, side: Snapshot) -> tuple[str, dict[Any, Node], bool] | None:
        """A tagged union: (tag property, variants by tag value, open?). Open: a branch that fixes no tag value."""
        union = next((k for k in UNIONS if k in node.schema), None)
        if union is None or not isinstance(node.schema[union], list):
            return None
        branches = [node.child(o, union, i) for i, o in enumerate(node.schema[union])]
        merged = [self._merged(br.schema, side) for br in branches]
        tags: set[str] | None = None
        for m in merged:
            consts = {k for k, p in m.get("properties", {}).items() if isinstance(p, dict) and "const" in strip(p)}
            if consts or "not" not in m:
                tags = consts if tags is None else tags & consts
        if not tags or len(tags) != 1:
            return None
        tag = next(iter(tags))
        variants: dict[Any, Node] = {}
        is_open = False
        for br, m in zip(branches, merged, strict=True):
            prop = m.get("properties", {}).get(tag)
            if isinstance(prop, dict) and "const" in strip(prop):
                variants[strip(prop)["const"]] = br
            else:
                is_open = True
        return tag, variants, is_open

    def _merged(self, schema: Any, side: Snapshot, depth: int = 0) -> dict[str, Any]:
        """A union branch with its $ref resolved and allOf members folded together (enough to find its tag)."""
        if not isinstance(schema, dict) or depth > 8:
            return {}
        name = ref_name(strip(schema))
        if name is not None:
            return self._merged(side.types.get(name, {}), side, depth + 1)
        out = dict(strip(schema))
        for member in out.pop("allOf", []) if isinstance(out.get("allOf"), list) else []:
            part = self._merged(member, side, depth + 1)
            out["properties"] = {**part.get("properties", {}), **out.get("properties", {})}
            if "not" in part:
                out.setdefault("not", part["not"])
        return out

    # -- unions ---------------------------------------------------------------------------------------------
    def _value_sets(self, a: Node, b: Node, va: Values, vb: Values, subject: str, owner: str) -> None:
        (old_values, old_open), (new_values, new_open) = va, vb
        for value, steps in old_values.items():
            if value not in new_values:
                said = f"value {show(value)} removed"
                self._report("enum-value-removed", subject, owner, said, a.at(*steps), b.at())
        for value, steps in new_values.items():
            if value not in old_values:
                self._report("enum-value-added", subject, owner, f"value {show(value)} added", a.at(), b.at(*steps))
        self._openness(a, b, old_open, new_open, subject, owner, "values")

    def _openness(self, a: Node, b: Node, old_open: bool, new_open: bool, subject: str, owner: str, what: str) -> None:
        if old_open and not new_open:
            self._report("union-closed", subject, owner, f"unknown {what} are no longer accepted", a.at(), b.at())
        elif new_open and not old_open:
            self._report("union-opened", subject, owner, f"unknown {what} are now accepted", a.at(), b.at())

    def _unions(self, a: Node, b: Node, ua: Tagged, ub: Tagged, subject: str, owner: str) -> None:
        (tag_a, var_a, open_a), (tag_b, var_b, open_b) = ua, ub
        if tag_a != tag_b:
            said = f"variants are told apart by {tag_b!r} instead of {tag_a!r}"
            self._report("discriminator-changed", subject, owner, said, a.at(), b.at())
            return
        for value, branch in var_a.items():
            if value not in var_b:
                said = f"variant {tag_a}={show(value)} removed"
                self._report("union-variant-removed", subject, owner, said, branch.at(), b.at())
        for value, branch in var_b.items():
            if value not in var_a:
                said = f"variant {tag_a}={show(value)} added"
                self._report("union-variant-added", subject, owner, said, a.at(), branch.at())
            else:
                self.node(var_a[value], branch, f"{subject}[{tag_a}={value}]", owner)
        self._openness(a, b, open_a, open_b, subject, owner, f"{tag_a} values")

    def _branches(self, a: Node, b: Node, subject: str, owner: str) -> None:
        """An untagged union: branches match by the type they name, by their whole shape, or else by their title."""
        ka = next(k for k in UNIONS if k in a.schema)
        kb = next(k for k in UNIONS if k in b.schema)
        if not isinstance(a.schema[ka], list) or not isinstance(b.schema[kb], list):
            return
        old = {signature(o): a.child(o, ka, i) for i, o in enumerate(a.schema[ka])}
        new = {signature(o): b.child(o, kb, i) for i, o in enumerate(b.schema[kb])}
        gone = [s for s in old if s not in new]
        came = [s for s in new if s not in old]
        # Branches whose shapes differ but whose titles match (ACP titles its envelopes' Result and Error) are the
        # same branch, edited: compare each such pair in depth.
        titled_gone = {_title(old[s].schema): s for s in gone}
        for sig in list(came):
            title = _title(new[sig].schema)
            if title is not None and title in titled_gone:
                before = titled_gone.pop(title)
                gone.remove(before)
                came.remove(sig)
                self.node(old[before], new[sig], f"{subject}|{title}", owner)
        if len(gone) == 1 and len(came) == 1:  # one branch edited in place: compare it
            edited = new[came[0]]
            self.node(old[gone[0]], edited, f"{subject}|{kb}[{edited.path[-1]}]", owner)
            return
        for sig in gone:
            said = f"variant {branch_label(old[sig].schema)} removed"
            self._report("union-variant-removed", subject, owner, said, old[sig].at(), b.at())
        for sig in came:
            said = f"variant {branch_label(new[sig].schema)} added"
            self._report("union-variant-added", subject, owner, said, a.at(), new[sig].at())
        if ka != kb:  # anyOf <-> oneOf: whether a value may match several branches
            self._report("schema-changed", subject, owner, f"{ka} became {kb}", a.at(ka), b.at(kb))

    # -- keywords of one shape ------------------------------------------------------------------------------
    def _keywords(self, a: Node, b: Node, subject: str, owner: str, *, skip: set[str]) -> None:
        sa, sb = strip(a.schema), strip(b.schema)
        if "type" not in skip and not self._types(a, b, sa.get("type"), sb.get("type"), subject, owner):
            return
        self._properties(a, b, sa, sb, subject, owner)
        for key in _OPEN_OBJECT:
            self._open_object(a, b, key, sa.get(key), sb.get(key), subject, owner)
        if isinstance(sa.get("items"), dict) and isinstance(sb.get("items"), dict):
            self.node(a.child(sa["items"], "items"), b.child(sb["items"], "items"), f"{subject}[]", owner)
        elif "items" in sa or "items" in sb:
            self._presence(a, b, "items", sa, sb, subject, owner)
        if "const" not in skip:
            self._const(a, b, sa, sb, subject, owner)
        if "enum" not in skip and ("enum" in sa) != ("enum" in sb):
            self._presence(a, b, "enum", sa, sb, subject, owner)
        for key in _LOWER + _UPPER:
            self._bound(a, b, key, sa.get(key), sb.get(key), subject, owner)
        for key in _SHAPE:
            if sa.get(key) != sb.get(key):
                self._presence(a, b, key, sa, sb, subject, owner)
        if sa.get("default", MISSING) != sb.get("default", MISSING):
            said = f"default {show(sa.get('default', MISSING))} became {show(sb.get('default', MISSING))}"
            self._report("default-changed", subject, owner, said, a.at("default"), b.at("default"))
        self._all_of(a, b, sa, sb, subject, owner)
        for key in sorted((set(sa) | set(sb)) - _HANDLED):
            if strip_deep(sa.get(key)) != strip_deep(sb.get(key)):
                self._report("schema-changed", subject, owner, f"keyword {key} changed", a.at(key), b.at(key))

    def _types(self, a: Node, b: Node, ta: Any, tb: Any, subject: str, owner: str) -> bool:
        """Compare `type`; False when the types are unrelated (then the rest of the node is not compared)."""
        old, new = type_set(ta), type_set(tb)
        if old == new:
            return True
        if accepts(old, new) and not accepts(new, old):
            rule, said = "type-narrowed", f"type narrowed from {types_text(ta)} to {types_text(tb)}"
        elif accepts(new, old) and not accepts(old, new):
            rule, said = "type-widened", f"type widened from {types_text(ta)} to {types_text(tb)}"
        else:
            self._report(
                "type-changed", subject, owner, f"type {types_text(ta)} became {types_text(tb)}", a.at(), b.at("type")
            )
            return False
        self._report(rule, subject, owner, said, a.at("type"), b.at("type"))
        return True

    def _properties(self, a: Node, b: Node, sa: dict, sb: dict, subject: str, owner: str) -> None:
        pa, pb = sa.get("properties", {}), sb.get("properties", {})
        if not isinstance(pa, dict) or not isinstance(pb, dict):
            return
        ra, rb = set(sa.get("required", [])), set(sb.get("required", []))
        for name in pa:
            if name not in pb:
                where = a.at("properties", name, key=True)
                said = f"{'required' if name in ra else 'optional'} property removed"
                self._report("property-removed", f"{subject}.{name}", owner, said, where, b.at("properties"))
        for name in pb:
            if name not in pa:
                rule = "required-property-added" if name in rb else "property-added"
                said = f"{'required' if name in rb else 'optional'} property added"
                self._report(
                    rule, f"{subject}.{name}", owner, said, a.at("properties"), b.at("properties", name, key=True)
                )
        for name in sorted((ra ^ rb) - (set(pa) ^ set(pb))):
            now = name in rb
            rule = "property-made-required" if now else "property-made-optional"
            said = "now required" if now else "no longer required"
            self._report(rule, f"{subject}.{name}", owner, said, a.at("required"), b.at("required"))
        for name in pa:
            if name in pb:
                self.node(
                    a.child(pa[name], "properties", name),
                    b.child(pb[name], "properties", name),
                    f"{subject}.{name}",
                    owner,
                )

    def _open_object(self, a: Node, b: Node, key: str, old: Any, new: Any, subject: str, owner: str) -> None:
        if isinstance(old, dict) and isinstance(new, dict) and strip(old) and strip(new):
            self.node(a.child(old, key), b.child(new, key), f"{subject}{{*}}", owner)
            return
        closed_a, closed_b = old is False, new is False
        if closed_a == closed_b:
            if strip_deep(old) != strip_deep(new) and not (is_open(old) and is_open(new)):
                self._report("schema-changed", subject, owner, f"{key} changed", a.at(key), b.at(key))
            return
        rule = "additional-properties-closed" if closed_b else "additional-properties-opened"
        said = "no longer accepts properties it does not list" if closed_b else "now accepts unlisted properties"
        self._report(rule, subject, owner, f"{said} ({key})", a.at(key), b.at(key))

    def _const(self, a: Node, b: Node, sa: dict, sb: dict, subject: str, owner: str) -> None:
        if sa.get("const", MISSING) == sb.get("const", MISSING):
            return
        if "const" in sa and "const" in sb:
            said = f"constant {show(sa['const'])} became {show(sb['const'])}"
            self._report("const-changed", subject, owner, said, a.at("const"), b.at("const"))
        else:
            self._presence(a, b, "const", sa, sb, subject, owner)

    def _presence(self, a: Node, b: Node, key: str, sa: dict, sb: dict, subject: str, owner: str) -> None:
        """A constraint that was added (tighter), removed (looser) or replaced (changed)."""
        if key not in sa:
            rule, said = "constraint-tightened", f"{key} {show(sb[key])} added"
        elif key not in sb:
            rule, said = "constraint-loosened", f"{key} {show(sa[key])} removed"
        elif key == "uniqueItems":
            rule = "constraint-tightened" if sb[key] else "constraint-loosened"
            said = f"uniqueItems {show(sa[key])} became {show(sb[key])}"
        else:
            rule, said = "constraint-changed", f"{key} {show(sa[key])} became {show(sb[key])}"
        if key == "uniqueItems" and key in sa and key not in sb and not sa[key]:
            return
        self._report(rule, subject, owner, said, a.at(key), b.at(key))

    def _bound(self, a: Node, b: Node, key: str, old: Any, new: Any, subject: str, owner: str) -> None:
        if old == new:
            return
        lower = key in _LOWER
        if old is None:
            tighter, said = True, f"{key} {show(new)} added"
        elif new is None:
            tighter, said = False, f"{key} {show(old)} removed"
        else:
            tighter, said = (new > old) == lower, f"{key} {show(old)} became {show(new)}"
        rule = "constraint-tightened" if tighter else "constraint-loosened"
        self._report(rule, subject, owner, said, a.at(key), b.at(key))

    def _all_of(self, a: Node, b: Node, sa: dict, sb: dict, subject: str, owner: str) -> None:
        la, lb = sa.get("allOf"), sb.get("allOf")
        if la == lb:
            return
        if isinstance(la, list) and isinstance(lb, list) and len(la) == len(lb):
            for i, (x, y) in enumerate(zip(la, lb, strict=True)):
                self.node(a.child(x, "allOf", i), b.child(y, "allOf", i), subject, owner)
        elif strip_deep(la) != strip_deep(lb):
            self._report("schema-changed", subject, owner, "allOf changed", a.at("allOf"), b.at("allOf"))


def _title(schema: Any) -> str | None:
    """A branch's title, when it has a non-empty one."""
    title = schema.get("title") if isinstance(schema, dict) else None
    return title if isinstance(title, str) and title else None
