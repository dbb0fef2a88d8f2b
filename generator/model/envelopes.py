"""JSON-RPC envelopes: the message types (`ClientRequest`, `AgentNotification`, ...) that wrap every method's params.

The spec declares an envelope with one line, `x-envelope: {message: request, from: client}`, and this module
writes its schema from the method files: the params (or results) of every method that side sends, in method order,
plus, for the Client's and the Agent's, the extension type for `_`-prefixed methods. The list is never written by
hand, so adding a method adds it to its envelopes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

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
REQUEST_ID = "RequestId"
ERROR = "Error"


class _Method(Protocol):
    name: str
    kind: str
    direction: str
    params: str | None
    result: str | None


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
    payload = [{"$ref": ref_prefix + n} for n in carried(declared, methods)]
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
