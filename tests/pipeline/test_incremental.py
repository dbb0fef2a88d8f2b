"""Incremental generation (issue 14, item 2): reuse only what cannot have changed, and stay byte-identical.

- Random edits (prose, a type's property, a type or a method added or removed, an example) are applied one after
  another to a copy of a spec; after each, an incremental `generate` must leave exactly the bytes that a fresh
  `generate --force` in an empty tree writes (or, for an edit that breaks the spec, the same diagnostics).
- Every read a renderer makes of the model is traced, and none may touch a field its table entry says it ignores.
- An edit to a template or a generator source re-renders what it shapes; the parse cache never hides an error.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.diagnostics import SpecError
from generator.model import spec as model
from generator.pipeline import load_spec, read_spec
from generator.read.parsecache import PARSE_CACHE_FILE, ParseCache
from generator.render import UNITS, render_all, templates
from generator.render.incremental import MEMO_DIR, RenderCache, digest, memoized_each
from generator.render.python import described
from generator.render.python import package as python_pkg
from generator.write import cache
from tests.fuzz.conftest import record, scaled
from tests.support import ROOT, make_project, run_generator, tree

PROSE_KEYS = ("summary", "description", "note", "title", "repeat", "meaning", "why", "rule", "reason")


# -- edits: each changes the spec under `root` and returns a label ---------------------------------------------
def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted((root / "spec").glob(pattern))


def _strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of the prose strings in a document."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and key in PROSE_KEYS:
                yield (*path, key)
            else:
                yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*path, i))


def edit_prose(root: Path, rng: random.Random, n: int) -> str:
    candidates = [(f, p) for f in _files(root, "**/*.yaml") for p in _strings(_load(f))]
    file, path = rng.choice(candidates)
    data = _load(file)
    holder = data
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = f"{holder[path[-1]]} Edit {n}."
    _dump(file, data)
    return f"prose {file.relative_to(root)}:{'.'.join(map(str, path))}"


def edit_method_summary(root: Path, rng: random.Random, n: int) -> str:
    file = rng.choice(_files(root, "methods/*.yaml"))
    data = _load(file)
    data["summary"] = f"{data['summary']} Edit {n}."
    _dump(file, data)
    return f"summary of {file.name}"


def edit_method_prose(root: Path, rng: random.Random, n: int) -> str:
    file = rng.choice(_files(root, "methods/*.yaml"))
    data = _load(file)
    field = rng.choice(["summary", "description", "repeat"])
    holder = data["retry"] if field == "repeat" else data
    holder[field] = f"{holder.get(field, '')} Edit {n}.".strip()
    _dump(file, data)
    return f"{field} of {file.name}"


def _typed(root: Path, rng: random.Random) -> tuple[Path, Any, str]:
    file = rng.choice(_files(root, "types/*.yaml"))
    data = _load(file)
    name = rng.choice([name for name, schema in data["types"].items() if "properties" in schema] or [None])
    return file, data, name


def edit_type_property(root: Path, rng: random.Random, n: int) -> str:
    file, data, name = _typed(root, rng)
    if name is None:
        return edit_prose(root, rng, n)
    properties = data["types"][name]["properties"]
    if rng.random() < 0.5 or not properties:
        properties[f"editNote{n}"] = {"type": "string", "description": f"Added by edit {n}."}
        label = f"new property of {name}"
    else:
        prop = rng.choice(sorted(properties))
        properties[prop]["description"] = f"Described by edit {n}."
        label = f"description of {name}.{prop}"
    _dump(file, data)
    return label


def edit_add_type(root: Path, rng: random.Random, n: int) -> str:
    file = rng.choice(_files(root, "types/*.yaml"))
    data = _load(file)
    data["types"][f"EditAdded{n}"] = {"type": "object", "description": f"Added by edit {n}.", "properties": {}}
    _dump(file, data)
    return f"type EditAdded{n} in {file.name}"


def edit_remove_type(root: Path, rng: random.Random, n: int) -> str:
    file = rng.choice(_files(root, "types/*.yaml"))
    data = _load(file)
    if len(data["types"]) < 2:
        return edit_add_type(root, rng, n)
    name = rng.choice(sorted(data["types"]))
    del data["types"][name]
    _dump(file, data)
    return f"type {name} removed"


def edit_add_method(root: Path, rng: random.Random, n: int) -> str:
    source = rng.choice(_files(root, "methods/*.yaml"))
    data = _load(source)
    data["method"] = f"{data['method']}_edit{n}"
    data["stability"] = "unstable"
    _dump(source.with_name(f"{source.stem}-edit{n}.yaml"), data)
    return f"method {data['method']} added"


def edit_remove_method(root: Path, rng: random.Random, n: int) -> str:
    file = rng.choice(_files(root, "methods/*.yaml"))
    file.unlink()
    return f"{file.name} removed"


def edit_example(root: Path, rng: random.Random, n: int) -> str:
    files = _files(root, "examples/*.yaml")
    if not files:
        return edit_method_summary(root, rng, n)
    file = rng.choice(files)
    data = _load(file)
    step = rng.choice(data["steps"])
    step["note"] = f"{step['note']} Edit {n}."
    _dump(file, data)
    return f"example {file.name}"


# Edits of fields that few renderers read come more often: those are where a wrong declaration would show.
EDITS: tuple[Callable[[Path, random.Random, int], str], ...] = (
    edit_prose,
    edit_method_summary,
    edit_method_prose,
    edit_type_property,
    edit_type_property,
    edit_add_type,
    edit_remove_type,
    edit_add_method,
    edit_remove_method,
    edit_example,
)


def _spec_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "spec").rglob("*") if p.is_file()}


def _restore(root: Path, files: dict[str, bytes]) -> None:
    for path in (root / "spec").rglob("*"):
        if path.is_file() and path.relative_to(root).as_posix() not in files:
            path.unlink()
    for rel, data in files.items():
        (root / rel).write_bytes(data)


def _full_run(spec: Path, dest: Path) -> tuple[int, str, dict[str, bytes]]:
    shutil.copytree(spec, dest / "spec")
    result = run_generator("generate", "--force", "--root", str(dest))
    return result.status, result.err, tree(dest)


@pytest.mark.fuzz
@pytest.mark.parametrize(("case", "default"), [("keyed", 20), ("real", 3)])
def test_random_edits_leave_the_bytes_of_a_full_run(tmp_path: Path, case: str, default: int) -> None:
    work = tmp_path / "work"
    if case == "real":
        shutil.copytree(ROOT / "spec", work / "spec")
    else:
        make_project(work, case)
    assert run_generator("generate", "--root", str(work)).status == 0
    rng = random.Random(f"incremental-{case}")  # seeded: every run draws the same edits
    outcomes: Counter[str] = Counter()
    for n in range(scaled(default, 0.02 if case == "keyed" else 0.005)):
        before, written = _spec_files(work), tree(work)
        label = rng.choice(EDITS)(work, rng, n)
        incremental = run_generator("generate", "--root", str(work))
        status, err, full = _full_run(work / "spec", tmp_path / f"full{n}")
        assert incremental.status == status, f"edit {n} ({label}): {incremental.err or err}"
        if status == 0:
            assert tree(work) == full, f"edit {n} ({label}): the incremental run differs from a full run"
            outcomes["valid"] += 1
        else:  # an edit that breaks the spec: the same report, nothing written; then undo it
            assert incremental.err == err, f"edit {n} ({label})"
            assert tree(work) == written, f"edit {n} ({label}): a failed run wrote files"
            _restore(work, before)
            outcomes["invalid, undone"] += 1
        record(f"incremental generate ({case})", "valid" if status == 0 else "invalid")
    assert outcomes["valid"] >= 1


# -- what a renderer reads ---------------------------------------------------------------------------------------
MODEL_CLASSES = tuple(cls for cls in vars(model).values() if isinstance(cls, type) and dataclasses.is_dataclass(cls))


def _trace(spec: model.Spec) -> dict[str, set[str]]:
    """Run every renderer on `spec`, recording each attribute of the model it reads (`Class.name`)."""
    reads: dict[str, set[str]] = {unit.name: set() for unit in UNITS}
    current = [""]
    with pytest.MonkeyPatch.context() as patch:
        for cls in MODEL_CLASSES:
            original = cls.__getattribute__

            def traced(self: Any, name: str, _original: Any = original, _cls: type = cls) -> Any:
                if current[0] and not name.startswith("__"):
                    reads[current[0]].add(f"{_cls.__name__}.{name}")
                return _original(self, name)

            patch.setattr(cls, "__getattribute__", traced)
        by_unit: dict[str, dict[str, str]] = {}
        for unit in sorted(UNITS, key=lambda u: bool(u.quotes)):  # phase 1 first: the pages read its files
            code = {path: text for name in unit.quotes for path, text in by_unit[name].items()}
            # A fresh model for each: a cached property that an earlier renderer filled would hide its reads.
            fresh = dataclasses.replace(spec)
            current[0] = unit.name
            with unit.started(fresh):  # its early work reads the model too
                by_unit[unit.name] = unit.load()(fresh, code) if unit.quotes else unit.load()(fresh)
            current[0] = ""
    return reads


@pytest.mark.parametrize("case", ["real", "keyed", "minimal"])
def test_no_renderer_reads_a_field_it_declares_unread(tmp_path: Path, case: str) -> None:
    if case == "real":
        spec = load_spec(ROOT / "spec", ROOT)
    else:
        root = make_project(tmp_path, case)
        spec = load_spec(root / "spec", root)
    reads = _trace(spec)
    assert "Method.summary" in reads["docs-methods"]  # the tracing sees reads
    for unit in UNITS:
        assert not reads[unit.name] & unit.ignores, f"{unit.name} reads fields it declares unread"


def test_declarations_name_what_exists() -> None:
    fields = {f"{cls.__name__}.{f.name}" for cls in MODEL_CLASSES for f in dataclasses.fields(cls)}
    phase_one = {unit.name for unit in UNITS if not unit.quotes}
    assert len({unit.name for unit in UNITS}) == len(UNITS)
    for unit in UNITS:
        assert unit.ignores <= fields, f"{unit.name}: {sorted(unit.ignores - fields)}"
        assert set(unit.quotes) <= phase_one, f"{unit.name} quotes a renderer that is not in phase 1"
        assert not (unit.start and unit.quotes), f"{unit.name}: only phase 1 starts early work (render_all)"


# -- what an edit re-renders ---------------------------------------------------------------------------------
def _rerendered(root: Path) -> tuple[list[str], list[str]]:
    """Run generate as the command line does, and say which renderers ran and which were reused."""
    snapshot = read_spec(root / "spec", root)
    env = cache.environment()
    saved = cache.load(root)
    spec = load_spec(root / "spec", root, snapshot, ParseCache(root, env))
    renders = RenderCache(root, env, cache.renderer_records(saved, env))
    files = render_all(spec, renders)
    assert run_generator("generate", "--root", str(root)).status == 0
    assert tree(root) == {path: text.encode() for path, text in files.items()}
    return renders.rendered, renders.reused


def test_a_method_summary_edit_re_renders_only_the_docs(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    edit_method_summary(root, random.Random(1), 1)
    rendered, reused = _rerendered(root)
    assert rendered == ["docs-methods"]
    assert len(reused) == len(UNITS) - 1


def test_a_type_edit_leaves_the_renderers_that_do_not_read_types_alone(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    edit_type_property(root, random.Random(3), 1)
    rendered, reused = _rerendered(root)
    assert "python" in rendered and "schema" in rendered
    assert {"policy", "traces", "compat-rules", "codes-page"} <= set(reused)


def test_an_output_edited_by_hand_is_rendered_again(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    good = tree(root)
    edit_method_summary(root, random.Random(1), 1)  # not the no-op path: the spec changed too
    page = root / "generated/retry-policy.json"
    page.write_text(page.read_text() + " ")
    assert run_generator("generate", "--root", str(root)).status == 0
    assert tree(root)["generated/retry-policy.json"] == good["generated/retry-policy.json"]


def test_a_template_edit_re_renders_what_it_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "project", "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    # A copy of the generator's sources with one template changed, standing in for the real ones.
    sources = tmp_path / "generator"
    shutil.copytree(cache._GENERATOR_DIR, sources, ignore=shutil.ignore_patterns("__pycache__"))
    template = sources / "templates" / "generated" / "rust" / "retry_policy.rs.j2"
    template.write_text("// edited template\n" + template.read_text())
    monkeypatch.setattr(cache, "_GENERATOR_DIR", sources)
    monkeypatch.setattr(templates, "TEMPLATE_DIR", sources / "templates")
    templates.environment.cache_clear()
    try:
        assert run_generator("generate", "--root", str(root)).status == 0
        status, _, full = _full_run(root / "spec", tmp_path / "full")
    finally:
        templates.environment.cache_clear()
    assert status == 0 and tree(root) == full
    assert b"// edited template" in full["generated/rust/retry_policy.rs"]


def test_the_environment_covers_sources_templates_and_the_license(tmp_path: Path, monkeypatch: Any) -> None:
    sources = tmp_path / "generator"
    shutil.copytree(cache._GENERATOR_DIR, sources, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "_GENERATOR_DIR", sources)
    monkeypatch.setattr(cache, "_LICENSE", tmp_path / "LICENSE")
    (tmp_path / "LICENSE").write_text("terms\n")
    seen = {cache.environment()}
    for path in (
        sources / "templates" / "site" / "reference" / "methods" / "method.md.j2",
        sources / "model" / "spec.py",
    ):
        path.write_text(path.read_text() + "\n")
        seen.add(cache.environment())
    (tmp_path / "LICENSE").write_text("other terms\n")
    seen.add(cache.environment())
    assert len(seen) == 4


# -- the parse cache ---------------------------------------------------------------------------------------------
def test_a_spec_error_is_reported_the_same_with_a_warm_parse_cache(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    assert (root / PARSE_CACHE_FILE).is_file()
    written = tree(root)
    method = root / "spec/methods/session-new.yaml"
    method.write_text(method.read_text().replace("kind: request", "kind: requestt").replace("Creates", "Makes"))
    first = run_generator("generate", "--root", str(root))
    second = run_generator("generate", "--root", str(root))  # every file now comes from the parse cache
    fresh = make_project(tmp_path / "fresh", "keyed")
    shutil.copy(method, fresh / "spec/methods/session-new.yaml")
    full = run_generator("generate", "--force", "--root", str(fresh))
    assert first.status == second.status == full.status == 2
    assert first.err == second.err == full.err
    assert "session-new.yaml:" in first.err
    assert tree(root) == written


def test_the_parse_cache_hands_out_copies(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    parsed = ParseCache(root, "env")
    first = load_spec(root / "spec", root, read_spec(root / "spec", root), parsed)
    parsed.save()
    warm = ParseCache(root, "env")
    second = load_spec(root / "spec", root, read_spec(root / "spec", root), warm)
    assert warm.used and warm.used.keys() == parsed.used.keys()
    assert first == second
    assert ParseCache(root, "another environment").entries == {}


def test_a_corrupt_parse_cache_is_a_cold_start(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    written = tree(root)
    (root / PARSE_CACHE_FILE).write_bytes(b"not a pickle")
    edit_method_summary(root, random.Random(2), 2)
    assert run_generator("generate", "--root", str(root)).status == 0
    status, _, full = _full_run(root / "spec", tmp_path / "full")
    assert status == 0 and tree(root) == full != written


# -- the code generator's shortcut -------------------------------------------------------------------------------
# Texts a description may hold: ones the library writes verbatim, then ones it escapes or reshapes (those stay in
# the skeleton as they are), and one that looks like a placeholder token.
VERBATIM_PIECES = (
    "Plain words.", 'Ends with a quote"', '"Starts quoted', "It's a 'single' one", "# not a comment",
    "{{ not jinja }} {% either %}", "Unicode: \u00e9 \u2713 \U0001f642", "long " * 70 + "end", "a  double  space",
)  # fmt: skip
RESHAPED_PIECES = (
    "tab\there", "two\nlines", " leading space", "trailing space ", "back\\slash", 'triple """ quotes',
    "'\'\'single triple\'\'\'", "line\u2028separator", described._PREFIX + "0x", "",
)  # fmt: skip


