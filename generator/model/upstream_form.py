"""The published schemas in the shape ACP itself publishes: the form SDK code generators read.

The spec writes a tagged union the way code generators dispatch on it (internal form): `oneOf` of `$ref`s with a
`discriminator`, each variant's type carrying its own tag constant. ACP's published schema writes the same union
differently, and the SDKs' pipelines read that shape (the TypeScript SDK emits one type guard per union from it):

- the union is an `anyOf`; each known variant is written inline, as an object whose tag property is the variant's
  constant (required), with `allOf: [{$ref: <variant type>}]` for the variant's fields; the catch-all branch for
  unknown tags comes last;
- a variant's own type does not carry the tag (`TextContent` has no `type`), so that code building one need not
  repeat what the union already says;
- a variant that is a name of the spec's internal form only (listed in the discriminator's `x-inline`: three tags
  of `SessionUpdate` share `ContentChunk`, for instance) has no type of its own there: its branch holds its fields,
  and the type it extends is the branch's `allOf`. When every variant of a union is inline, the fields all of them
  share (the same schema in each) are written once, on the union;
- a reference with a description beside it is wrapped (`{description, allOf: [{$ref}]}`), and a union branch that
  is a bare reference gets a title and the wrapper, as ACP writes both;
- the catch-all branch of a union that declares fields of its own (`SessionConfigOption`'s `configId` and `name`)
  leaves them to the union: a code generator that reads the branch alone would make a model of those fields only;
- a response envelope's error branch writes its `id` inline (the request id's own titled branches, then null);
- the envelopes' `x-envelope` declarations lose their `order`: the members already stand in it.

The rewrite is a pure function of the internal-form bundle: every message that validates against one validates
against the other (tests/pipeline/test_upstream_form.py checks it on the spec's examples and the upstream corpus),
except that a union whose variants are all inline now checks the shared fields of an unknown variant too, as ACP's
schema does.
"""

from __future__ import annotations

import copy
from typing import Any

from . import envelopes, unions
from .spec import REF_PREFIX

INLINE = "x-inline"  # in a discriminator: the tags whose variant types the published form writes inline
_BRANCH_KEYS = ("description", "type", "properties", "required", "allOf")


def inline_tags(schema: dict[str, Any]) -> tuple[str, ...]:
    """The tags of a union (internal form) whose variants are written inline in the published form."""
    discriminator = schema.get("discriminator")
    listed = discriminator.get(INLINE) if isinstance(discriminator, dict) else None
    return tuple(t for t in listed or () if isinstance(t, str))


def problems(name: str, schema: Any) -> list[tuple[str, tuple[str | int, ...], str]]:
    """(code, path inside the type, message) for each tag of `x-inline` that the union does not map."""
    if not isinstance(schema, dict) or not isinstance(schema.get("discriminator"), dict):
        return []
    listed = schema["discriminator"].get(INLINE)
    if listed is None:
        return []
    union = unions.tagged_union(schema, REF_PREFIX)
    known = set(union.known) if union is not None else set()
    if not isinstance(listed, list):
        return [problem("invalid-inline-variant", ("discriminator", INLINE), f"{INLINE} must be a list of tag values")]
    return [
        problem(
            "invalid-inline-variant", ("discriminator", INLINE, i), f"{name} has no variant {tag!r} to write inline"
        )
        for i, tag in enumerate(listed)
        if tag not in known
    ]


def problem(code: str, path: tuple[str | int, ...], message: str) -> tuple[str, tuple[str | int, ...], str]:
    """One problem for the spec's meaning check (generator/check/semantics.py reports it at `path` inside the type)."""
    return code, path, message


def inline_types(defs: dict[str, Any]) -> set[str]:
    """The type names of the internal form that the published form does not have (their unions write them inline)."""
    found: set[str] = set()
    for schema in defs.values():
        union = unions.tagged_union(schema, REF_PREFIX)
        if union is not None:
            inline = set(inline_tags(schema))
            found |= {type_name for value, type_name in union.variants if value in inline}
    return found


