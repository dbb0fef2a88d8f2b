"""The Python SDK's gen_all.py (agent-client-protocol 0.12.1) on the published v2 schema and on ours.

The published run is the control: it must pass every check here, and so must ours. A check that ever fails on
ours again while a fix is under way may carry a strict xfail naming what fails, so that the fix turns it into an
unexpected pass and the mark comes off.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sdk_pipelines import python_sdk
from tests.sdk_pipelines.conftest import PythonSdk


def _generated_classes(run: python_sdk.Run, name: str) -> dict[str, dict[str, str]]:
    assert run.generated, f"gen_all.py wrote no schema.py for the {name} schema: {run.first_error()}"
    return python_sdk.module_classes(run.module)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_gen_all_runs_and_its_module_imports(name: str, python_run: Any, python_sdk_tools: PythonSdk) -> None:
    run = python_run(name)
    assert run.returncode == 0, f"gen_all.py failed on the {name} schema: {run.first_error()}"
    assert python_sdk.import_error(python_sdk_tools.python, run.root) is None
    assert _generated_classes(run, name), "the generated module defines no classes"


@pytest.mark.slow
def test_every_class_the_published_run_makes_exists_in_ours(python_run: Any) -> None:
    published = _generated_classes(python_run("published"), "published")
    ours = _generated_classes(python_run("ours"), "ours")
    missing = sorted(set(published) - set(ours))
    numbered = [name for name in missing if name[-1].isdigit()]
    assert not missing, (
        f"{len(missing)} of {len(published)} published classes are missing from ours "
        f"({len(missing) - len(numbered)} named, {len(numbered)} numbered): {', '.join(missing)}"
    )


def _differences(published: dict[str, str], ours: dict[str, str]) -> list[str]:
    """What a published class has that ours of the same name lacks: a field, or a field's literal tag."""
    out = [f"no {field}" for field in sorted(set(published) - set(ours))]
    for field, annotation in sorted(published.items()):
        if annotation.startswith("Literal[") and field in ours and ours[field] != annotation:
            out.append(f"{field}: {ours[field]} where published has {annotation}")
    return out


@pytest.mark.slow
def test_shared_classes_keep_the_published_fields_and_tags(python_run: Any) -> None:
    published = _generated_classes(python_run("published"), "published")
    ours = _generated_classes(python_run("ours"), "ours")
    differing = {
        name: found
        for name in sorted(set(published) & set(ours))
        if (found := _differences(published[name], ours[name]))
    }
    listed = "; ".join(f"{name}: {', '.join(found)}" for name, found in differing.items())
    assert not differing, f"{len(differing)} classes differ from the published ones of the same name: {listed}"


@pytest.mark.slow
def test_ours_gets_every_lenient_validator_the_published_run_gets(python_run: Any) -> None:
    published = python_sdk.lenient_fields(python_run("published").module)
    assert published, "the published run salvages no field"
    ours_run = python_run("ours")
    assert ours_run.generated, f"gen_all.py wrote no schema.py for ours: {ours_run.first_error()}"
    missing = sorted(published - python_sdk.lenient_fields(ours_run.module))
    listed = ", ".join(f"{cls}.{field} ({kind})" for cls, field, kind in missing)
    assert not missing, f"{len(missing)} of {len(published)} salvaged fields are not salvaged in ours: {listed}"


def test_a_failed_run_is_reported_by_its_exception_line() -> None:
    traceback = "Warning: drift\nTraceback (most recent call last):\n  File 'x'\nNameError: name 'A' is not defined\n"
    assert python_sdk.error_line(traceback) == "NameError: name 'A' is not defined"
    pydantic = "pydantic.errors.PydanticUserError: bad fields\n\nFor further information visit the docs\n"
    assert python_sdk.error_line(pydantic) == "pydantic.errors.PydanticUserError: bad fields"
    assert python_sdk.error_line("no traceback\n") == "no traceback"
    assert python_sdk.error_line("") is None
