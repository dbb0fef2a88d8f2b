"""The meaning check of spec/conformance/*.yaml: the keyed-prompt conformance traces.

The meta-schema (spec/meta/conformance.schema.json) has already checked each file's shape: the fields of a trace
and their types. What is checked here needs more than one value at a time: the step vocabulary the runner knows,
the fields each step kind needs, methods the spec does not have, answers expected to requests not sent, repeated
trace ids, the bounds of `{$repeat, times}` (a number, or a bound of the key type such as `$maxLength+1`, so that
a trace probing the key's limits follows the spec when a limit changes), and that each trace lists in `needs` what
it relies on beyond the protocol (a prompt hook it sends, a second Agent process, history replay), so a runner can
skip rather than fail a trace an Agent cannot run. A spec that lacks the methods the traces drive (a small fixture
spec, say) gets no traces. The checked document is carried in the model (`Spec.traces_json`) for the renderer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic
from ..model.spec import canonical_json
from ..read.loader import DataPath, Document
from .semantics import IDEMPOTENCY_KEY_TYPE

if TYPE_CHECKING:
    from .context import CheckState

# Each step is a mapping with one of these keys; the value's required fields follow. The runner implements them.
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
    "noSecondRound": ("conn", "session", "request"),
}
TRACE_FIELDS = ("id", "title", "origin", "keyDependent", "summary", "needs", "steps")
ORIGINS = ("proposal", "added")
# Methods the runner itself sends to open connections, sessions and look at history.
REQUIRED_METHODS = ("initialize", "session/new", "session/resume", "session/prompt")
# Methods the runner sends that are not protocol methods: the test hook (extensions start with `_`).
HOOK_METHODS = ("_conformance/release",)
# What a trace must list in `needs` when its steps do this: a second `connect` starts another Agent process,
# which finds the session only in storage; a `history` step asks for replay.
STORED, REPLAY = "storedSessions", "replay"
REPEAT, TIMES, JSON = "$repeat", "times", "$json"
MAX_REPEATED_CHARS = 65_536  # a `$repeat` builds an over-long key or text, not a memory test
# `times` may name a length bound of the key type, give or take a whole number: `$maxLength`, `$maxLength+1`.
KEY_BOUND = re.compile(r"\$(minLength|maxLength)(?:([+-])(\d+))?")


def check(checker: CheckState) -> None:
    """The conformance kind's meaning check: sets `checker.traces_json` when the traces are sound."""
    docs = checker.docs.get("conformance", [])
    if not docs or not drives_keyed_prompts([d.data for d in checker.method_docs]):
        return
    methods = {d.data["method"] for d in checker.method_docs}
    key = checker.types.get(IDEMPOTENCY_KEY_TYPE)
    # Only a bound that is a whole number: the type's own check reports any other, and a repeat cannot count on it.
    found = {name: key[1].get(name) for name in ("minLength", "maxLength")} if key else {}
    bounds = {name: n for name, n in found.items() if isinstance(n, int) and not isinstance(n, bool)}
    document, problems = traces_document(docs, methods, bounds)
    checker.diagnostics.extend(problems)
    if not problems:
        checker.traces_json = canonical_json(document)


def drives_keyed_prompts(entries: list[dict[str, Any]]) -> bool:
    """Whether the method entries include what every trace relies on: a session lifecycle and a keyed prompt."""
    by_name = {(e["method"], e["kind"]): e for e in entries}
    prompt = by_name.get(("session/prompt", "request"))
    return (
        prompt is not None
        and prompt["retry"].get("keyParam") is not None
        and all((name, "request") in by_name for name in REQUIRED_METHODS)
    )


