"""Stage 2c: check the worked examples in spec/examples/ against the method entries and types they show.

An example file is named after the slug of its method entry and lists the JSON-RPC messages of a first attempt
and what follows it. Its params and results are validated against the same type definitions that go into the
generated JSON Schema, so a page can never show an example that the schema would reject: a bad example is a
diagnostic with a file position, and generation stops.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import model, naming, schema_check
from .loader import DataPath, Document

ErrorSink = Callable[[Document, DataPath, str, str], None]


# What the checks read of a method entry (besides `retry.keyParam`): `memo_inputs` must hold all of it.
_METHOD_FIELDS = ("method", "kind", "params", "result")


def memo_inputs(example_docs: list[Document], method_docs: list[Document], types: dict[str, Any]) -> bytes:
    """Everything `check_examples` reads, as bytes: the example files as parsed, of each method entry the fields the
    checks read, and the type schemas. Equal bytes mean an equal outcome, so a clean outcome can be kept under them
    (pipeline.load_spec); a method's summary or description is not among them."""
    methods = [
        (tuple(d.data.get(name) for name in _METHOD_FIELDS), (d.data.get("retry") or {}).get("keyParam"))
        for d in method_docs
    ]
    examples = [(d.display, d.data) for d in example_docs]
    return pickle.dumps((examples, methods, types), protocol=pickle.HIGHEST_PROTOCOL)


def check_examples(
    example_docs: list[Document],
    method_docs: list[Document],
    types: dict[str, dict[str, Any]],
    error: ErrorSink,
) -> dict[str, model.Example]:
    """Check every example; return the valid ones by method slug. Problems go to `error`."""
    twins = naming.twins([d.data["method"] for d in method_docs])
    by_slug = {
        naming.method_slug(d.data["method"], d.data["kind"], has_twin=d.data["method"] in twins): d for d in method_docs
    }
    validators = schema_check.TypeBundle(types)  # one validator per type, resolving `$ref`s as the schema does
    examples: dict[str, model.Example] = {}
    for doc in example_docs:
        slug = Path(doc.display).stem
        entry = by_slug.get(slug)
        if entry is None:
            error(
                doc,
                (),
                "unknown-example",
                f"no method entry has the slug {slug!r}; name an example after its method's page, "
                "such as session-prompt.yaml",
            )
            continue
        if _check_one(doc, entry.data, validators, types, error):
            examples[slug] = _build(doc)
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
        values = {repr(value) for _, value in keys}
        if any(value is None for _, value in keys) or len(values) > 1:
            where = next((path for path, value in keys if value is None), keys[-1][0] if keys else ("steps",))
            report(
                where,
                "example-key-mismatch",
                f"every attempt of a keyed entry carries the same, non-null {key_param}",
            )
    return problems == 0


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
