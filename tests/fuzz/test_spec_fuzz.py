"""Fuzzing the spec: a mutated spec either generates outputs that pass `check` and import, or gets exit 2 with
sorted diagnostics, no traceback, and outputs untouched (issue 11, item 5).

Two properties, to keep `make test` quick:

- the real spec, mutated, is validated in-process, and when it is valid every renderer but the two costly ones
  runs on it (and what claims to be JSON must be strict JSON): many draws, a fraction of a second each;
- the small `keyed` fixture spec, mutated, goes through the whole `generate` over a previous generation, then
  `check` and an import of the generated package in a fresh interpreter: fewer draws, about two seconds each.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import render
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from tests.faults.support import LINE
from tests.fuzz.conftest import draws, phases, record, scaled
from tests.fuzz.mutations import fresh_copy, mutate, string_pool
from tests.support import ROOT, SPEC_FIXTURES, run_generator, tree

pytestmark = pytest.mark.fuzz

REAL_SPEC = ROOT / "spec"
FIXTURE_SPEC = SPEC_FIXTURES / "keyed" / "spec"
REAL_POOL = string_pool(REAL_SPEC)
FIXTURE_POOL = string_pool(FIXTURE_SPEC)
# Every renderer but the two that take most of a second or more per run: the Python package
# (datamodel-code-generator and ruff) and the JSON Schema (it checks what it emits against the meta-schema), and
# the page that quotes the Python package. The second property runs them all on every valid draw.
_COSTLY = ("generator.render.python.package", "generator.render.schema.bundles")
CHEAP_RENDERERS = tuple(r for r in render.CODE_RENDERERS if r.__module__ not in _COSTLY)
CHEAP_PAGES = tuple(p for p in render.PAGE_RENDERERS if p.__module__ != "generator.render.sdk.tables")


def _assert_diagnostics(err: str) -> None:
    lines = err.splitlines()
    assert lines and lines[-1].endswith("nothing was written."), err
    matches = [LINE.match(line) for line in lines[:-1]]
    assert all(matches), err
    keys = [(m["file"], int(m["line"]), int(m["col"])) for m in matches if m]
    assert keys == sorted(keys), err


@settings(
    max_examples=draws(200),
    deadline=None,
    phases=phases(),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_mutated_real_spec_is_valid_or_diagnosed(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-fuzz-") as tmp:
        root = Path(tmp)
        fresh_copy(REAL_SPEC, root / "spec")
        what = mutate(data, root / "spec", REAL_POOL)
        run = run_generator("validate", "--root", str(root))
        assert "Traceback" not in run.out + run.err and "internal error" not in run.err, (what, run.err)
        assert run.status in (0, 2), (what, run)
        if run.status == 2:
            _assert_diagnostics(run.err)
            record("real spec, validate", "exit 2 with diagnostics")
            return
        spec = load_spec(root / "spec", root)
        files: dict[str, str] = {}
        for renderer in CHEAP_RENDERERS:
            files.update(renderer(spec))
        for page_renderer in CHEAP_PAGES:
            files.update(page_renderer(spec, files))
        for rel, text in files.items():
            text.encode("utf-8")  # every output can be written
            if rel.endswith(".json"):
                json.loads(text, parse_constant=_no_constant)  # no NaN or Infinity
        record("real spec, validate", "exit 0 and rendered")


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in JSON output")


@settings(
    max_examples=scaled(8, 0.05),
    deadline=None,
    phases=phases(),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_mutated_fixture_spec_generates_or_is_diagnosed(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-fuzz-") as tmp:
        root = Path(tmp)
        shutil_copy_meta(root)
        assert run_generator("generate", "--root", str(root)).status == 0
        before = tree(root)
        what = mutate(data, root / "spec", FIXTURE_POOL)
        run = run_generator("generate", "--root", str(root))
        assert "Traceback" not in run.out + run.err and "internal error" not in run.err, (what, run.err)
        assert run.status in (0, 2), (what, run)
        if run.status == 2:
            _assert_diagnostics(run.err)
            assert tree(root) == before, what
            record("fixture spec, generate", "exit 2, outputs untouched")
            return
        assert run_generator("check", "--root", str(root)).status == 0, what
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import acp_v2_schema.models as m, acp_v2_schema.retry; [getattr(m, n) for n in m.__all__]",
            ],
            cwd=root / "generated" / "python",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (what, done.stderr[-2000:])
        record("fixture spec, generate", "exit 0, check passes, package imports")


def shutil_copy_meta(root: Path) -> None:
    """The keyed fixture spec with the real meta-schemas, as the pipeline tests use it."""
    fresh_copy(FIXTURE_SPEC, root / "spec")
    for meta in (REAL_SPEC / "meta").iterdir():
        (root / "spec" / "meta").mkdir(exist_ok=True)
        (root / "spec" / "meta" / meta.name).write_bytes(meta.read_bytes())


def test_a_spec_error_is_a_spec_error_not_a_crash() -> None:
    # the properties above rely on load_spec raising SpecError for a bad spec: keep that contract visible
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(SpecError):
        load_spec(Path(tmp) / "spec", Path(tmp))


@pytest.mark.parametrize("bound", ["minLength", "maxLength"])
@pytest.mark.parametrize("value", ['"action"', "true", "2.5"])
def test_a_key_bound_that_is_not_a_whole_number_is_diagnosed(tmp_path: Path, bound: str, value: str) -> None:
    """Kept from a fuzz draw: the traces' repeats count on the key's bounds, which once crashed on a string."""
    fresh_copy(REAL_SPEC, tmp_path / "spec")
    path = tmp_path / "spec" / "types" / "idempotency.yaml"
    text, count = re.subn(rf"(\n\s+{bound}:) \d+\n", rf"\1 {value}\n", path.read_text(encoding="utf-8"), count=1)
    assert count == 1, f"no {bound} in {path.name}"
    path.write_text(text, encoding="utf-8")
    run = run_generator("validate", "--root", str(tmp_path))
    assert run.status == 2 and "Traceback" not in run.out + run.err, run.err
    _assert_diagnostics(run.err)
