"""Issue 11's generator faults: the spec changing or vanishing while `generate` runs."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from pathlib import Path

import pytest

import generator.render as render
from generator.pipeline import load_spec, read_spec
from generator.render.python import codegen
from generator.render.sdk import traces
from tests.faults.support import real_project
from tests.support import make_project, run_generator, tree


def test_an_edit_made_during_generate_is_picked_up_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path, "keyed")
    method = root / "spec/methods/session-new.yaml"
    original = render.render_all

    def edit_while_rendering(spec, *args):  # the maintainer saves a file while the run renders
        method.write_text(method.read_text().replace("Creates a session.", "Creates a new session."))
        return original(spec, *args)

    monkeypatch.setattr(render, "render_all", edit_while_rendering)
    assert run_generator("generate", "--root", str(root)).status == 0
    monkeypatch.undo()
    # the run rendered what it read, so its outputs are stale now: the next run must see that, not skip
    assert run_generator("check", "--root", str(root)).status == 1
    again = run_generator("generate", "--root", str(root))
    assert again.status == 0 and "up to date" not in again.out
    assert "Creates a new session." in (root / "site/reference/methods/session-new.md").read_text()
    assert run_generator("check", "--root", str(root)).status == 0


def test_deleting_spec_during_a_run_cannot_lose_the_traces(tmp_path: Path) -> None:
    root = real_project(tmp_path)
    snapshot = read_spec(root / "spec", root)
    shutil.rmtree(root / "spec")  # gone after the files were read, before anything is checked or rendered
    spec = load_spec(root / "spec", root, snapshot)
    files = traces.render(spec)
    assert files and all(text.strip() for text in files.values())


def test_each_spec_file_is_read_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path, "keyed")
    opened: list[str] = []

    def counting(real):
        def wrapper(path, *args, **kwargs):
            if isinstance(path, str | Path) and str(path).startswith(str(root / "spec")):
                opened.append(Path(path).relative_to(root).as_posix())
            return real(path, *args, **kwargs)

        return wrapper

    for module, name in ((os, "open"), (io, "open"), (builtins, "open")):
        monkeypatch.setattr(module, name, counting(getattr(module, name)))
    assert run_generator("generate", "--root", str(root)).status == 0
    assert opened and len(opened) == len(set(opened)), sorted(opened)


# A worker that answers with the library's error, and one that dies without an answer (render/python/codegen.py).
FAILING_WORKERS = (
    ("import json, sys; sys.stdin.read(); print(json.dumps({'error': 'ValueError: no models today'}))", "no models"),
    ("import os; os._exit(3)", "ended without an answer (exit status 3)"),
)


@pytest.mark.parametrize(("entry", "said"), FAILING_WORKERS)
def test_a_failing_code_generator_worker_is_one_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, said: str
) -> None:
    root = make_project(tmp_path, "keyed")
    monkeypatch.setattr(codegen, "_ENTRY", entry)
    before = tree(root)
    run = run_generator("generate", "--root", str(root))
    assert run.status == 2, run
    assert "Traceback" not in run.out + run.err and "internal error" not in run.err, run.err
    assert said in run.err and run.err.strip().endswith("(nothing was written)"), run.err
    assert tree(root) == before
    assert codegen._worker is None  # nothing left running


def test_a_run_that_reuses_the_models_memo_starts_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    started: list[str] = []
    monkeypatch.setattr(codegen, "warm", lambda: started.append("worker"))
    # a method's summary (the Python renderer is not run), then a property's description (it is, on the memo)
    edits = (
        ("methods/session-new.yaml", "Creates a session.", "Creates one."),
        ("types/prompt.yaml", "The content.", "Its content."),
    )
    for file, old, new in edits:
        path = root / "spec" / file
        path.write_text(path.read_text().replace(old, new))
        run = run_generator("generate", "--root", str(root))
        assert run.status == 0 and "re-rendered" in run.out, run
    assert "python" in run.out  # the second edit reached the models
    assert run_generator("generate", "--root", str(root)).status == 0  # no-op
    assert started == []
