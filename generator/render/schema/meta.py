"""`meta.json` and `meta.unstable.json` beside the schemas: ACP's method-name maps and protocol version.

ACP publishes them with its schemas, and the SDKs' pipelines read them (the TypeScript SDK's `AGENT_METHODS`,
`CLIENT_METHODS` and `PROTOCOL_VERSION`, the Python SDK's `acp/meta.py`). Written in ACP's form, from the method
files: `agentMethods` the methods an Agent handles, `clientMethods` those a Client handles, `protocolMethods` those
either side may send, `proxyMethods` those of a proxy chain (where there are any), each as `{key: method name}`;
`version` the protocol version (`x-current` of the `ProtocolVersion` type, left out when the spec has none).
Extension methods are in none of the maps, as in ACP's files. The stable file lists stable methods only.
"""

from __future__ import annotations

from typing import Any

from ... import paths
from ...model import naming
from ...model.spec import Method, Spec
from ..markers import json_text

VERSION_TYPE = "ProtocolVersion"
CURRENT = "x-current"
# map name -> the side (model.SIDE_OF_DIRECTION) whose methods it lists
MAPS = (
    ("agentMethods", "agent"),
    ("clientMethods", "client"),
    ("protocolMethods", "either"),
    ("proxyMethods", "proxy"),
)
OPTIONAL = ("proxyMethods",)  # written only where such methods exist, as in ACP's files


def protocol_version(spec: Spec) -> int | None:
    """The protocol version the spec describes; None when it gives none (a fixture spec without the type)."""
    for t in spec.types:
        if t.name == VERSION_TYPE and isinstance(t.schema.get(CURRENT), int):
            return int(t.schema[CURRENT])
    return None


def meta(spec: Spec, *, unstable: bool) -> dict[str, Any]:
    """The document, keys in ACP's order."""
    methods: tuple[Method, ...] = spec.methods if unstable else spec.stable_methods()
    version = protocol_version(spec)
    out: dict[str, Any] = {} if version is None else {"version": version}
    for key, side in MAPS:
        names = [m.name for m in methods if m.side == side and not m.name.startswith("_")]
        if names or key not in OPTIONAL:
            out[key] = {naming.method_key(name): name for name in dict.fromkeys(names)}
    return out


def render(spec: Spec) -> dict[str, str]:
    return {
        paths.META_STABLE: json_text(meta(spec, unstable=False)),
        paths.META_UNSTABLE: json_text(meta(spec, unstable=True)),
    }
