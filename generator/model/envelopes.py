"""JSON-RPC envelopes: the message types (`ClientRequest`, `AgentNotification`, ...) that wrap every method's params.

The spec declares an envelope with one line, `x-envelope: {message: request, from: client}`, and this module
writes its schema from the method files: the params (or results) of every method that side sends, plus, for the
Client's and the Agent's, the extension type for `_`-prefixed methods. The list is never written by hand, so adding
a method adds it to its envelopes.

The members come in the order ACP declares its methods (`initialize` first), because consumers read that order:
the TypeScript SDK's validators are first-match unions, so a member listed before the right one can take a message
and drop its fields. A request or notification envelope names that order in its declaration
(`order: [initialize, ...]`, checked to list each method it carries once); a response envelope answers requests in
the order of the request envelope it answers. The audit compares the result with the published schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

ENVELOPE = "x-envelope"
# Which method directions each sender's messages travel in (the method files' `direction`). Methods either side
# may send (`either`: `$/cancel_request`) are protocol-level, as in ACP's own schema: they belong to no envelope.
SENDS = {
    "client": ("client-to-agent",),
    "agent": ("agent-to-client",),
    "proxy": ("proxy",),
}
# The senders whose envelopes also carry extension (`_`-prefixed) methods; ACP's proxy envelopes carry none.
EXTENDED = ("client", "agent")
# The extension type of each message kind (for `_`-prefixed methods, whose shapes are private to the peers).
EXTENSION = {"request": "ExtRequest", "notification": "ExtNotification", "response": "ExtResponse"}
# The title of the extension type's branch in each envelope, as ACP names that member.
EXTENSION_TITLE = {"request": "ExtMethodRequest", "notification": "ExtNotification", "response": "ExtMethodResponse"}
ORDER = "order"  # in a request or notification envelope's declaration: its methods, in ACP's order
REQUEST_ID = "RequestId"
ERROR = "Error"


class _Routed(Protocol):
    name: str
    kind: str
    direction: str


class _Method(_Routed, Protocol):
    params: str | None
    result: str | None


_M = TypeVar("_M", bound=_Routed)


def needs(message: str, sender: str) -> tuple[str, ...]:
    """The types an envelope of this message kind and sender refers to besides the methods' own."""
    extension = (EXTENSION[message],) if sender in EXTENDED else ()
    return (*extension, REQUEST_ID, *((ERROR,) if message == "response" else ()))


def envelope_of(schema: Any) -> tuple[str, str] | None:
    """(message, from) when `schema` declares an envelope, else None."""
    if not isinstance(schema, dict) or not isinstance(schema.get(ENVELOPE), dict):
        return None
    declared = schema[ENVELOPE]
    message, sender = declared.get("message"), declared.get("from")
    if not isinstance(message, str) or not isinstance(sender, str) or message not in EXTENSION or sender not in SENDS:
        return None  # semantics reports a malformed declaration (invalid-envelope)
    return message, sender


def declared_order(schema: Any) -> list[str] | None:
    """The method names a request or notification envelope lists under `order`, or None when it lists none."""
    declared = envelope_of(schema)
    listed = schema[ENVELOPE].get(ORDER) if declared is not None else None
    if not isinstance(listed, list):
        return None
    return [name for name in listed if isinstance(name, str)]


def ranked(methods: Iterable[_M], schemas: Iterable[Any]) -> tuple[_M, ...]:
    """`methods` in the order the envelopes among `schemas` declare: each (name, kind) at its place in the order of
    the envelope it travels in; methods no order lists follow, in the order given."""
    rank: dict[tuple[str, str], int] = {}
    for schema in schemas:
        listed = declared_order(schema)
        if listed is None:
            continue
        kind = "notification" if envelope_of(schema)[0] == "notification" else "request"  # type: ignore[index]
        for index, name in enumerate(listed):
            rank.setdefault((name, kind), index)
    last = len(rank)
    return tuple(sorted(methods, key=lambda m: rank.get((m.name, m.kind), last)))


