"""Stage 2c: the keyed-prompt conformance traces in spec/conformance/*.yaml, checked against the model.

A spec that lacks the methods the traces drive (a small fixture spec, say) gets no traces. Every problem is a
file:line:col diagnostic: unknown step kinds and fields, methods the spec does not have, answers expected to
requests not sent. The checked document is carried in the model (`Spec.traces_json`) for the renderer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic, SpecError
from .loader import DataPath, Document, load_document
from .model import Spec, canonical_json

CONFORMANCE_DIR = "conformance"

# Each step is a mapping with one of these keys; the value's required fields follow.
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "connect": (),
    "disconnect": (),
    "crash": (),
    "newSession": ("conn", "as"),
    "resume": ("conn", "session"),
    "send": ("conn", "as", "method", "params"),
    "notify": ("conn", "method", "params"),
    "expect": ("request",),
    "awaitUpdate": ("conn", "session", "update"),
    "history": ("conn", "session", "userMessages"),
}
TRACE_FIELDS = ("id", "title", "origin", "keyDependent", "summary", "steps")
ORIGINS = ("proposal", "added")
# Methods the runner itself sends to open connections, sessions and look at history.
REQUIRED_METHODS = ("initialize", "session/new", "session/resume", "session/prompt")
# Methods the runner sends that are not protocol methods: the test hook (extensions start with `_`).
HOOK_METHODS = ("_conformance/release",)


def load_traces(spec_dir: Path, root: Path, spec: Spec) -> str | None:
    """The checked traces of `spec_dir/conformance/` as canonical JSON, or None when there are none to run."""
    files = sorted((spec_dir / CONFORMANCE_DIR).glob("*.yaml"))
    if not files or not drives_keyed_prompts(spec):
        return None
    return canonical_json(traces_document(files, spec, root))


def drives_keyed_prompts(spec: Spec) -> bool:
    """Whether the spec has what every trace relies on: a session lifecycle and a keyed `session/prompt`.

    A spec without them (a small fixture spec, say) gets no traces rather than traces it cannot run.
    """
    by_name = {(m.name, m.kind): m for m in spec.methods}
    prompt = by_name.get(("session/prompt", "request"))
    return (
        prompt is not None
        and prompt.key_param is not None
        and all((name, "request") in by_name for name in REQUIRED_METHODS)
    )


def traces_document(files: list[Path], spec: Spec, root: Path) -> dict[str, Any]:
    """Every trace of every file, checked and with generated values expanded. Raises SpecError on problems."""
    diagnostics: list[Diagnostic] = []
    methods = {m.name for m in spec.methods}
    out: dict[str, Any] = {"description": "", "hooks": {}, "stepKinds": {}, "traces": []}
    seen: set[str] = set()
    first: Document | None = None
    for path in files:
        doc = load_document(path, root, diagnostics)
        if doc is None:
            continue
        first = first or doc
        data = doc.data if isinstance(doc.data, dict) else {}
        if not isinstance(data.get("traces"), list):
            diagnostics.append(Diagnostic(doc.locate(()), "traces-missing", "a conformance file needs a `traces` list"))
            continue
        out["description"] = " ".join(filter(None, [out["description"], str(data.get("description", ""))]))
        out["hooks"].update(data.get("hooks") or {})
        kinds = data.get("stepKinds") or {}
        for name in kinds:
            if name not in STEP_FIELDS:
                diagnostics.append(
                    Diagnostic(doc.locate(("stepKinds", name), key=True), "step-kind", f"no step kind `{name}`")
                )
        out["stepKinds"].update(kinds)
        for i, trace in enumerate(data["traces"]):
            checked = _check_trace(doc, ("traces", i), trace, methods, diagnostics)
            if checked is None:
                continue
            if checked["id"] in seen:
                diagnostics.append(Diagnostic(doc.locate(("traces", i, "id")), "duplicate-trace", "trace id repeats"))
            seen.add(checked["id"])
            out["traces"].append(checked)
    undocumented = sorted(set(STEP_FIELDS) - set(out["stepKinds"]))
    if undocumented and first is not None:
        message = f"`stepKinds` does not describe: {', '.join(undocumented)}"
        diagnostics.append(Diagnostic(first.locate(()), "step-undocumented", message))
    if diagnostics:
        raise SpecError(diagnostics)
    return out


def _check_trace(
    doc: Document, where: DataPath, trace: Any, methods: set[str], diagnostics: list[Diagnostic]
) -> dict[str, Any] | None:
    def problem(path: DataPath, code: str, message: str) -> None:
        diagnostics.append(Diagnostic(doc.locate((*where, *path)), code, message))

    if not isinstance(trace, dict):
        problem((), "trace-shape", "a trace is a mapping")
        return None
    for name in TRACE_FIELDS:
        if name not in trace:
            problem((), "trace-field", f"a trace needs `{name}`")
    for name in trace:
        if name not in TRACE_FIELDS:
            problem((name,), "trace-field", f"unknown trace field `{name}`")
    if trace.get("origin") not in ORIGINS:
        problem(("origin",), "trace-origin", f"origin must be one of {', '.join(ORIGINS)}")
    steps = trace.get("steps")
    if not isinstance(steps, list) or not steps:
        problem(("steps",), "trace-steps", "a trace needs a non-empty list of steps")
        return None
    requests: set[str] = set()
    for j, step in enumerate(steps):
        if not isinstance(step, dict) or len(step) != 1 or next(iter(step)) not in STEP_FIELDS:
            problem(("steps", j), "step-kind", f"a step is one of: {', '.join(STEP_FIELDS)}")
            continue
        kind, body = next(iter(step.items()))
        if not STEP_FIELDS[kind]:
            if not isinstance(body, str):
                problem(("steps", j, kind), "step-field", f"`{kind}` names a connection")
            continue
        if not isinstance(body, dict):
            problem(("steps", j, kind), "step-field", f"`{kind}` takes a mapping")
            continue
        for name in STEP_FIELDS[kind]:
            if name not in body:
                problem(("steps", j, kind), "step-field", f"`{kind}` needs `{name}`")
        method = body.get("method")
        if kind in ("send", "notify") and method not in methods and method not in HOOK_METHODS:
            problem(("steps", j, kind, "method"), "unknown-method", f"`{method}` is not a method of the spec")
        if kind == "send":
            requests.add(str(body.get("as")))
        if kind == "expect" and body.get("request") not in requests:
            problem(("steps", j, kind, "request"), "unknown-request", "expects an answer to a request not sent yet")
    if any(d.location.file == doc.display for d in diagnostics):
        return None
    return {name: _expand(trace[name]) for name in TRACE_FIELDS}


def _expand(value: Any) -> Any:
    """Expand `{$repeat: TEXT, times: N}` and `{$json: TEXT}` into literal values, so that runners need no generator.

    `$json` exists for values YAML cannot spell, such as a string holding a lone surrogate (`"\\ud800"`).
    """
    if isinstance(value, dict):
        if set(value) == {"$repeat", "times"}:
            return str(value["$repeat"]) * int(value["times"])
        if set(value) == {"$json"}:
            return json.loads(str(value["$json"]))
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value