def published(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (a bundle in the internal form) in the published form; `document` itself is not changed."""
    out = copy.deepcopy(document)
    defs: dict[str, Any] = out["$defs"]
    dropped: set[str] = set()
    untagged: dict[str, str] = {}  # variant type -> the tag property its union gives it
    for name in list(defs):
        union = unions.tagged_union(defs[name], REF_PREFIX)
        if union is None:
            continue
        inline = set(inline_tags(defs[name]))
        defs[name] = _union(defs[name], union, inline, defs)
        for value, type_name in union.variants:
            if value in inline:
                dropped.add(type_name)
            else:
                untagged[type_name] = union.tag
    for type_name, tag in untagged.items():
        if type_name in defs:
            defs[type_name] = _without_property(defs[type_name], tag)
    for type_name in dropped:
        defs.pop(type_name, None)
    for name in defs:
        defs[name] = _error_id_inline(defs[name], defs)
    ordered = {name: _side_marked(_wrapped(_unordered(defs[name]))) for name in _ordered(defs)}
    head = {k: v for k, v in out.items() if k != "$defs"}
    messages = _messages(ordered)
    if messages:  # ACP's title and root: any message of the protocol (code generators name the root's models by it)
        head = {**head, "title": ACP_TITLE, "anyOf": messages}
    return {**head, "$defs": ordered}


def _error_id_inline(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A response envelope whose error branch writes its `id` inline, as ACP does: the request id's own branches,
    then null (the id of a request that could not be read), rather than a reference beside null."""
    declared = envelopes.envelope_of(schema)
    request_id = defs.get(envelopes.REQUEST_ID)
    if declared is None or declared[0] != "response" or not isinstance(request_id, dict):
        return schema
    if not isinstance(request_id.get("anyOf"), list):
        return schema
    ref = {"$ref": REF_PREFIX + envelopes.REQUEST_ID}
    branches = []
    for branch in schema.get("anyOf") or []:
        ident = (branch.get("properties") or {}).get("id") if isinstance(branch, dict) else None
        if isinstance(ident, dict) and ident.get("anyOf") == [ref, {"type": "null"}]:
            inline = {**ident, "anyOf": [*copy.deepcopy(request_id["anyOf"]), {"type": "null"}]}
            branch = {**branch, "properties": {**branch["properties"], "id": inline}}
        branches.append(branch)
    return {**schema, "anyOf": branches}


def _unordered(schema: dict[str, Any]) -> dict[str, Any]:
    """An envelope without the method order its declaration names: its members are in that order already."""
    declared = schema.get(envelopes.ENVELOPE)
    if isinstance(declared, dict) and envelopes.ORDER in declared:
        return {**schema, envelopes.ENVELOPE: {k: v for k, v in declared.items() if k != envelopes.ORDER}}
    return schema


# The handling side of a message either side may send, as ACP's `x-side` mark spells it (the spec says "either").
PROTOCOL_SIDE = "protocol"


def _side_marked(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("x-side") == "either":
        return {**schema, "x-side": PROTOCOL_SIDE}
    return schema


ACP_TITLE = "Agent Client Protocol"
_JSONRPC = {"jsonrpc": {"description": 'The JSON-RPC version, always "2.0".', "type": "string", "enum": ["2.0"]}}
_MESSAGE_TEXT = 'A JSON-RPC 2.0 message (request, response or notification) that carries `"jsonrpc": "2.0"`.'


def _messages(defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The root's branches, as ACP writes them: each sender's messages (its envelopes), then the protocol-level
    notifications either side may send (`$/cancel_request`)."""
    branches = []
    for sender in (*_SENDERS, "proxy"):
        found = {m: n for n in defs if (e := envelopes.envelope_of(defs[n])) and e[1] == sender for m in [e[0]]}
        if found:
            kinds = [
                {"title": message.title(), "allOf": [{"$ref": REF_PREFIX + found[message]}]}
                for message in _MESSAGES
                if message in found
            ]
            branches.append(
                {
                    "title": sender.title(),
                    "description": _MESSAGE_TEXT,
                    "type": "object",
                    "properties": _JSONRPC,
                    "required": ["jsonrpc"],
                    "anyOf": kinds,
                }
            )
    either = [n for n, d in defs.items() if d.get("x-side") == PROTOCOL_SIDE and n.endswith("Notification")]
    if either:
        params = {"anyOf": [{"title": n, "allOf": [{"$ref": REF_PREFIX + n}]} for n in either]}
        branch = {
            "title": "ProtocolLevel",
            "description": _MESSAGE_TEXT,
            "type": "object",
            "properties": {
                **_JSONRPC,
                "method": {"description": "The notification's method name.", "type": "string"},
                "params": {"description": "The notification's params.", "anyOf": [params, {"type": "null"}]},
            },
            "required": ["jsonrpc", "method"],
        }
        branches.insert(len([b for b in branches if b["title"] != "Proxy"]), branch)
    return branches


# The envelopes the order starts from, as ACP's schema lists its messages: the Agent's, then the Client's.
_SENDERS = ("agent", "client")
_MESSAGES = ("request", "response", "notification")


def _ordered(defs: dict[str, Any]) -> list[str]:
    """The def names in the order ACP's schema gives them, which the Python SDK's pipeline relies on (it inserts
    code after classes that it expects to follow others): from the Agent's and the Client's envelopes, each def
    when it is first referenced, except a union variant's type (the `allOf` of a branch that fixes a tag), which
    comes after the defs it reaches; then the defs no envelope reaches, in name order, the same way."""
    roots = sorted(
        (name for name in defs if (declared := envelopes.envelope_of(defs[name])) and declared[1] in _SENDERS),
        key=lambda name: (
            _SENDERS.index(envelopes.envelope_of(defs[name])[1]),
            _MESSAGES.index(envelopes.envelope_of(defs[name])[0]),
        ),
    )
    seen: set[str] = set()
    out: list[str] = []

    def visit(name: str, after: bool) -> None:
        if name in seen or name not in defs:
            return
        seen.add(name)
        if not after:
            out.append(name)
        walk(defs[name], False)
        if after:
            out.append(name)

    def walk(node: Any, variant: bool) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, variant)
        elif isinstance(node, dict):
            fixed = any(isinstance(p, dict) and "const" in p for p in (node.get("properties") or {}).values())
            for key, item in node.items():
                if key == "$ref" and isinstance(item, str):
                    visit(item.removeprefix(REF_PREFIX), variant)
                else:
                    walk(item, key == "allOf" and fixed)

    for name in [*roots, *sorted(defs)]:
        visit(name, False)
    return out


def _union(schema: dict[str, Any], union: unions.TaggedUnion, inline: set[str], defs: dict[str, Any]) -> dict[str, Any]:
    variants = [(value, defs.get(type_name) or {}, type_name) for value, type_name in union.variants]
    shared: dict[str, Any] = {}
    shared_required: list[str] = []
    if variants and all(value in inline for value, _, _ in variants):
        shared, shared_required = _shared_fields(schema, union.tag, [v for _, v, _ in variants])
    branches = []
    for value, variant, type_name in variants:
        if value in inline:
            branches.append(_inline_branch(variant, union.tag, value, shared))
        else:
            branches.append(_tagged_branch(variant.get("description"), union.tag, value, [REF_PREFIX + type_name]))
    branches += [_open_branch(b, shared, shared_required) for b in schema["oneOf"] if unions.is_catch_all(b)]
    out: dict[str, Any] = {}
    for key, item in schema.items():
        if key == "oneOf":
            if shared:
                out["type"] = "object"
                out["properties"] = shared
                if shared_required:
                    out["required"] = shared_required
            out["anyOf"] = branches
        elif key != "discriminator":
            out[key] = item
    return out


def _open_branch(branch: dict[str, Any], shared: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The catch-all branch without the fields the union itself declares (and requires), as ACP writes it: a code
    generator that reads the branch alone would otherwise make a model of those fields only, apart from the base."""
    if not shared:
        return branch
    out = dict(branch)
    out["properties"] = {n: p for n, p in branch.get("properties", {}).items() if n not in shared}
    out["required"] = [n for n in branch.get("required", []) if n not in required]
    return out


def _shared_fields(
    schema: dict[str, Any], tag: str, variants: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The properties every variant has with the same schema, and those of them every variant requires that an
    unknown variant must also carry (the discriminator's `x-unknownRequires`), so the catch-all keeps its rules."""
    first = variants[0].get("properties") or {}
    shared = {
        name: prop
        for name, prop in first.items()
        if name != tag
        and all(name in (v.get("properties") or {}) and v["properties"][name] == prop for v in variants[1:])
    }
    must = set(schema["discriminator"].get(unions.UNKNOWN_REQUIRES) or ())
    required = [name for name in shared if name in must and all(name in (v.get("required") or ()) for v in variants)]
    return shared, required


def _tagged_branch(description: Any, tag: str, value: str, refs: list[str]) -> dict[str, Any]:
    branch: dict[str, Any] = {} if description is None else {"description": description}
    branch |= {"type": "object", "properties": {tag: {"type": "string", "const": value}}, "required": [tag]}
    if refs:
        branch["allOf"] = [{"$ref": ref} for ref in refs]
    return branch


def _inline_branch(variant: dict[str, Any], tag: str, value: str, shared: dict[str, Any]) -> dict[str, Any]:
    """An inline variant's branch: the tag constant, its own fields (those not written on the union), its `allOf`."""
    refs = [p["$ref"] for p in variant.get("allOf") or [] if isinstance(p, dict) and isinstance(p.get("$ref"), str)]
    branch = _tagged_branch(variant.get("description"), tag, value, refs)
    own = {n: p for n, p in (variant.get("properties") or {}).items() if n != tag and n not in shared}
    branch["properties"].update(own)
    branch["required"] += [n for n in variant.get("required") or () if n != tag and n in own]
    if "allOf" in branch:
        branch["allOf"] = branch.pop("allOf")  # after the fields, as ACP writes it
    rest = {k: v for k, v in variant.items() if k not in _BRANCH_KEYS}
    return {**branch, **rest}


def _without_property(schema: dict[str, Any], name: str) -> dict[str, Any]:
    out = dict(schema)
    if isinstance(out.get("properties"), dict) and name in out["properties"]:
        out["properties"] = {k: v for k, v in out["properties"].items() if k != name}
    if isinstance(out.get("required"), list) and name in out["required"]:
        out["required"] = [r for r in out["required"] if r != name]
        if not out["required"]:
            del out["required"]
    return out


def _wrapped(schema: Any) -> Any:
    """`schema` with every reference that has siblings wrapped in `allOf`, and every union branch that is a bare
    reference titled with the type it names and wrapped, as ACP writes them (a nullable `[ref, null]` stays)."""
    if isinstance(schema, list):
        return [_wrapped(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _wrapped(item) for key, item in schema.items()}
    if isinstance(out.get("$ref"), str) and len(out) > 1:
        ref = out.pop("$ref")
        texts = [i for i, key in enumerate(out) if key in ("title", "description")]
        at = max(texts) + 1 if texts else 0  # after the texts, as ACP writes it
        items = list(out.items())
        out = dict([*items[:at], ("allOf", [{"$ref": ref}]), *items[at:]])
    for key in ("anyOf", "oneOf"):
        branches = out.get(key)
        if not isinstance(branches, list):
            continue
        nullable_ref = len(branches) == 2 and {"type": "null"} in branches
        if nullable_ref:
            continue
        out[key] = [
            {"title": b["$ref"].removeprefix(REF_PREFIX), "allOf": [b]} if _bare_ref(b) else b for b in branches
        ]
        _title_catch_all(out[key])
    return out


def _title_catch_all(branches: list[Any]) -> None:
    """Title the branch that takes values a union does not know, as ACP does (`other`; `unknown` where `other` is
    itself a known value): the branch written with a `not` over the known tags, or the plain string that ends an
    open set of string constants."""
    known = [b.get("const") for b in branches if isinstance(b, dict) and "const" in b]
    for index, branch in enumerate(branches):
        if not isinstance(branch, dict) or "title" in branch:
            continue
        open_set = index == len(branches) - 1 and known and branch == {"type": "string"}
        if "not" in branch or open_set:
            title = "unknown" if unions.CATCH_ALL_TITLE in known else unions.CATCH_ALL_TITLE
            branches[index] = {"title": title, **branch}


def _bare_ref(branch: Any) -> bool:
    return isinstance(branch, dict) and set(branch) == {"$ref"} and isinstance(branch["$ref"], str)
