"""Comparing two JSON Schemas for wire differences: ours (the spec's types) and a published ACP schema.

A pure function of its inputs (no files, no network), so it is tested on small documents. Names are not part of
the wire, so types are compared structurally: from each method's params and result on both sides, following
`$ref`s in step. A difference is reported where it occurs, named after the published type: a property only on one
side, required on one side only, a changed type, nullability, enum or const values, `additionalProperties`, union
variants, and closed unions where the published schema accepts unknown variants.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ERROR_TYPE = "Error"  # the JSON-RPC error object, the same name on both sides

# Keywords that do not change what validates (or that only one side's tooling reads).
_ANNOTATIONS = frozenset(
    {"description", "title", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly", "discriminator"}
)


@dataclass(frozen=True)
class OurEntry:
    """A (method, kind) entry of our spec: its stability and the names of its params and result types."""

    name: str
    kind: str
    stability: str
    params: str | None
    result: str | None


@dataclass(frozen=True)
class Entry:
    """A (method, kind) of the published schema with its params and result types."""

    name: str
    kind: str
    params: str | None
    result: str | None


def published_entries(schema: dict[str, Any]) -> dict[tuple[str, str], Entry]:
    """Entries of a published schema, from the `x-method` marks on its params and result types."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for name, definition in schema.get("$defs", {}).items():
        method = definition.get("x-method")
        if not isinstance(method, str):
            continue
        kind = "notification" if name.endswith("Notification") else "request"
        role = "result" if name.endswith("Response") else "params"
        found.setdefault((method, kind), {})[role] = name
    return {
        key: Entry(key[0], key[1], roles.get("params"), roles.get("result")) for key, roles in sorted(found.items())
    }


# -- the structural comparison ------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Difference:
    where: str
    what: str
    only_in: str = ""  # the file (schema.json, schema.unstable.json) when the audit found it in that one only

    def line(self) -> str:
        return f"{self.where}: {self.what}" + (f" [in {self.only_in} only]" if self.only_in else "")


def _strip(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    return {k: v for k, v in node.items() if k not in _ANNOTATIONS and not k.startswith("x-")}


def _ref_name(node: Any) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        return node["$ref"].rsplit("/", 1)[-1]
    return None


def _deep_strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_strip(v) for k, v in _strip(value).items()}
    if isinstance(value, list):
        return [_deep_strip(v) for v in value]
    return value


