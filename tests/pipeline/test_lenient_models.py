"""Lenient reading (issue 25): the `x-deserialize-*` annotations as spec data, and the models that honour them.

The spec's annotations reach both schema files and the model; the generated models salvage what they allow after
a strict refusal (a bad value dropped, a bad item skipped, null taken as omitted), say what they salvaged in
`model_salvaged`, and lose nothing of a message that needed no salvage.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp_v2_schema import load_schema, models
from pydantic import TypeAdapter, ValidationError

from generator.model import lenience
from generator.pipeline import load_spec
from tests.support import ROOT

KEYS = lenience.KEYS


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _annotations(node: Any, path: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in KEYS:
                found.add((*path, key))
            found |= _annotations(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found |= _annotations(value, (*path, index))
    return found


def test_every_annotation_of_the_spec_is_in_both_schemas_and_on_the_model():
    spec = load_spec(ROOT / "spec", ROOT)
    on_model = {
        (t.name, *item.branch, "properties", item.property, key)
        for t in spec.types
        for item in t.lenience
        for key, on in zip(KEYS, (item.default_on_error, item.skip_invalid_items, item.default_on_null), strict=True)
        if on
    }
    in_spec = {("$defs", *p) for t in spec.types for p in _annotations(t.schema, (t.name,))}
    assert {("$defs", *p) for p in on_model} == in_spec
    unstable = _annotations(load_schema(unstable=True))
    stable = _annotations(load_schema(unstable=False))
    # The published form may write a union's shared property once on the union (upstream's shape) where the spec
    # writes it on each variant, so the schemas are compared by the annotated (property, annotation) pairs; where
    # each stands, against upstream's own file, is tests/upstream/test_lenience.py.
    assert {(p[-2], p[-1]) for p in unstable} == {(p[-2], p[-1]) for p in in_spec}
    assert stable and stable <= unstable


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "x-deserialize-skip-invalid-items": True}}},
            "array",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "x-deserialize-default-on-error": True}},
                "required": ["a"],
            },
            "required property",
        ),
        (
            {"type": "object", "properties": {"a": {"type": ["array", "null"], "x-deserialize-default-on-null": True}}},
            "accepts null already",
        ),
        ({"type": "object", "properties": {"a": {"x-deserialize-default-on-error": 1}}}, "takes the value true"),
        (
            {"type": "array", "items": {"type": "string", "x-deserialize-default-on-error": True}},
            "belongs on a property",
        ),
    ],
)
def test_misplaced_annotations_are_reported(schema, words):
    found = lenience.problems(schema)
    assert found and any(words in message for _, message in found), found


def test_a_required_array_may_fall_back_to_empty():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "x-deserialize-default-on-error": True}},
        "required": ["a"],
    }
    assert lenience.problems(schema) == []
    (item,) = lenience.lenience(schema)
    assert item.required and item.default_on_error and not item.skip_invalid_items


PROMPT = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}


def test_a_bad_meta_is_dropped_and_recorded():
    request = models.PromptRequest.model_validate_json(json.dumps({**PROMPT, "_meta": 5}))
    assert request.field_meta is None and "field_meta" not in request.model_fields_set
    assert _dump(request) == PROMPT
    (salvage,) = request.model_salvaged
    assert (salvage.path, salvage.rule, salvage.value) == (("_meta",), "default-on-error", 5)
    assert str(salvage).startswith("_meta: dropped")
    # the same through model_validate, and through a TypeAdapter-free dict
    again = models.PromptRequest.model_validate({**PROMPT, "_meta": 5})
    assert [s.path for s in again.model_salvaged] == [("_meta",)]


def test_a_bad_command_is_skipped_and_the_others_kept():
    good = [{"type": "command", "name": "a", "description": "A"}, {"type": "command", "name": "c", "description": "C"}]
    bad = {"type": "command", "name": 5, "description": "B"}
    update = {"sessionUpdate": "available_commands_update", "availableCommands": [good[0], bad, good[1]]}
    notification = models.UpdateSessionNotification.model_validate_json(
        json.dumps({"sessionId": "s", "update": update})
    )
    assert _dump(notification.update)["availableCommands"] == good
    (salvage,) = notification.model_salvaged
    assert salvage.path == ("update", "availableCommands", 1) and salvage.rule == "skip-invalid-items"
    assert salvage.value == bad
    assert [s.path for s in notification.update.model_salvaged] == [("availableCommands", 1)]


def test_paths_keep_the_input_index_after_a_skip():
    commands = [
        {"type": "command", "name": 5, "description": "B"},
        {"type": "command", "name": "c", "description": "C", "input": {"type": "text"}},
    ]
    update = models.AvailableCommandsUpdate.model_validate(
        {"sessionUpdate": "available_commands_update", "availableCommands": commands}
    )
    assert [(s.path, s.rule) for s in update.model_salvaged] == [
        (("availableCommands", 0), "skip-invalid-items"),
        (("availableCommands", 1, "input"), "default-on-error"),
    ]
    assert _dump(update)["availableCommands"] == [{"type": "command", "name": "c", "description": "C"}]


def test_null_takes_the_default():
    # Every optional field of the Python models takes null as its default (None) already, so default-on-null
    # needs no salvage here: the value is the default, and the null is kept for a lossless round trip.
    value = {"cwd": "/w", "mcpServers": None, "additionalDirectories": None}
    request = models.NewSessionRequest.model_validate_json(json.dumps(value))
    assert request.mcp_servers is None and request.additional_directories is None
    assert request.model_salvaged == ()
    assert _dump(request) == value


def test_a_required_array_that_is_not_valid_becomes_empty():
    response = models.ListSessionsResponse.model_validate_json(json.dumps({"sessions": "none"}))
    assert response.sessions == []
    assert [(s.path, s.rule) for s in response.model_salvaged] == [(("sessions",), "default-on-error")]


def test_what_no_rule_salvages_is_still_an_error():
    with pytest.raises(ValidationError) as caught:  # a malformed known content block, outside a salvageable place
        models.PromptRequest.model_validate_json(json.dumps({**PROMPT, "prompt": [{"type": "text", "text": 5}]}))
    assert caught.value.title == "PromptRequest"
    with pytest.raises(ValidationError) as caught:  # the bad _meta is set aside; the missing session is not
        models.PromptRequest.model_validate_json(json.dumps({"prompt": PROMPT["prompt"], "_meta": 5}))
    assert [e["loc"] for e in caught.value.errors()] == [("sessionId",)]
    with pytest.raises(ValidationError):  # a missing required array is not salvaged either
        models.AvailableCommandsUpdate.model_validate({"sessionUpdate": "available_commands_update"})


def test_a_message_that_needs_no_salvage_is_read_as_before():
    value = {
        **PROMPT,
        "_meta": {"k": [1, None]},
        "extra": {"kept": True},
        "idempotencyKey": None,
    }
    request = models.PromptRequest.model_validate_json(json.dumps(value))
    assert request.model_salvaged == ()
    assert _dump(request) == value


def test_the_lenient_validator_is_lossless_on_valid_messages():
    from acp_v2_schema.models import _salvage

    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t",
        "content": [{"type": "content", "content": {"type": "text", "text": "x", "annotations": {"priority": 0.5}}}],
        "_meta": {"a": 1},
        "extra": [1],
    }
    parsed = _salvage.validate(models.SessionUpdate, update)
    assert TypeAdapter(models.SessionUpdate).dump_python(parsed, mode="json", by_alias=True, exclude_unset=True) == (
        update
    )
    assert parsed.model_salvaged == ()


def test_salvage_inside_salvageable_places_is_narrowest():
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "x", "annotations": {"priority": "high"}}},
            {"type": "content", "content": {"type": "text", "text": 5}},
        ],
    }
    parsed = models.UpdateSessionNotification.model_validate({"sessionId": "s", "update": update})
    assert [(s.path, s.rule) for s in parsed.model_salvaged] == [
        (("update", "content", 0, "content", "annotations", "priority"), "default-on-error"),
        (("update", "content", 1), "skip-invalid-items"),
    ]
    assert _dump(parsed.update)["content"] == [
        {"type": "content", "content": {"type": "text", "text": "x", "annotations": {}}}
    ]


def test_a_misplaced_annotation_in_the_spec_is_reported_where_it_stands(tmp_path):
    from tests.faults.support import assert_rejected, real_project

    root = real_project(tmp_path)
    path = root / "spec" / "types" / "tools.yaml"
    text = path.read_text(encoding="utf-8")
    old = "        description: The name of the tool being run, if known.\n        type: [string, 'null']\n"
    assert old in text
    path.write_text(text.replace(old, old + "        x-deserialize-skip-invalid-items: true\n", 1), encoding="utf-8")
    line = text[: text.index(old)].count("\n") + 3
    run = assert_rejected(root, "invalid-lenience")
    assert f"spec/types/tools.yaml:{line}:" in run.err, run.err
    assert "belongs on an array property" in run.err


def test_the_meta_schema_takes_the_annotations_with_true_only():
    from jsonschema import Draft202012Validator

    meta = json.loads((ROOT / "spec" / "meta" / "types.schema.json").read_text(encoding="utf-8"))
    validator = Draft202012Validator(meta)

    def types_file(value: Any) -> dict[str, Any]:
        prop = {"type": ["string", "null"], "x-deserialize-default-on-error": value}
        return {"types": {"Thing": {"description": "d", "type": "object", "properties": {"a": prop}}}}

    assert list(validator.iter_errors(types_file(True))) == []
    assert list(validator.iter_errors(types_file(False))) != []


def test_every_rule_names_a_model_class_and_one_of_its_fields():
    from acp_v2_schema.models import _salvage

    assert _salvage.RULES
    for name, fields in _salvage.RULES.items():
        cls = getattr(models, name)
        cls.model_rebuild()  # a field whose annotation names a later class learns its alias at the build
        wire = {f.alias or n for n, f in cls.model_fields.items()}
        assert set(fields) <= wire, (name, set(fields) - wire)


def test_every_params_and_result_type_gets_a_lenient_validator():
    from acp_v2_schema.models import _salvage
    from acp_v2_schema.reader import ROUTES

    names = sorted({n for route in ROUTES.values() for n in route if n} | {"Error"})
    for name in names:
        target = getattr(models, name)
        try:
            _salvage.validate(target, {"_meta": 5})
        except ValidationError as error:
            assert all(e["loc"][:1] != ("_meta",) for e in error.errors()), (name, error)