def _describe(value: Any, pieces: tuple[str, ...], rng: random.Random, count: list[int], repeats: bool) -> None:
    """Give every description in a type file's data a random text, numbered by `count` so that each is distinct
    (with `repeats`, some are not: those may repeat)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "description" and isinstance(item, str):
                value[key] = rng.choice(pieces)
                if not repeats or rng.random() < 0.9:
                    count[0] += 1
                    # In front or behind, so that white space at either end is kept in some texts.
                    value[key] = rng.choice((f"{count[0]} {value[key]}", f"{value[key]} {count[0]}"))
            else:
                _describe(item, pieces, rng, count, repeats)
    elif isinstance(value, list):
        for item in value:
            _describe(item, pieces, rng, count, repeats)


@pytest.mark.fuzz
@pytest.mark.parametrize(("case", "default"), [("keyed", 8), ("real", 3)])
def test_the_code_generator_shortcut_writes_what_the_library_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, default: int
) -> None:
    """The models made on the skeleton, descriptions put back, equal the library's models of the real document."""
    root = tmp_path / "project"
    if case == "real":
        shutil.copytree(ROOT / "spec", root / "spec")
    else:
        make_project(root, case)
    runs: Counter[str] = Counter()
    original = python_pkg._generated

    def counted(text: str) -> str:
        runs["skeleton" if described._PREFIX in text else "document"] += 1
        return original(text)

    monkeypatch.setattr(python_pkg, "_generated", counted)
    files = _files(root, "types/*.yaml")
    pristine = {file: file.read_text(encoding="utf-8") for file in files}
    rng = random.Random(f"described-{case}")
    for n in range(scaled(default, 0.005)):
        # Draw 0 keeps the spec as it is. Then, in turn: two draws of distinct verbatim texts (the same skeleton:
        # the second must reuse the first's models), one that mixes in reshaped and repeated texts.
        mixed, count = n % 3 == 0, [0]
        for file in files if n else ():
            data = yaml.safe_load(pristine[file])
            _describe(data, VERBATIM_PIECES + RESHAPED_PIECES if mixed else VERBATIM_PIECES, rng, count, mixed)
            _dump(file, data)
        try:
            spec = load_spec(root / "spec", root)
        except SpecError:
            record(f"code generator shortcut ({case})", "invalid spec")
            continue
        before = runs["skeleton"]
        with RenderCache(root, "env").active():  # keeps the skeleton's models in root/.cache between draws
            shortcut = python_pkg.models_source(spec)
        reused = runs["skeleton"] == before
        assert shortcut == python_pkg.models_source(spec, shortcut=False), f"draw {n}"
        record(f"code generator shortcut ({case})", "reused the memo" if reused else "ran the library")
        if n % 3 == 2:
            assert reused, f"draw {n}: only descriptions changed since draw {n - 1}, yet the library ran again"


