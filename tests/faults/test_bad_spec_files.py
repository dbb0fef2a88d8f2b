"""Issue 11's bad spec files: each one is a diagnostic with a position and exit 2, never a traceback or a hang.

Every test copies the real spec, breaks one thing the way the reproduction did, and runs `generate`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.read import loader, specfiles
from tests.faults.support import assert_rejected, real_project
from tests.support import ROOT, run_generator

TYPES = "spec/types/session.yaml"
TRACES = "spec/conformance/idempotency-traces.yaml"


def _append(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _replace(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def _extra_type(root: Path, body: str, name: str = "ExtraThing") -> None:
    _append(root, TYPES, f"  {name}:\n    description: an extra type for a test\n{body}")


# -- YAML the loader must refuse --------------------------------------------------------------------------------
def test_nesting_600_levels_deep_is_too_deep(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    examples: " + "[" * 600 + "]" * 600 + "\n")
    assert_rejected(root, "too-deep")


def test_nesting_30000_levels_deep_is_too_deep_not_a_crash(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    examples: " + "[" * 30000 + "]" * 30000 + "\n")
    assert_rejected(root, "too-deep")


def test_alias_bomb_is_stopped_quickly(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    lines = ["    examples:", '      - &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        lines.append(f"      - &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    _extra_type(root, "\n".join(lines) + "\n")
    started = time.monotonic()
    assert_rejected(root, "alias-expansion")
    assert time.monotonic() - started < 10


def test_self_referencing_alias_is_a_cycle(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    examples: &l [*l]\n")
    assert_rejected(root, "alias-cycle")


def test_unquoted_date_in_examples_is_an_invalid_value(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    examples: [2024-01-01]\n")
    assert_rejected(root, "invalid-value")


def test_impossible_date_as_kind_is_an_invalid_value(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/methods/session-new.yaml", "kind: request", "kind: 2001-13-45")
    assert_rejected(root, "invalid-value")


def test_integer_of_5000_digits_is_an_invalid_value(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    type: integer\n    maximum: " + "7" * 5000 + "\n")
    assert_rejected(root, "invalid-value")


def test_infinite_maximum_never_reaches_the_schema(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    type: number\n    maximum: .inf\n")
    assert_rejected(root, "invalid-value")


def test_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _append(root, TYPES, "# " + "x" * specfiles.MAX_FILE_BYTES + "\n")
    assert_rejected(root, "file-too-large")


# -- schemas that used to crash a check or a renderer ------------------------------------------------------------
def test_boolean_subschema_under_properties_is_reported(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    type: object\n    properties:\n      anything: true\n")
    assert_rejected(root, "boolean-subschema")


def test_properties_as_a_list_in_the_keyed_params_type(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/types/prompt.yaml", "    properties:\n", "    properties: [1, 2]\n    x-old-properties:\n")
    assert_rejected(root, "invalid-type-schema")


def test_required_as_a_number_in_the_keyed_params_type(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/types/prompt.yaml", "    required:", "    required: 5\n    x-old-required:")
    assert_rejected(root, "invalid-type-schema")


@pytest.mark.parametrize("name", ["None", "True", "BaseModel"])
def test_type_named_after_a_reserved_python_name(tmp_path: Path, name: str) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    type: string\n", name=name)
    assert_rejected(root, "reserved-name")


def test_pure_ref_cycle_used_as_a_params_type(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    $ref: '#/$defs/CycleB'\n", name="CycleA")
    _extra_type(root, "    $ref: '#/$defs/CycleA'\n", name="CycleB")
    _replace(root, "spec/methods/session-new.yaml", "params: NewSessionRequest", "params: CycleA")
    assert_rejected(root, "ref-cycle")


def test_pure_ref_cycle_that_nothing_uses(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _extra_type(root, "    $ref: '#/$defs/Loop'\n", name="Loop")
    assert_rejected(root, "ref-cycle")


# -- the conformance traces --------------------------------------------------------------------------------------
@pytest.mark.parametrize("section", ["needs", "stepKinds"])
def test_trace_sections_written_as_lists(tmp_path: Path, section: str) -> None:
    root = real_project(tmp_path)
    _replace(root, TRACES, f"\n{section}:\n", f"\n{section}: [a, b]\nx-{section}:\n")
    assert_rejected(root, "wrong-type")


@pytest.mark.parametrize("times", ["abc", "100000000000", "-1", "2.5", "$minLength-2", "$length", "$maxLength*2"])
def test_repeat_with_a_bad_or_huge_times(tmp_path: Path, times: str) -> None:
    root = real_project(tmp_path)
    text = (root / TRACES).read_text(encoding="utf-8")
    start = text.index("times:", text.index("idempotencyKey: {$repeat:"))
    end = text.index("}", start)
    (root / TRACES).write_text(text[:start] + f"times: {times}" + text[end:], encoding="utf-8")
    assert_rejected(root, "bad-repeat")


@pytest.mark.parametrize("text", ["{not json", "NaN", "1e999", "[1, 2"])
def test_json_value_that_is_not_one_json_value(tmp_path: Path, text: str) -> None:
    root = real_project(tmp_path)
    _replace(root, TRACES, """{$json: '"\\ud800"'}""", "{$json: '" + text + "'}")
    assert_rejected(root, "bad-json")


def test_method_written_as_a_list_in_a_step(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, TRACES, "method: session/prompt,", "method: [session/prompt],")
    assert_rejected(root, "step-field")


def test_list_as_a_trace_id(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, TRACES, "- id: retry-same-connection", "- id: [retry, same-connection]")
    assert_rejected(root, "wrong-type")


# -- meta-schemas ------------------------------------------------------------------------------------------------
def test_missing_meta_schema(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/meta/method.schema.json").unlink()
    assert_rejected(root, "missing-file")


@pytest.mark.parametrize("text", ["{not json", '{"type": 5}', "[]", "\xff"])
def test_corrupt_meta_schema(tmp_path: Path, text: str) -> None:
    root = real_project(tmp_path)
    (root / "spec/meta/types.schema.json").write_bytes(text.encode("latin-1"))
    assert_rejected(root, "invalid-meta-schema")


# -- paths that are not regular files ----------------------------------------------------------------------------
def test_directory_named_yaml(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/methods/folder.yaml").mkdir()
    assert_rejected(root, "not-a-file")


def test_dangling_symlink_named_yaml(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/methods/dangling.yaml").symlink_to(root / "spec/methods/nowhere.yaml")
    assert_rejected(root, "not-a-file")


def test_symlink_loop_named_yaml(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/types/loop.yaml").symlink_to(root / "spec/types/loop.yaml")
    assert_rejected(root, "not-a-file")


def test_symlink_to_dev_zero(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/types/zero.yaml").symlink_to("/dev/zero")
    assert_rejected(root, "outside-spec")


def test_symlink_to_a_file_inside_the_spec_is_read(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/methods/session-new.yaml").rename(root / "spec/session-new.yaml.real")
    (root / "spec/methods/session-new.yaml").symlink_to(root / "spec/session-new.yaml.real")
    assert run_generator("validate", "--root", str(root)).status == 0


def test_fifo_named_yaml_does_not_hang(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    os.mkfifo(root / "spec/methods/fifo.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--root", str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "spec/methods/fifo.yaml:1:1: error[not-a-file]: a FIFO, not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / "generated").exists()


# -- names that became colliding or reserved symbols ------------------------------------------------------------
def test_methods_whose_pages_would_share_a_name(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    source = (root / "spec/methods/session-new.yaml").read_text(encoding="utf-8")
    for name, slug in (("zz/a_b", "zz-a-b-1"), ("zz/a-b", "zz-a-b-2")):
        (root / f"spec/methods/{slug}.yaml").write_text(source.replace("method: session/new", f"method: {name}"))
    run = assert_rejected(root, "name-collision")
    assert "zz-a-b" in run.err


def test_failure_kinds_that_become_one_rust_variant(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/retry-classes.yaml", "  - name: error-response", "  - name: no--response")
    run = assert_rejected(root, "name-collision")
    assert "NoResponse" in run.err


def test_failure_kind_named_self(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/retry-classes.yaml", "  - name: error-response", "  - name: self")
    run = assert_rejected(root, "reserved-name")
    assert "'Self'" in run.err


def test_type_file_whose_name_is_no_module(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    (root / "spec/types/session.yaml").rename(root / "spec/types/my-session.yaml")
    assert_rejected(root, "reserved-name")


def test_loader_limits_are_what_the_docs_say() -> None:
    # the maintainers' page quotes these; a change here is a change there
    assert (loader.MAX_DEPTH, loader.MAX_ALIAS_VALUES) == (64, 100_000)


# -- the audit's list of deliberate differences -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("differences: [{difference: x}]\n", "missing-field"),
        ("differences: {a: 1}\n", "wrong-type"),
        ("differences: [\n", "yaml-syntax"),
        ("differences:\n  - {difference: a, reason: r}\n  - {difference: a, reason: s}\n", "duplicate-difference"),
    ],
)
def test_audit_with_a_broken_upstream_differences_file(tmp_path: Path, text: str, code: str) -> None:
    root = real_project(tmp_path)
    (root / "spec/upstream-differences.yaml").write_text(text, encoding="utf-8")
    schema = tmp_path / "schema.unstable.json"
    schema.write_text('{"$defs": {}}', encoding="utf-8")
    run = run_generator("audit", str(schema), "--root", str(root))
    assert run.status == 2
    assert "Traceback" not in run.err
    assert "spec/upstream-differences.yaml:" in run.err and f"error[{code}]" in run.err
    assert_rejected(root, code, command="validate")


def test_audit_with_a_schema_that_is_not_json(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    schema = tmp_path / "schema.unstable.json"
    schema.write_text("[1, 2", encoding="utf-8")
    run = run_generator("audit", str(schema), "--root", str(root))
    assert run.status == 2 and "error[invalid-json]: " in run.err and "Traceback" not in run.err


def test_method_whose_constant_is_taken_by_the_protocol_module(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    source = (root / "spec/methods/session-new.yaml").read_text(encoding="utf-8")
    (root / "spec/methods/method-names.yaml").write_text(source.replace("method: session/new", "method: method/names"))
    run = assert_rejected(root, "reserved-name")
    assert "METHOD_NAMES" in run.err


def test_error_code_titles_that_become_one_enum_member(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/retry-classes.yaml", "title: Invalid params", "title: Invalid-request")
    run = assert_rejected(root, "name-collision")
    assert "INVALID_REQUEST" in run.err


@pytest.mark.parametrize("value", ["[]", "{a: 1}", "nonsense"])
def test_envelope_declaration_with_a_bad_message(tmp_path: Path, value: str) -> None:
    # found by the spec fuzz test: a list here was a TypeError in generator/model/envelopes.py
    root = real_project(tmp_path)
    declared = f"{{message: {value}, from: client}}"
    _replace(root, "spec/types/envelopes.yaml", "{message: response, from: client}", declared)
    assert_rejected(root, "invalid-envelope")


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # a method listed twice
        ("        - session/cancel\n", "        - session/cancel\n        - session/cancel\n", "listed twice"),
        # a name that is no method of the envelope
        ("        - session/cancel\n", "        - session/cancel\n        - session/prompt\n", "no notification"),
        # an order on a response envelope (responses follow the requests they answer)
        ("{message: response, from: client}", "{message: response, from: client, order: []}", "lists none"),
    ],
)
def test_envelope_order_that_is_not_the_envelope_s_methods(tmp_path: Path, old: str, new: str, said: str) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/types/envelopes.yaml", old, new)
    run = assert_rejected(root, "invalid-envelope-order")
    assert said in run.err


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("x-refinedBy: stopReason", "x-refinedBy: stopReasons"),  # not a property of the type
        ("x-refinedBy: stopReason", "x-refinedBy: usage"),  # a property no branch fixes
        ("x-refinedBy: stopReason", "x-refinedBy: [stopReason]"),
    ],
)
def test_refined_object_with_a_bad_property(tmp_path: Path, old: str, new: str) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/types/state.yaml", old, new)
    run = assert_rejected(root, "invalid-refinement")
    assert "state.yaml:" in run.err


def test_inline_variant_tag_the_union_does_not_map(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(root, "spec/types/tools.yaml", "x-inline: [add, delete,", "x-inline: [add, remove,")
    run = assert_rejected(root, "invalid-inline-variant")
    assert "tools.yaml:" in run.err and "'remove'" in run.err


def test_type_that_takes_a_named_branch_s_class_name(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    _replace(
        root,
        "spec/types/mcp.yaml",
        "  MessageMcpResponse:\n",
        "  MessageMcpResponseError:\n    description: In the way.\n    type: string\n  MessageMcpResponse:\n",
    )
    run = assert_rejected(root, "class-name-taken")
    assert "MessageMcpResponseError" in run.err