def traces_document(
    docs: list[Document], methods: set[str], bounds: Mapping[str, int] | None = None
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Every trace of every (structurally valid) file, checked, with `$repeat` values expanded; and the problems.

    `bounds` are the key type's `minLength` and `maxLength`, which a repeat's `times` may name.
    """
    bounds = bounds or {}
    diagnostics: list[Diagnostic] = []
    out: dict[str, Any] = {"description": "", "handshake": {}, "rules": {}, "needs": {}, "stepKinds": {}, "traces": []}
    seen: set[str] = set()
    for doc in docs:
        data = doc.data
        out["description"] = " ".join(filter(None, [out["description"], data.get("description", "")]))
        out["handshake"].update(data.get("handshake", {}))
        out["needs"].update(data.get("needs", {}))
        out["rules"].update(data.get("rules", {}))
        kinds = data.get("stepKinds", {})
        for name in kinds:
            if name not in STEP_FIELDS:
                diagnostics.append(
                    Diagnostic(doc.locate(("stepKinds", name), key=True), "step-kind", f"no step kind `{name}`")
                )
        out["stepKinds"].update(kinds)
    vocabulary = (out["handshake"].get("metaKey"), out["needs"])
    for doc in docs:
        for i, trace in enumerate(doc.data["traces"]):
            checked = _check_trace(doc, ("traces", i), trace, methods, (*vocabulary, bounds), diagnostics)
            if checked is None:
                continue
            if checked["id"] in seen:
                diagnostics.append(Diagnostic(doc.locate(("traces", i, "id")), "duplicate-trace", "trace id repeats"))
            seen.add(checked["id"])
            out["traces"].append(checked)
    undocumented = sorted(set(STEP_FIELDS) - set(out["stepKinds"]))
    if undocumented:
        message = f"`stepKinds` does not describe: {', '.join(undocumented)}"
        diagnostics.append(Diagnostic(docs[0].locate(()), "step-undocumented", message))
    return out, diagnostics


def _check_trace(
    doc: Document,
    where: DataPath,
    trace: dict[str, Any],
    methods: set[str],
    vocabulary: tuple[str | None, dict[str, Any], Mapping[str, int]],
    diagnostics: list[Diagnostic],
) -> dict[str, Any] | None:
    before = len(diagnostics)
    meta_key, known_needs, bounds = vocabulary
    needs = trace.get("needs", [])

    def problem(path: DataPath, code: str, message: str) -> None:
        diagnostics.append(Diagnostic(doc.locate((*where, *path)), code, message))

    for j, name in enumerate(needs):
        if name not in known_needs:
            problem(("needs", j), "unknown-need", f"`{name}` is not in `needs`; known: {', '.join(known_needs)}")
    connects = 0

    if trace["origin"] not in ORIGINS:
        problem(("origin",), "trace-origin", f"origin must be one of {', '.join(ORIGINS)}")
    requests: set[str] = set()
    for j, step in enumerate(trace["steps"]):
        if len(step) != 1 or next(iter(step)) not in STEP_FIELDS:
            problem(("steps", j), "step-kind", f"a step is one of: {', '.join(STEP_FIELDS)}")
            continue
        kind, body = next(iter(step.items()))
        if not STEP_FIELDS[kind]:
            if not isinstance(body, str):
                problem(("steps", j, kind), "step-field", f"`{kind}` names a connection")
            connects += kind == "connect"
            if connects == 2 and kind == "connect" and STORED not in needs:
                why = "a second `connect` starts another Agent process"
                problem(("steps", j), "undeclared-need", f"{why}, so the trace must list `{STORED}` in `needs`")
            continue
        if not isinstance(body, dict):
            problem(("steps", j, kind), "step-field", f"`{kind}` takes a mapping")
            continue
        for name in STEP_FIELDS[kind]:
            if name not in body:
                problem(("steps", j, kind), "step-field", f"`{kind}` needs `{name}`")
        method = body.get("method")
        if kind in ("send", "notify"):
            if not isinstance(method, str):
                problem(("steps", j, kind, "method"), "step-field", "`method` is a method name (a string)")
            elif method not in methods and method not in HOOK_METHODS:
                problem(("steps", j, kind, "method"), "unknown-method", f"`{method}` is not a method of the spec")
        if kind == "send":
            requests.add(str(body.get("as")))
        if kind in ("expect", "noSecondRound") and str(body.get("request")) not in requests:
            problem(("steps", j, kind, "request"), "unknown-request", "expects an answer to a request not sent yet")
        _check_repeats(body, ("steps", j, kind), problem, bounds)
        used = []
        if kind == "history":
            used.append((REPLAY, "a `history` step asks for replay"))
        if kind == "send" and isinstance(body.get("params"), dict):
            meta = body["params"].get("_meta")
            hooks = meta.get(meta_key) if isinstance(meta, dict) else None
            for hook in hooks if isinstance(hooks, dict) else {}:
                if known_needs.get(hook, {}).get("from") != "handshake":
                    problem(
                        ("steps", j, kind, "params", "_meta"), "unknown-need", f"no prompt hook `{hook}` in `needs`"
                    )
                else:
                    used.append((hook, f"the prompt carries the `{hook}` hook"))
        for name, why in used:
            if name not in needs:
                problem(("steps", j), "undeclared-need", f"{why}, so the trace must list `{name}` in `needs`")
    if len(diagnostics) > before:
        return None
    return {name: _expand(trace.get(name, []), bounds) for name in TRACE_FIELDS}


def _times(times: Any, bounds: Mapping[str, int]) -> int | str:
    """A repeat's count: a whole number as written, or the key bound it names; else why it is not one."""
    if isinstance(times, int) and not isinstance(times, bool):
        return times if times >= 0 else "`times` is a whole number, 0 or more"
    found = KEY_BOUND.fullmatch(times) if isinstance(times, str) else None
    if found is None:
        return "`times` is a whole number, 0 or more, or a key bound such as `$maxLength+1`"
    name, sign, offset = found.groups()
    if name not in bounds:
        return f"`times` names `{name}`, which the {IDEMPOTENCY_KEY_TYPE} type does not set to a whole number"
    count = bounds[name] + (int(offset) if sign == "+" else -int(offset or 0))
    return count if count >= 0 else f"`times` comes to {count}, less than 0"


def _check_repeats(value: Any, path: DataPath, problem: Any, bounds: Mapping[str, int]) -> None:
    """Every `{$repeat: TEXT, times: N}` must be exactly that, with a bounded result; every `{$json: TEXT}` too."""
    if isinstance(value, dict):
        if JSON in value:
            text = value[JSON]
            reason = _json_problem(text) if set(value) == {JSON} and isinstance(text, str) else "not {$json: TEXT}"
            if reason:
                problem(path, "bad-json", f"a $json value is one JSON value written as a string: {reason}")
            return
        if REPEAT in value:
            text, times = value.get(REPEAT), _times(value.get(TIMES), bounds)
            if set(value) != {REPEAT, TIMES} or not isinstance(text, str):
                problem(path, "bad-repeat", "a repeat is exactly {$repeat: TEXT, times: N}")
            elif isinstance(times, str):
                problem((*path, TIMES), "bad-repeat", times)
            elif len(text) * times > MAX_REPEATED_CHARS:
                problem((*path, TIMES), "bad-repeat", f"the repeat expands beyond {MAX_REPEATED_CHARS} characters")
            return
        for key, item in value.items():
            _check_repeats(item, (*path, key), problem, bounds)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_repeats(item, (*path, i), problem, bounds)


def _json_problem(text: str) -> str | None:
    """Why `text` is not one JSON value the traces can carry (NaN and infinities are not JSON), or None."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        return str(exc).splitlines()[0] if not isinstance(exc, RecursionError) else "nested too deeply"
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "a number too large for JSON readers"
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _expand(value: Any, bounds: Mapping[str, int]) -> Any:
    """Expand `{$repeat: TEXT, times: N}` and `{$json: TEXT}` into literal values, so that runners need no generator.

    `$json` exists for values YAML cannot spell, such as a string holding a lone surrogate (`"\\ud800"`).
    """
    if isinstance(value, dict):
        if set(value) == {REPEAT, TIMES}:
            times = _times(value[TIMES], bounds)
            assert isinstance(times, int), times  # checked by _check_repeats
            return value[REPEAT] * times
        if set(value) == {JSON}:
            return json.loads(value[JSON])
        return {k: _expand(v, bounds) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, bounds) for v in value]
    return value
