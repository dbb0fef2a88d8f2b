"""`elicitation/create` params dispatch on their `mode` tag (issue 35, item 6): a known mode is read by its own
branch alone, so a malformed form is an error (it had fallen through to the open branch), and any other mode is
kept by the open branch. The spec's own example is the message; names come from the routing table.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from acp_v2_schema import models
from acp_v2_schema.reader import ROUTES
from pydantic import TypeAdapter, ValidationError

from generator.render.python.open_unions import const_tag
from tests.support import ROOT

METHOD = "elicitation/create"
PARAMS = ROUTES[(METHOD, "request")].params or ""
ADAPTER: TypeAdapter[Any] = TypeAdapter(getattr(models, PARAMS))
EXAMPLE = yaml.safe_load((ROOT / "spec" / "examples" / "elicitation-create.yaml").read_text(encoding="utf-8"))
FORM = next(s["message"]["params"] for s in EXAMPLE["steps"] if s["message"].get("method") == METHOD)
TAG = "mode"


def test_the_spec_type_is_a_union_picked_by_its_mode():
    spec_type = yaml.safe_load((ROOT / "spec" / "types" / "elicitation.yaml").read_text(encoding="utf-8"))
    assert const_tag(spec_type["types"][PARAMS]) == TAG


def test_a_form_is_read_by_the_form_branch():
    read = ADAPTER.validate_python(FORM)
    assert getattr(read, TAG) == FORM[TAG] and "Form" in type(read).__name__


def test_a_malformed_form_is_an_error_not_the_open_branch():
    broken = {k: v for k, v in FORM.items() if k != "requestedSchema"}
    with pytest.raises(ValidationError):
        ADAPTER.validate_python(broken)


def test_an_unknown_mode_is_kept_by_the_open_branch():
    other = dict(copy.deepcopy(FORM), mode="_acme/voice")
    read = ADAPTER.validate_python(other)
    assert type(read).__name__.startswith("Other") and getattr(read, TAG) == "_acme/voice"
    assert read.model_dump(mode="json", by_alias=True, exclude_unset=True) == other


def test_a_missing_mode_is_an_error():
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({k: v for k, v in FORM.items() if k != TAG})
