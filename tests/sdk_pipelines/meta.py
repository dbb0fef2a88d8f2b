"""The method-name files (`meta.json`, `meta.unstable.json`) both SDKs' generators read beside the schemas.

Upstream publishes one beside each schema file: the protocol version and, per side, a map from a short key to a
method name (`agentMethods`, `clientMethods`, `protocolMethods`, and `proxyMethods` where proxy methods exist).
The TypeScript SDK's generate step refuses a meta file whose methods per side differ from the schema's own
`x-method`/`x-side` marks (`both` counting for agent and client); this module states that rule once, for our
files and for the maps the published SDK emitted (its `dist/v2/.../schema/index.js`), the control.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SIDES = {"agent": "agentMethods", "client": "clientMethods", "protocol": "protocolMethods", "proxy": "proxyMethods"}
# The constants the SDK writes into its schema index from the meta file, per side.
EMITTED = {
    "agent": "AGENT_METHODS",
    "client": "CLIENT_METHODS",
    "protocol": "PROTOCOL_METHODS",
    "proxy": "PROXY_METHODS",
}
VERSION = 2

_CONST_MAP = re.compile(r"export const (\w+) = \{(.*?)\};", re.DOTALL)
_ENTRY = re.compile(r'(\w+): "([^"]+)"')
_VERSION = re.compile(r"export const PROTOCOL_VERSION = (\d+);")


def schema_methods(schema: dict[str, Any]) -> dict[str, set[str]]:
    """The methods the schema marks, per side."""
    out: dict[str, set[str]] = {side: set() for side in SIDES}
    for definition in (schema.get("$defs") or {}).values():
        method, side = definition.get("x-method"), definition.get("x-side")
        if isinstance(method, str):
            for each in ("agent", "client") if side == "both" else (side,):
                out.setdefault(str(each), set()).add(method)
    return out


def meta_problems(meta: Any, schema: dict[str, Any]) -> list[str]:
    """Every way a meta file breaks the rule above for this schema (empty when it holds)."""
    if not isinstance(meta, dict):
        return ["the meta file is not a JSON object"]
    problems = [] if meta.get("version") == VERSION else [f"version is {meta.get('version')!r}, not {VERSION}"]
    for side, methods in schema_methods(schema).items():
        if side not in SIDES:
            problems.append(f"the schema marks methods for a side the SDKs do not know: {side!r}")
            continue
        entries = meta.get(SIDES[side], {})
        if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
            problems.append(f"{SIDES[side]} is not an object of method names")
            continue
        listed = list(entries.values())
        if len(set(listed)) != len(listed):
            problems.append(f"{SIDES[side]} lists a method twice")
        if missing := sorted(methods - set(listed)):
            problems.append(f"{SIDES[side]} lacks {', '.join(missing)}")
        if extra := sorted(set(listed) - methods):
            problems.append(f"{SIDES[side]} lists {', '.join(extra)}, which the schema does not mark for that side")
    return problems


def emitted_meta(index_js: str) -> dict[str, Any]:
    """The meta file the published SDK built its schema index from, read back from that index."""
    maps = {match.group(1): dict(_ENTRY.findall(match.group(2))) for match in _CONST_MAP.finditer(index_js)}
    version = _VERSION.search(index_js)
    meta: dict[str, Any] = {SIDES[side]: maps[name] for side, name in EMITTED.items() if name in maps}
    meta["version"] = int(version.group(1)) if version else None
    return meta


def derived_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """A meta file that meets the rule, built from the schema's marks (for a schema directory that has none);
    the keys (`session_new` for `session/new`) only name the entries."""
    meta: dict[str, Any] = {
        SIDES[side]: {method.lstrip("$/").replace("/", "_"): method for method in sorted(methods)}
        for side, methods in schema_methods(schema).items()
        if side in SIDES
    }
    meta["version"] = VERSION
    return meta


def unstable_meta(directory: Path) -> dict[str, Any]:
    """What gen_all.py gets as `schema/meta.json` beside a directory's `schema.unstable.json`: the directory's
    `meta.unstable.json` (what the SDKs download beside the unstable schema) when it has one, else the maps derived
    from the schema's own method marks (tests/sdk_pipelines/test_meta.py reports a missing file on its own)."""
    shipped = directory / "meta.unstable.json"
    if shipped.is_file():
        return json.loads(shipped.read_text(encoding="utf-8"))
    return derived_meta(json.loads((directory / "schema.unstable.json").read_text(encoding="utf-8")))
