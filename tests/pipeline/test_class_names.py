"""Public class names of the generated models are names the spec states, and adding a variant renames none."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from generator.model import class_names
from generator.pipeline import load_spec
from generator.render.python import package as python_pkg
from tests.support import ROOT

NUMBERED = re.compile(r"[A-Za-z]+[0-9]+$")


def _public_names(root: Path) -> set[str]:
    spec = load_spec(root / "spec", root)
    files = python_pkg.models_files(spec)
    init = files[f"{python_pkg.MODELS}/__init__.py"]
    names = set(re.findall(r'^\s+"(\w+)": "\w+",?$', init, re.M))
    assert names, "the models' __init__ lists no names"
    return names


def test_no_public_class_name_is_a_variant_number():
    import acp_v2_schema.models as models

    public = list(models.__all__)
    assert len(public) > 300
    assert [n for n in public if NUMBERED.fullmatch(n)] == []


def test_named_branches_take_their_unions_name_and_the_spec_s_title_or_tag():
    import acp_v2_schema.models as models

    for name in ("AgentResponseResult", "AgentResponseError", "MessageMcpResponseResult", "MultiSelectItemsString"):
        assert hasattr(models, name), name
    assert hasattr(models, "SessionUpdateStateUpdateRunning") and hasattr(models, "SessionConfigSelectOptionsGrouped")
    assert class_names.branch_name("X", {"title": "other", "type": "object", "not": {}}) == "OtherX"
    assert class_names.branch_name("X", {"type": "object", "properties": {"k": {"const": "a_b"}}, "required": ["k"]})
    assert class_names.branch_name("X", {"$ref": "#/$defs/Y"}) is None


def test_adding_variants_renames_no_public_class(tmp_path: Path):
    before = _public_names(ROOT)
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    # a new state (StateUpdate's variants were numbered inside SessionUpdateStateUpdate) and a new response branch
    state = tmp_path / "spec" / "types" / "state.yaml"
    text = state.read_text()
    text = text.replace(
        "    - $ref: '#/$defs/RunningStateUpdate'\n",
        "    - $ref: '#/$defs/PausedStateUpdate'\n    - $ref: '#/$defs/RunningStateUpdate'\n",
        1,
    )
    text = text.replace(
        "        running: '#/$defs/RunningStateUpdate'\n",
        "        paused: '#/$defs/PausedStateUpdate'\n        running: '#/$defs/RunningStateUpdate'\n",
        1,
    )
    text = text.replace(
        "types:\n",
        "types:\n  PausedStateUpdate:\n    description: Paused.\n    type: object\n    properties:\n"
        "      state:\n        description: Always paused.\n        type: string\n        const: paused\n"
        "    required: [state]\n",
        1,
    )
    state.write_text(text)
    mcp = tmp_path / "spec" / "types" / "mcp.yaml"
    mcp.write_text(
        mcp.read_text().replace(
            "    anyOf:\n    - title: Result\n",
            "    anyOf:\n    - title: Pending\n      type: object\n      properties:\n        pending:\n"
            "          description: Not yet.\n          type: boolean\n      required: [pending]\n"
            "    - title: Result\n",
            1,
        )
    )
    after = _public_names(tmp_path)
    assert before - after == set()
    assert {"PausedStateUpdate", "SessionUpdateStateUpdatePaused", "MessageMcpResponsePending"} <= after - before


def test_diff_s_account_of_the_models_class_names_is_the_package_s():
    """`diff` reads the names from the spec alone (class_names.model_classes): they must be the package's."""
    spec = load_spec(ROOT / "spec", ROOT)
    types = {t.name: t.schema for t in spec.types}
    import acp_v2_schema.models as models

    public = set(models.__all__)
    assert len(public) > 300
    assert set(class_names.model_classes(types)) == public - set(types)


def test_generation_refuses_a_public_name_the_spec_does_not_state():
    import pytest

    types = {"AgentResponse": {"anyOf": [{"title": "Result", "type": "object"}]}}
    class_names.check(["AgentResponse", "AgentResponseResult", "_AgentResponse2"], types)
    with pytest.raises(RuntimeError, match="AgentResponse1"):
        class_names.check(["AgentResponse", "AgentResponse1"], types)
