"""Checking: the worked examples in spec/examples/ against the method entries and types they show.

An example file is named after the slug of its method entry and lists the JSON-RPC messages of a first attempt
and what follows it. Its params and results are validated against the same type definitions that go into the
generated JSON Schema, so a page can never show an example that the schema would reject: a bad example is a
diagnostic with a file position, and generation stops.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from ..model import naming
from ..model import spec as model
from ..read.loader import DataPath, Document
from . import schema_check

ErrorSink = Callable[[Document, DataPath, str, str], None]


# What the checks read of a method entry (besides `retry.keyParam`): `_inputs` must hold all of it.
_METHOD_FIELDS = ("method", "kind", "params", "result")


class Memo(Protocol):
    """Where clean outcomes are kept between runs (the parse cache), as `check_examples` uses it."""

    def derived_key(self, name: str, inputs: bytes) -> str: ...

    def get_derived(self, key: str) -> Any: ...

    def put_derived(self, key: str, value: Any) -> None: ...


class _Reach:
    """The types an example's check reads: its method's params and result types and every type they refer to,
    each with a digest of its schema (made once per type, whichever examples need it). `refs` is the checker's
    graph of `$ref`s between the sound types (CheckState.type_refs, set by semantics)."""

    def __init__(self, types: dict[str, Any], refs: dict[str, set[str]]) -> None:
        self.types = types
        self.refs = refs
        self.digests: dict[str, bytes] = {}

    def inputs(self, roots: Iterable[Any]) -> list[tuple[str, bytes | None]]:
        """(name, schema digest) of every type reachable from `roots`, by name; None for a name with no sound type."""
        seen: dict[str, bytes | None] = {}
        todo = [name for name in roots if isinstance(name, str)]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            if name not in self.types:
                seen[name] = None
                continue
            digest = self.digests.get(name)
            if digest is None:
                blob = pickle.dumps(self.types[name], protocol=pickle.HIGHEST_PROTOCOL)
                digest = self.digests[name] = hashlib.sha256(blob).digest()
            seen[name] = digest
            todo.extend(self.refs[name])
        return sorted(seen.items())


def _inputs(doc: Document, entry: dict[str, Any], reach: _Reach) -> bytes:
    """Everything the check of one example reads, as bytes: the example as parsed, the fields of its method entry
    that the checks read, and the schemas of the types they reach. Equal bytes mean an equal outcome, so a clean
    outcome can be kept under them; a method's summary or description is not among them, nor any other type. The
    file's name is not either (the outcome does not depend on it, and the two sides of a diff name the same file
    differently): a kept example gets the name of the file it is taken for."""
    method = (tuple(entry.get(name) for name in _METHOD_FIELDS), (entry.get("retry") or {}).get("keyParam"))
    types = reach.inputs((entry.get("params"), entry.get("result")))
    return pickle.dumps((doc.data, method, types), protocol=pickle.HIGHEST_PROTOCOL)


def check_examples(
    example_docs: list[Document],
    method_docs: list[Document],
    types: dict[str, dict[str, Any]],
    error: ErrorSink,
    refs: dict[str, set[str]],
    *,
    memo: Memo | None = None,
    broken: set[str] | None = None,
) -> dict[str, model.Example]:
    """Check every example; return the valid ones by method slug. Problems go to `error`.

    `broken` names method files (by slug) that failed their own checks: an example named after one is not called
    unknown, since its method file's problem is the one to fix.

    `refs` names the types each type of `types` refers to. With a `memo`, each example whose check reads exactly
    what an earlier clean check read is taken from it (its problems, if it has any, are found again).
    """
    twins = naming.twins([d.data["method"] for d in method_docs])
    broken = broken or set()
    by_slug = {
        naming.method_slug(d.data["method"], d.data["kind"], has_twin=d.data["method"] in twins): d for d in method_docs
    }
    validators: schema_check.TypeBundle | None = None  # made when an example is checked, not taken from the memo
    reach = _Reach(types, refs)
    examples: dict[str, model.Example] = {}
    for doc in example_docs:
        slug = Path(doc.display).stem
        entry = by_slug.get(slug)
        if entry is None and slug in broken:
            continue  # its method file is broken (reported there): whether the example fits it cannot be told
        if entry is None:
            error(
                doc,
                (),
                "unknown-example",
                f"no method entry has the slug {slug!r}; name an example after its method's page, "
                "such as session-prompt.yaml",
            )
            continue
        key = ""
        if memo is not None:
            key = memo.derived_key("example", _inputs(doc, entry.data, reach))
            kept = memo.get_derived(key)
            if kept is not None:
                examples[slug] = kept if kept.source == doc.display else dataclasses.replace(kept, source=doc.display)
                continue
        if validators is None:
            validators = schema_check.TypeBundle(types)  # one validator per type, resolving `$ref`s as the schema does
        if _check_one(doc, entry.data, validators, types, error):
            examples[slug] = _build(doc)
            if memo is not None:
                memo.put_derived(key, examples[slug])
    return examples


def _check_one(
    doc: Document, entry: dict[str, Any], validators: schema_check.TypeBundle, types: dict[str, Any], error: ErrorSink
) -> bool:
    problems = 0

    def report(path: DataPath, code: str, message: str) -> None:
        nonlocal problems
        problems += 1
        error(doc, path, code, message)

    request_ids: list[Any] = []
    keys: list[tuple[DataPath, Any]] = []
    key_param = entry["retry"].get("keyParam")
    for i, step in enumerate(doc.data["steps"]):
        message = step["message"]
        at: DataPath = ("steps", i, "message")
        if "method" in message:
            if message["method"] != entry["method"]:
                report(
                    (*at, "method"),
                    "example-method-mismatch",
                    f"this example belongs to {entry['method']!r}, not {message['method']!r}",
                )
            if "result" in message or "error" in message:
                report(at, "example-message-shape", "a message with a method cannot also carry a result or an error")
            if entry["kind"] == "request" and "id" not in message:
                report(at, "example-message-shape", "a request needs an id")
            if entry["kind"] == "notification" and "id" in message:
                report((*at, "id"), "example-message-shape", "a notification has no id")
            if "id" in message:
                if message["id"] in request_ids:
                    report(
                        (*at, "id"),
                        "example-duplicate-id",
                        f"id {message['id']!r} is already used: every attempt is a new request with its own id",
                    )
                request_ids.append(message["id"])
            params_type = entry.get("params")
            if params_type in types:
                for problem in validators.validator(params_type).iter_errors(message.get("params", {})):
                    report(
                        (*at, "params", *problem.absolute_path),
                        "example-invalid-params",
                        f"params do not match {params_type}: {problem.message}",
                    )
            if key_param is not None:
                keys.append(((*at, "params"), message.get("params", {}).get(key_param)))
            continue
        # a response
        if entry["kind"] == "notification":
            report(at, "example-message-shape", "a notification gets no response")
            continue
        if ("result" in message) == ("error" in message):
            report(at, "example-message-shape", "a response carries exactly one of result and error")
        if "id" not in message or message["id"] not in request_ids:
            report(at, "example-unknown-id", "a response must answer the id of a request sent earlier in the example")
        result_type = entry.get("result")
        if "result" in message and result_type in types:
            for problem in validators.validator(result_type).iter_errors(message["result"]):
                report(
                    (*at, "result", *problem.absolute_path),
                    "example-invalid-result",
                    f"result does not match {result_type}: {problem.message}",
                )
    if key_param is not None:
        for path, fault in _key_faults(keys, key_param):
            report(path, "example-key-mismatch", fault)
    return problems == 0


def _key_faults(keys: list[tuple[DataPath, Any]], key_param: str) -> list[tuple[DataPath, str]]:
    """What is wrong with the keys of a keyed example's attempts, one fault per attempt that has one."""
    first = next((value for _, value in keys if value is not None), None)
    faults = []
    for number, (path, value) in enumerate(keys, start=1):
        if value is None:
            also = f"; resend the first key, {first!r}" if first is not None else ": give every attempt the same key"
            faults.append((path, f"attempt {number} carries no {key_param}{also}"))
        elif value != first:
            message = (
                f"attempt {number} carries {key_param} {value!r}, but an earlier attempt carries {first!r}: "
                "a retry resends the key of the first attempt"
            )
            faults.append((path, message))
    return faults


def _build(doc: Document) -> model.Example:
    data = doc.data
    return model.Example(
        summary=data["summary"].strip(),
        steps=tuple(
            model.ExampleStep(
                sender=step["from"],
                note=step["note"].strip(),
                lost=bool(step.get("lost", False)),
                message_json=model.canonical_json(step["message"]),
            )
            for step in data["steps"]
        ),
        source=doc.display,
    )
