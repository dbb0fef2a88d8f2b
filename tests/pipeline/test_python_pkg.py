"""Post-passes over the code generator's output in generator/render/python/package.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.render.python import package as python_pkg
from generator.render.python.models_split import split_models

ROOT = python_pkg._ROOT_TITLE
BEFORE = "from typing import Any\n\n\nclass A(BaseModel):\n    x: int\n\n\n"
AFTER = '\n\nB = TypeAliasType("B", str)\n"""\nA docstring.\n"""\n'


def test_the_one_line_root_alias_goes() -> None:
    source = f'{BEFORE}{ROOT} = TypeAliasType("{ROOT}", Annotated[Any, Field(title="{ROOT}")])\n{AFTER}'
    assert python_pkg._drop_root(source) == BEFORE + AFTER


def test_a_root_spread_over_lines_goes_whole() -> None:
    source = f'{BEFORE}{ROOT} = TypeAliasType(\n    "{ROOT}",\n    Any,\n)\n{AFTER}'
    assert python_pkg._drop_root(source) == BEFORE + AFTER


def test_a_root_class_goes_whole() -> None:
    source = f"{BEFORE}class {ROOT}(RootModel[Any]):\n    root: Any\n{AFTER}"
    assert python_pkg._drop_root(source) == BEFORE + AFTER


def test_a_string_reference_across_families_is_refused() -> None:
    source = (
        'from pydantic import BaseModel\n\n\nclass A(BaseModel):\n    b: "B"\n\n\nclass B(BaseModel):\n    x: int\n'
    )
    with pytest.raises(RuntimeError, match="A names B of another family in a string"):
        split_models(source, {"A": "one", "B": "two"})
    modules, owners = split_models(source, {"A": "one", "B": "one"})  # within one module it resolves
    assert owners == {"A": "one", "B": "one"} and list(modules) == ["one"]


def test_an_annotation_naming_another_familys_head_reads_it_at_once() -> None:
    # C names B, a head of family two, so C (with D, which names C) moves to the tail of family one and imports B;
    # A, which family two subclasses, stays in the head.
    source = (
        "from pydantic import BaseModel\n\n\n"
        "class A(BaseModel):\n    x: int\n\n\n"
        "class C(BaseModel):\n    b: B\n\n\n"
        "class D(BaseModel):\n    c: C\n\n\n"
        "class B(BaseModel):\n    x: int\n\n\n"
        "class F(A):\n    y: int\n"
    )
    modules, _ = split_models(source, {"A": "one", "C": "one", "D": "one", "B": "two", "F": "two"})
    one = modules["one"]
    assert "from .two import B\n" in one and "b: B\n" in one and "from . import two" not in one
    assert one.index("class A(") < one.index("from .two import B") < one.index("class C(") < one.index("class D(")
    assert "from .one import A\n" in modules["two"]


def test_the_codegen_command_line_takes_the_same_options_as_the_library(tmp_path: Path) -> None:
    """The benchmark's anchor runs `datamodel-codegen` with `command_line(options())`: on a schema that several
    options shape (aliases, constraints, a union, an enum, uri and date-time formats), its output is the library's."""
    import json
    import subprocess
    import sys

    from generator.render.python.codegen import command_line, generate_models, options

    schema = {
        "$defs": {
            "Kind": {"enum": ["a", "b"]},
            "Thing": {
                "type": "object",
                "description": "A thing.",
                "properties": {
                    "itemName": {"type": "string", "maxLength": 8, "description": "Its name."},
                    "kind": {"$ref": "#/$defs/Kind"},
                    "link": {"type": "string", "format": "uri"},
                    "when": {"type": "string", "format": "date-time"},
                    "value": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                },
                "required": ["itemName"],
            },
        },
        "$ref": "#/$defs/Thing",
    }
    source = tmp_path / "schema.json"
    source.write_text(json.dumps(schema), encoding="utf-8")
    out = tmp_path / "models.py"
    header = "# header"
    command = [str(Path(sys.executable).with_name("datamodel-codegen")), "--input", str(source)]
    command += [*command_line(options()), "--custom-file-header", header, "--output", str(out)]
    subprocess.run(command, check=True, capture_output=True)
    written = out.read_text(encoding="utf-8")
    assert written.endswith("\n")  # the command writes a file, which ends its last line
    assert written[:-1] == generate_models(source.read_text(encoding="utf-8"), header)
