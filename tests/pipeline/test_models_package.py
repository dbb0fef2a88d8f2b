"""The generated `acp_v2_schema.models` package: one module per type family, each imported on first access.

Importing the package must load no family (nor pydantic); every spec type must keep its name; and every model must
build whichever family a program happens to import first, since the families refer to each other in cycles.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import acp_v2_schema.models as models
import pytest
from pydantic import BaseModel

from generator import paths
from generator.pipeline import load_spec
from tests.support import ROOT

PACKAGE_DIR = ROOT / paths.PYTHON_DIST
MODELS_DIR = PACKAGE_DIR / "acp_v2_schema" / "models"
FAMILIES = sorted(p.stem for p in MODELS_DIR.glob("*.py") if p.stem != "__init__")

# Builds the validator of every name in `__all__`, last name first, after importing one family module directly
# (TypeAdapter builds at once; a model with unresolvable annotations fails model_rebuild).
_BUILD_ALL = """
import importlib, sys
from pydantic import BaseModel, TypeAdapter
importlib.import_module(sys.argv[1])
import acp_v2_schema.models as models
for name in reversed(models.__all__):
    value = getattr(models, name)
    if isinstance(value, type) and issubclass(value, BaseModel):
        value.model_rebuild(raise_errors=True)
    else:
        TypeAdapter(value)
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(PACKAGE_DIR), "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_every_spec_type_is_exported_under_its_own_name() -> None:
    spec = load_spec(ROOT / "spec", ROOT)
    names = {t.name for t in spec.types}
    assert names <= set(models.__all__)
    assert list(models.__all__) == sorted(set(models.__all__))
    for name in models.__all__:
        assert getattr(getattr(models, name), "__name__", name) == name
    assert set(models.__all__) <= set(dir(models))
    with pytest.raises(AttributeError):
        models.NoSuchType  # noqa: B018


def test_importing_the_package_loads_no_family() -> None:
    done = _python(
        "import sys, acp_v2_schema.models as m\n"
        "print(sorted(n for n in sys.modules if n.startswith('acp_v2_schema.models.')), 'pydantic' in sys.modules)\n"
        "m.PromptRequest\n"
        "print('acp_v2_schema.models.prompt' in sys.modules)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[] False", "True"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_model_builds_whichever_family_comes_first(family: str) -> None:
    done = _python(_BUILD_ALL, f"acp_v2_schema.models.{family}")
    assert done.returncode == 0, done.stderr


def test_models_are_pydantic_models_of_their_family_module() -> None:
    for name in models.__all__:
        value = getattr(models, name)
        if isinstance(value, type) and issubclass(value, BaseModel):
            module = value.__module__
            assert module.startswith("acp_v2_schema.models."), name
            assert Path(sys.modules[module].__file__ or "").parent == MODELS_DIR


def test_validate_json_takes_pydantic_options_as_its_own_method_does() -> None:
    """The base class's fast path for the common call keeps every option of `BaseModel.model_validate_json`."""
    from pydantic import PydanticUserError, ValidationError

    text = '{"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}], "extraField": 1}'
    plain = models.PromptRequest.model_validate_json(text)
    assert plain.session_id == "s1" and plain.model_extra == {"extraField": 1}
    with pytest.raises(ValidationError):  # the options reach the validator: `extra` overrides the model's `allow`
        models.PromptRequest.model_validate_json(text, extra="forbid")
    with pytest.raises(ValidationError):  # and so does `by_alias` (the field is known by its alias only here)
        models.PromptRequest.model_validate_json(text, by_alias=False, by_name=True)
    with pytest.raises(PydanticUserError):
        models.PromptRequest.model_validate_json(text, by_alias=False)
    assert models.PromptRequest.model_validate_json(text, strict=True, context={}) == plain
    assert models.PromptRequest.model_validate_json(json_data=text) == plain  # by keyword, as pydantic allows


_PROMPT_TEXT = '{"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}'


def _bound_validator(model: type) -> object:
    """The validator that a built model's own `model_validate_json` hands calls to."""
    return inspect.getclosurevars(model.model_validate_json).nonlocals["validate"].__self__


def test_a_built_model_validates_json_with_its_own_validator() -> None:
    """Once built, a model's `model_validate_json` is its own function, bound to its current validator, also after
    a forced rebuild (which pydantic does not report to `__pydantic_on_complete__`)."""
    model = models.SessionInfoUpdate
    model.model_rebuild()
    assert isinstance(model.__dict__["model_validate_json"], staticmethod)
    assert _bound_validator(model) is model.__pydantic_validator__
    model.model_rebuild(force=True)
    assert _bound_validator(model) is model.__pydantic_validator__
    assert isinstance(model.model_validate_json('{"sessionUpdate": "session_info_update"}'), model)


def test_a_subclass_validates_json_as_itself() -> None:
    """A user's subclass of a built model is not handed its parent's validator, and a method that a subclass
    defines for itself is kept, in its own subclasses too."""
    models.PromptRequest.model_validate_json(_PROMPT_TEXT)  # the parent is built first

    class Mine(models.PromptRequest):
        extra_note: str = "mine"

    assert type(Mine.model_validate_json(_PROMPT_TEXT)) is Mine
    assert _bound_validator(Mine) is Mine.__pydantic_validator__

    class Custom(models.PromptRequest):
        @classmethod
        def model_validate_json(cls, json_data, **options):  # type: ignore[override]
            return "custom"

    class Below(Custom):
        pass

    assert Custom.model_validate_json(_PROMPT_TEXT) == "custom"
    assert Below.model_validate_json(_PROMPT_TEXT) == "custom"