def _short(value: Any) -> str:
    """A value for a difference line: without annotations (never the published prose), cut to 80 characters."""
    if value is None:
        return "absent"
    text = json.dumps(_deep_strip(value), sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


class _Comparer:
    def __init__(self, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
        self.ours = ours
        self.theirs = theirs
        self.seen: set[tuple[str, str]] = set()
        self.found: set[Difference] = set()

    def add(self, where: str, what: str) -> None:
        self.found.add(Difference(where, what))

    # one level of normalisation -----------------------------------------------------------------------
    def _unwrap(self, node: Any, defs: dict[str, Any]) -> Any:
        """Drop annotations and a lone `allOf: [X]` wrapper (a common way to annotate a $ref)."""
        node = _strip(node)
        while isinstance(node, dict) and set(node) == {"allOf"} and len(node["allOf"]) == 1:
            node = _strip(node["allOf"][0])
        return node

    def _merge(self, node: Any, defs: dict[str, Any]) -> Any:
        """Resolve a $ref and fold `allOf` members into one object schema (used for union branches)."""
        node = self._unwrap(node, defs)
        name = _ref_name(node)
        if name is not None:
            node = self._unwrap(defs.get(name, {}), defs)
        if not isinstance(node, dict) or "allOf" not in node:
            return node
        merged = {k: v for k, v in node.items() if k != "allOf"}
        props = dict(merged.get("properties", {}))
        required = list(merged.get("required", []))
        for member in node["allOf"]:
            part = self._merge(member, defs)
            if not isinstance(part, dict):
                continue
            for key, value in part.items():
                if key == "properties":
                    props = {**value, **props}
                elif key == "required":
                    required += [r for r in value if r not in required]
                else:
                    merged.setdefault(key, value)
        if props:
            merged["properties"] = props
        if required:
            merged["required"] = required
        return merged

    def _nullable(self, node: dict[str, Any], defs: dict[str, Any]) -> tuple[bool, Any]:
        kind = node.get("type")
        if isinstance(kind, list) and "null" in kind:
            rest = [t for t in kind if t != "null"]
            out = dict(node)
            if rest:
                out["type"] = rest[0] if len(rest) == 1 else rest
            else:
                out.pop("type")
            return True, out
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if not isinstance(options, list) or len(node) != 1:
                continue
            nulls = [o for o in options if _strip(o) == {"type": "null"}]
            if len(nulls) != 1:
                continue
            if len(options) == 2:  # X | null: X is compared as it is, by name when it is a $ref
                return True, next(o for o in options if _strip(o) != {"type": "null"})
            # A | B | null, perhaps written as (A | B) | null on the other side: compare the union A | B
            options = self._inlined(options, key, defs)
            return True, {key: [o for o in options if _strip(o) != {"type": "null"}]}
        return False, node

    def _inlined(self, options: list[Any], key: str, defs: dict[str, Any]) -> list[Any]:
        """`options` with each branch that refers to a bare union of the same keyword replaced by its branches:
        `anyOf: [RequestId, null]` with `RequestId: anyOf [integer, string]` is `anyOf: [integer, string, null]`."""
        out: list[Any] = []
        for option in options:
            name = _ref_name(_strip(option))
            target = _strip(defs.get(name)) if name is not None else None
            if isinstance(target, dict) and set(target) == {key} and isinstance(target[key], list):
                out.extend(target[key])
            else:
                out.append(option)
        return out

    def _union(
        self, node: dict[str, Any], defs: dict[str, Any], outer: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any], bool] | None:
        """A tagged union: every branch but an optional open one fixes one property to a constant.

        `outer` holds keywords that sit beside the union (shared properties, say); they are folded into every
        variant, so that shared properties written once or repeated in each variant compare as equal.
        """
        if "properties" in node:
            return None
        branches = node.get("anyOf") or node.get("oneOf")
        if not isinstance(branches, list) or not branches:
            return None
        closed, open_ = [], False
        for branch in branches:
            merged = self._merge(branch, defs)
            if not isinstance(merged, dict):
                return None
            if "not" in merged:
                open_ = True
            else:
                closed.append(merged)
        if not closed:
            return None
        tags = None
        for merged in closed:
            consts = {
                k for k, p in merged.get("properties", {}).items() if isinstance(p, dict) and "const" in _strip(p)
            }
            tags = consts if tags is None else tags & consts
        if not tags or len(tags) != 1:
            return None
        tag = tags.pop()
        variants: dict[str, Any] = {}
        for merged in closed:
            value = _strip(merged["properties"][tag])["const"]
            if value in variants:
                return None
            variants[value] = _fold(outer, merged) if outer else merged
        return tag, variants, open_

    # the walk -----------------------------------------------------------------------------------------
    def named(self, ours: str, theirs: str) -> None:
        if (ours, theirs) in self.seen:
            return
        self.seen.add((ours, theirs))
        if ours not in self.ours:
            self.add(f"type {theirs}", f"our type {ours} is not defined")
            return
        self.node(self.ours[ours], self.theirs.get(theirs, {}), f"type {theirs}")

    def node(self, a: Any, b: Any, where: str) -> None:
        a, b = self._unwrap(a, self.ours), self._unwrap(b, self.theirs)
        ra, rb = _ref_name(a), _ref_name(b)
        if ra and rb and len(a) == 1 and len(b) == 1:
            self.named(ra, rb)
            return
        if ra and len(a) == 1:
            a = self._unwrap(self.ours.get(ra, {}), self.ours)
        if rb and len(b) == 1:
            b = self._unwrap(self.theirs.get(rb, {}), self.theirs)
        if not isinstance(a, dict) or not isinstance(b, dict):
            if a != b:
                self.add(where, f"schema here {_short(a)}, there {_short(b)}")
            return
        na, a = self._nullable(a, self.ours)
        nb, b = self._nullable(b, self.theirs)
        if na != nb:
            self.add(where, "nullable here, not there" if na else "nullable there, not here")
        if na or nb:  # the non-null part may itself be a $ref
            a, b = self._unwrap(a, self.ours), self._unwrap(b, self.theirs)
            ra, rb = _ref_name(a), _ref_name(b)
            if ra and rb and len(a) == 1 and len(b) == 1:
                self.named(ra, rb)
                return
            if ra and len(a) == 1:
                a = self._unwrap(self.ours.get(ra, {}), self.ours)
            if rb and len(b) == 1:
                b = self._unwrap(self.theirs.get(rb, {}), self.theirs)
        ua, ub = self._union(a, self.ours), self._union(b, self.theirs)
        if ua and ub:
            self._unions(ua, ub, where)
            return
        self._keywords(a, b, where)

    def _unions(self, ua: tuple[str, dict[str, Any], bool], ub: tuple[str, dict[str, Any], bool], where: str) -> None:
        (tag_a, va, open_a), (tag_b, vb, open_b) = ua, ub
        if tag_a != tag_b:
            self.add(where, f"union tag here {tag_a}, there {tag_b}")
            return
        for value in sorted(set(va) | set(vb), key=str):
            if value not in vb:
                self.add(where, f"variant {tag_a}={value} only here")
            elif value not in va:
                self.add(where, f"variant {tag_a}={value} only there")
            else:
                self._keywords(va[value], vb[value], f"{where}[{tag_a}={value}]")
        if open_a != open_b:
            self.add(
                where,
                f"unknown {tag_a} values accepted " + ("here, not there" if open_a else "there, rejected here"),
            )

    def _keywords(self, a: dict[str, Any], b: dict[str, Any], where: str) -> None:
        # An object that is also a tagged union (properties beside anyOf/oneOf, or a union folded in by allOf):
        # compare the union part variant by variant, whichever keyword each side uses.
        ka = next((k for k in ("oneOf", "anyOf") if k in a), None)
        kb = next((k for k in ("oneOf", "anyOf") if k in b), None)
        if ka and kb:
            outer_a = {k: v for k, v in a.items() if k not in (ka, "discriminator")}
            outer_b = {k: v for k, v in b.items() if k not in (kb, "discriminator")}
            ua = self._union({ka: a[ka]}, self.ours, outer_a)
            ub = self._union({kb: b[kb]}, self.theirs, outer_b)
            if ua and ub:
                self._unions(ua, ub, where)
                return
        pa, pb = a.get("properties", {}), b.get("properties", {})
        req_a, req_b = set(a.get("required", [])), set(b.get("required", []))
        for name in sorted(set(pa) | set(pb)):
            if name not in pb:
                self.add(where, f"property {name} only here ({'required' if name in req_a else 'optional'})")
            elif name not in pa:
                self.add(where, f"property {name} only there ({'required' if name in req_b else 'optional'})")
            else:
                if (name in req_a) != (name in req_b):
                    self.add(
                        f"{where}.{name}",
                        "required here, optional there" if name in req_a else "required there, optional here",
                    )
                self.node(pa[name], pb[name], f"{where}.{name}")
        for name in sorted((req_a ^ req_b) - set(pa) - set(pb)):
            self.add(where, f"{name} required {'here' if name in req_a else 'there'} only")
        for key in sorted((set(a) | set(b)) - {"properties", "required"}):
            va, vb = a.get(key), b.get(key)
            if key in ("items", "additionalProperties", "not", "unevaluatedProperties", "propertyNames") and (
                isinstance(va, dict) and isinstance(vb, dict)
            ):
                self.node(va, vb, where + _STEP.get(key, "{" + key + "}"))
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(va, list) and isinstance(vb, list):
                if len(va) != len(vb):
                    self.add(where, f"{key} has {len(va)} branches here, {len(vb)} there")
                    continue
                for i, (x, y) in enumerate(zip(va, vb, strict=True)):
                    self.node(x, y, f"{where}|{key}[{i}]")
            elif key == "type" and _types(va) != _types(vb):
                self.add(where, f"type here {_short(va)}, there {_short(vb)}")
            elif key != "type" and _norm(va) != _norm(vb):
                self.add(where, f"{key} here {_short(va)}, there {_short(vb)}")


def _fold(outer: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """A union variant with the keywords beside its union added (the variant's own win)."""
    out = dict(variant)
    for key, value in outer.items():
        if key == "properties":
            out["properties"] = {**value, **variant.get("properties", {})}
        elif key == "required":
            out["required"] = [
                *variant.get("required", []),
                *(r for r in value if r not in variant.get("required", [])),
            ]
        else:
            out.setdefault(key, value)
    return out


_STEP = {"items": "[]", "not": "!"}  # how a path into a subschema is written in difference lines


def _types(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    return frozenset(value if isinstance(value, list) else [value])


def _norm(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return _strip(value)


def compare_schemas(
    ours: dict[tuple[str, str], OurEntry],
    our_types: dict[str, Any],
    published: dict[str, Any],
    published_stable: dict[str, Any] | None = None,
) -> list[Difference]:
    """Every difference between our entries and types and a published schema (and its stable sibling), sorted."""
    theirs_defs = published.get("$defs", {})
    entries = published_entries(published)
    stable = set(published_entries(published_stable)) if published_stable is not None else None
    comparer = _Comparer(our_types, theirs_defs)
    for key in sorted(set(entries) - set(ours)):
        comparer.add(f"method {key[0]} ({key[1]})", "published there, but has no retry class here")
    for key in sorted(set(ours) - set(entries)):
        comparer.add(f"method {key[0]} ({key[1]})", "here, but not in the published schema")
    for key in sorted(set(ours) & set(entries)):
        method, entry = ours[key], entries[key]
        where = f"method {key[0]} ({key[1]})"
        if stable is not None and (method.stability == "stable") != (key in stable):
            comparer.add(where, f"{method.stability} here, {'stable' if key in stable else 'unstable'} there")
        for role in ("params", "result"):
            mine, theirs = getattr(method, role), getattr(entry, role)
            if mine is None and theirs is None:
                continue
            if mine is None or theirs is None:
                comparer.add(where, f"{role} type {'only there' if mine is None else 'only here'}")
                continue
            comparer.named(mine, theirs)
    if ERROR_TYPE in our_types and ERROR_TYPE in theirs_defs:
        comparer.named(ERROR_TYPE, ERROR_TYPE)  # any request may be answered with an error object instead
    _compare_envelopes(comparer, ours, entries)
    return sorted(comparer.found)


# -- envelopes ----------------------------------------------------------------------------------------------
ENVELOPE_MARK = "x-envelope"  # how our spec declares an envelope (generator/model/envelopes.py)


def _compare_envelopes(
    comparer: _Comparer, ours: dict[tuple[str, str], OurEntry], entries: dict[tuple[str, str], Entry]
) -> None:
    """The message envelopes (ClientRequest, AgentResponse, ...): which methods each carries, then the rest.

    Their payload unions list one branch per method, each named by the method whose params or result it is: which
    methods each carries, and whether the methods both carry come in the same order. The rest of the envelope (id,
    method, the error branch) is compared like any other schema.
    """
    our_roles = _roles((e.name, e.kind, e.params, e.result) for e in ours.values())
    their_roles = _roles((e.name, e.kind, e.params, e.result) for e in entries.values())
    for name in sorted(
        n for n, schema in comparer.ours.items() if isinstance(schema, dict) and ENVELOPE_MARK in schema
    ):
        if name not in comparer.theirs:
            comparer.add(f"type {name}", "an envelope here, not defined there")
            continue
        where = f"type {name}"
        a, pa = _without_payload(comparer.ours[name], comparer.ours)
        b, pb = _without_payload(comparer.theirs[name], comparer.theirs)
        carried_a = {our_roles.get(ref, f"type {ref}") for ref in pa}
        carried_b = {their_roles.get(ref, f"type {ref}") for ref in pb}
        for item in sorted(carried_a - carried_b):
            comparer.add(where, f"carries {item} here only")
        for item in sorted(carried_b - carried_a):
            comparer.add(where, f"carries {item} there only")
        # The order counts too: consumers with first-match unions (the TypeScript SDK's zod) pick the first member
        # that accepts a message, so the methods both carry must come in the same order.
        order_a = [r for r in dict.fromkeys(our_roles.get(ref, f"type {ref}") for ref in pa) if r in carried_b]
        order_b = [r for r in dict.fromkeys(their_roles.get(ref, f"type {ref}") for ref in pb) if r in carried_a]
        if order_a != order_b:
            at = next(i for i, (x, y) in enumerate(zip(order_a, order_b, strict=True)) if x != y)
            comparer.add(where, f"member {at + 1} is {order_a[at]} here, {order_b[at]} there (another order)")
        comparer.node(a, b, where)


def _roles(rows: Any) -> dict[str, str]:
    """Type name -> 'the params of METHOD (KIND)' (or result), for naming envelope branches by method."""
    out: dict[str, str] = {}
    for method, kind, params, result in rows:
        for role, type_name in (("params", params), ("result", result)):
            if type_name is not None:
                out[type_name] = f"the {role} of {method} ({kind})"
    return out


def _without_payload(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[Any, list[str]]:
    """The envelope with its payload union (params, or a response's result) emptied, and the type names it held."""
    names: list[str] = []

    def refs(branches: Any) -> None:
        for branch in branches if isinstance(branches, list) else []:
            branch = _strip(branch)
            while isinstance(branch, dict) and set(branch) == {"allOf"} and len(branch["allOf"]) == 1:
                branch = _strip(branch["allOf"][0])
            name = _ref_name(branch)
            if name is not None:
                names.append(name)
            elif isinstance(branch, dict) and "anyOf" in branch:
                refs(branch["anyOf"])  # a nested union of payloads (params: payload | null)

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                props = dict(value)
                for payload in ("params", "result"):
                    if isinstance(props.get(payload), dict) and "anyOf" in props[payload]:
                        refs(props[payload]["anyOf"])
                        props[payload] = {}
                out[key] = {k: walk(v) for k, v in props.items()}
            else:
                out[key] = walk(value)
        return out

    return walk(schema), names
