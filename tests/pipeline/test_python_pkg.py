"""Post-passes over the code generator's output in generator/render/python_pkg.py."""

from __future__ import annotations

import pytest

from generator.render import python_pkg
from generator.render.models_split import split_models

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