def order_problems(schema: Any, methods: Iterable[_Routed]) -> list[tuple[tuple[str | int, ...], str]]:
    """(path inside the declaration, message) for each way an envelope's `order` is wrong: on a response envelope,
    not a list of method names, a name listed twice or not carried. A carried method the order leaves out is no
    problem: it follows the listed ones (a method of ours, which ACP's order cannot place), and the audit names an
    ACP method out of its published place."""
    declared = envelope_of(schema)
    if declared is None or ORDER not in schema[ENVELOPE]:
        return []
    listed = schema[ENVELOPE][ORDER]
    if declared[0] == "response":
        return [((ORDER,), "a response envelope answers in the order of the requests it answers; it lists none")]
    if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
        return [((ORDER,), f"{ORDER} must be a list of method names")]
    kind = "notification" if declared[0] == "notification" else "request"
    carried_names = [m.name for m in methods if m.kind == kind and m.direction in SENDS[declared[1]]]
    out: list[tuple[tuple[str | int, ...], str]] = []
    seen: set[str] = set()
    for index, name in enumerate(listed):
        if name in seen:
            out.append(((ORDER, index), f"{name!r} is listed twice"))
        elif name not in carried_names:
            out.append(((ORDER, index), f"{name!r} is no {kind} this envelope carries"))
        seen.add(name)
    return out


def carried(declared: tuple[str, str], methods: Iterable[_Method]) -> list[str]:
    """The type names an envelope (message, from) carries: its methods' params or results, then the extension type.

    Empty for an envelope none of `methods` travels in and with no extension type (a proxy envelope in the stable
    bundle, where every proxy method is unstable).
    """
    message, sender = declared
    kind = "notification" if message == "notification" else "request"
    if message == "response":
        asked_by = {"client": "agent", "agent": "client", "proxy": "proxy"}[sender]
        directions = SENDS[asked_by]
    else:
        directions = SENDS[sender]
    names: list[str] = []
    for m in methods:
        if m.kind == kind and m.direction in directions:
            name = m.result if message == "response" else m.params
            if name is not None and name not in names:
                names.append(name)
    return [*names, *([EXTENSION[message]] if sender in EXTENDED else [])]


def expand(schema: dict[str, Any], methods: Iterable[_Method], ref_prefix: str) -> dict[str, Any]:
    """The full schema of an envelope declaration (unchanged when `schema` declares none).

    A response envelope answers the requests of the *other* side: `ClientResponse` carries the results of requests
    the Agent sends (and a proxy's responses answer requests sent along the proxy chain).
    """
    declared = envelope_of(schema)
    if declared is None:
        return schema
    message = declared[0]
    kind = "notification" if message == "notification" else "request"
    payload: list[dict[str, Any]] = [{"$ref": ref_prefix + n} for n in carried(declared, methods)]
    if declared[1] in EXTENDED:  # the last member: ACP titles it by its own name for the extension methods
        payload[-1] = {"title": EXTENSION_TITLE[message], **payload[-1]}
    ident = {"$ref": ref_prefix + REQUEST_ID}
    keep = {k: v for k, v in schema.items() if k not in ("type", "properties", "required", "anyOf")}
    if message == "response":
        return {
            **keep,
            "anyOf": [
                {
                    "title": "Result",
                    "type": "object",
                    "properties": {"id": ident, "result": {"anyOf": payload}},
                    "required": ["id", "result"],
                },
                {
                    "title": "Error",
                    "type": "object",
                    "properties": {
                        "id": {"anyOf": [ident, {"type": "null"}]},
                        "error": {"$ref": ref_prefix + ERROR},
                    },
                    "required": ["id", "error"],
                },
            ],
        }
    properties: dict[str, Any] = {"id": ident} if kind == "request" else {}
    properties |= {"method": {"type": "string"}, "params": {"anyOf": [{"anyOf": payload}, {"type": "null"}]}}
    required = ["id", "method"] if kind == "request" else ["method"]
    return {**keep, "type": "object", "properties": properties, "required": required}