def test_force_and_a_corrupt_memo_run_the_code_generator_again(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    good = tree(root)
    memo = root / MEMO_DIR / "models-skeleton.json"
    saved = json.loads(memo.read_text(encoding="utf-8"))
    # A well-formed record whose models are wrong: --force must not read it.
    for entry in saved["entries"].values():
        entry["value"] = entry["value"].replace("class ", "class Wrong")
        entry["digest"] = digest(entry["value"])
    memo.write_text(json.dumps(saved), encoding="utf-8")
    assert run_generator("generate", "--force", "--root", str(root)).status == 0
    assert tree(root) == good
    memo.write_text("not json", encoding="utf-8")
    edit_type_property(root, random.Random(5), 1)
    assert run_generator("generate", "--root", str(root)).status == 0
    status, _, full = _full_run(root / "spec", tmp_path / "full")
    assert status == 0 and tree(root) == full


def test_a_memo_computes_only_what_it_does_not_hold(tmp_path: Path) -> None:
    asked: list[dict[str, str]] = []

    def upper(wanted: dict[str, str]) -> dict[str, str]:
        asked.append(wanted)
        return {item: text.upper() for item, text in wanted.items()}

    for inputs in ({"a": "x", "b": "y"}, {"a": "x", "b": "z"}, {"b": "z"}):
        with RenderCache(tmp_path, "env").active():
            assert memoized_each("test", inputs, upper) == {item: text.upper() for item, text in inputs.items()}
    assert asked == [{"a": "x", "b": "y"}, {"b": "z"}]  # the third run found everything
    with RenderCache(tmp_path, "env", recall=False).active():  # --force: computed again
        memoized_each("test", {"b": "z"}, upper)
    assert asked[-1] == {"b": "z"} and len(asked) == 3
    assert memoized_each("test", {"b": "z"}, upper) == {"b": "Z"} and len(asked) == 4  # no cache: computed


def test_checks_kept_in_the_parse_cache_run_again_when_what_they_read_changes(tmp_path: Path, monkeypatch) -> None:
    """Each worked example's check and each types file's meta-schema check keep a clean outcome in the parse cache:
    a prose edit reuses them all, and an edit to what one of them reads runs that one again (and only the checks
    that read it), so an error it causes is reported."""
    from generator.check import examples, schema_check

    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    spec_dir = tmp_path / "spec"

    def load() -> list[str]:
        parsed = ParseCache(tmp_path, "env")
        try:
            load_spec(spec_dir, tmp_path, read_spec(spec_dir, tmp_path), parsed)
        except SpecError as exc:
            return [d.code for d in exc.diagnostics]
        finally:
            parsed.save()
        return []

    assert load() == []  # a clean spec: every outcome is kept
    checked: Counter[str] = Counter()  # examples checked, by file name
    metaschema: Counter[str] = Counter()  # how many type schemas got the meta-schema check
    check_one, problems = examples._check_one, schema_check.problems
    monkeypatch.setattr(
        examples, "_check_one", lambda doc, *a: checked.update([Path(doc.display).name]) or check_one(doc, *a)
    )
    monkeypatch.setattr(schema_check, "problems", lambda s: metaschema.update(["type"]) or problems(s))

    method = spec_dir / "methods/session-new.yaml"
    method.write_text(method.read_text().replace("summary: ", "summary: Edited. ", 1))
    assert load() == [] and checked == Counter() and metaschema == Counter()  # prose only: nothing they read changed

    example = spec_dir / "examples/session-new.yaml"
    example.write_text(example.read_text().replace("method: session/new", "method: session/load", 1))
    assert "example-method-mismatch" in load()
    assert checked == Counter({"session-new.yaml": 1}) and metaschema == Counter()
    example.write_text(example.read_text().replace("method: session/load", "method: session/new", 1))
    assert load() == []
    checked.clear()

    # A type that the session/new example reaches: that example is checked again, and an example that does not
    # reach the type (session/prompt's) is not; only the edited file's types get the meta-schema check again.
    types = spec_dir / "types/session.yaml"
    data = yaml.safe_load(types.read_text(encoding="utf-8"))
    data["types"]["NewSessionRequest"]["maxProperties"] = 1  # the example's params have two members
    types.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    assert "example-invalid-params" in load()
    assert checked["session-new.yaml"] == 1 and "session-prompt.yaml" not in checked
    assert metaschema["type"] == len(data["types"])

    metaschema.clear()
    types.write_text(types.read_text().replace("    type: string\n", "    type: strung\n", 1))
    assert "invalid-type-schema" in load()
    assert metaschema["type"] > 0
