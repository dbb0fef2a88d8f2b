"""A maintainer's ordinary changes, one after another, each leaving the checks and the spec's tests green.

In a copy of the repository (a git repository of its own, so that it can be tagged), the README's "Adding or changing
a method" is followed as a new maintainer would: a method of our own with its upstream listing, a class the RFD does
not fix changed, a type renamed, the spec's own facts and shape changed (spec_facts.py: the key's maximum length, a
method's params type renamed, an optional field with its example, an unstable method removed, a new type family
file), a first release tagged, a break accepted for the next release and that release tagged, then a change after
the tag. After each step `generate`, `check`, `diff` (the compat gate) and `audit` must pass, and so must the tests
that read the spec (readers.py, run in the copy against its own generated package); after each of spec_facts' steps,
every output must have followed the change (schemas, the three SDK tables, vectors, docs, the runtime's key check).

Nothing of the spec is named here that the steps do not create themselves: the method to change and the class it
gets are chosen from the spec's data, so this test keeps working as the spec grows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.journey import spec_facts
from tests.journey.conftest import TIMINGS
from tests.journey.readers import FINAL_READERS, KEY_READERS, SPEC_READERS
from tests.journey.spec_facts import code, methods
from tests.support import ROOT

# What a copy leaves out: the virtual environment, git's own files, build output and caches. The compat cache
# (.cache/compat/, ACP's published schema) is kept, so that the copy fetches nothing the work tree has.
SKIP = {".venv", ".git", "build", "dist", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache"}
WORKFLOW = ROOT / "tests" / "fixtures" / "workflow"
# The method the journey adds: the workflow fixture (session/pin, as the README's steps write it) renamed, so that
# the fixture's own test (tests/upstream/test_method_workflow.py) can still add session/pin beside it.
OURS = (("Pinning", "Starring"), ("pinned", "starred"), ("Pin", "Star"), ("pin", "star"))


class Copy:
    """The repository copy and the commands a maintainer runs in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.spec = root / "spec"
        # The copy's generated package and runtime come first, before the editable installs of the work tree.
        path = [str(root), str(root / "generated" / "python"), str(root / "runtime")]
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1"}
        self.env.pop("PYTEST_ADDOPTS", None)

    def run(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=900, check=False
        )
        if expect is not None:
            assert done.returncode == expect, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        return done

    def generator(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "generator", *args, expect=expect)

    def git(self, *args: str) -> None:
        self.run("git", "-c", "user.name=Maintainer", "-c", "user.email=maintainer@example.invalid", *args)

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message)

    def edit(self, relative: str, change: Callable[[str], str]) -> None:
        path = self.root / relative
        before = path.read_text(encoding="utf-8")
        after = change(before)
        assert after != before, f"the edit changed nothing in {relative}"
        path.write_text(after, encoding="utf-8")


def _copy_repository(dest: Path) -> Copy:
    shutil.copytree(ROOT, dest, symlinks=True, ignore=lambda _d, names: [n for n in names if n in SKIP])
    shared = ROOT.parent / "shared"  # the RFD the tests read at test time sits beside the repository
    if shared.is_dir():
        (dest.parent / "shared").symlink_to(shared, target_is_directory=True)
    copy = Copy(dest)
    copy.git("init", "-q")
    copy.commit("the repository as it was")
    return copy


def _spec_tests(copy: Copy, modules: tuple[str, ...]) -> str:
    """Run these test modules in the copy, one process, no xdist; the summary line."""
    done = copy.run(
        sys.executable,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"),
        *modules,
        expect=None,
    )
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, f"the spec's tests failed in the copy:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"
    return tail.strip("= ")


def _gates(copy: Copy, step: str, started: float, modules: tuple[str, ...] = SPEC_READERS) -> None:
    """What `make test` runs before pytest, then the spec's tests; the step's timings are kept for the summary."""
    copy.generator("generate")
    copy.generator("check")
    copy.generator("diff")
    copy.generator("audit")
    commands = time.perf_counter() - started
    tests_started = time.perf_counter()
    outcome = _spec_tests(copy, modules) if modules else "no tests: the work tree's own run has them"
    TIMINGS.append((step, commands, time.perf_counter() - tests_started, outcome))
    copy.commit(step)


def _classes(copy: Copy) -> list[str]:
    data = yaml.safe_load((copy.spec / "retry-classes.yaml").read_text(encoding="utf-8"))
    return [c["name"] for c in data["classes"]]


def _rfd_fixed(copy: Copy) -> set[str]:
    """The classes whose methods the RFD fixes: those of a keyed method and of the duplicating ones.

    Read from the spec, as the decisions say: a class that resends with a key, and one that resends on opt-in.
    """
    data = yaml.safe_load((copy.spec / "retry-classes.yaml").read_text(encoding="utf-8"))
    return {c["name"] for c in data["classes"] if set(c["decisions"].values()) & {"with-key", "opt-in"}}


def _ours(text: str) -> str:
    for old, new in OURS:
        text = text.replace(old, new)
    return text


def _add_our_method(copy: Copy) -> str:
    """README steps 1 to 4: method file, types, worked example, then the upstream listing the audit prints."""
    for source, target in (
        ("session-pin.yaml", "methods/session-star.yaml"),
        ("pins.yaml", "types/stars.yaml"),
        ("session-pin.example.yaml", "examples/session-star.yaml"),
    ):
        (copy.spec / target).write_text(_ours((WORKFLOW / source).read_text(encoding="utf-8")), encoding="utf-8")
    copy.generator("generate")
    audit = copy.generator("audit", expect=1)
    # The maintainer copies each NOT LISTED line as printed (README step 4) and writes a reason for it.
    unlisted = [line.removeprefix("NOT LISTED").strip() for line in audit.stdout.splitlines() if line[:3] == "NOT"]
    assert any("session/star" in line for line in unlisted), audit.stdout
    reason = "session/star is ours; ACP has no such method."
    pasted = "".join(f"  - difference: {json.dumps(line)}\n    reason: {reason}\n" for line in unlisted)
    copy.edit("spec/upstream-differences.yaml", lambda text: text.rstrip("\n") + "\n" + pasted)
    return "session/star"


def _change_a_class(copy: Copy, *, stable: bool) -> tuple[str, str, str]:
    """Give one method the RFD does not fix another class the RFD does not fix, less forgiving than its own."""
    classes, fixed = _classes(copy), _rfd_fixed(copy)
    free = [c for c in classes if c not in fixed]
    for name, method in methods(copy).items():
        old = method["retry"]["class"]
        wanted = "stable" if stable else "unstable"
        if old in fixed or method["stability"] != wanted or "variants" in method["retry"]:
            continue
        later = [c for c in free if classes.index(c) > classes.index(old)]
        if later:
            new = later[0]
            copy.edit(f"spec/methods/{name}", lambda text, o=old, n=new: text.replace(f"class: {o}", f"class: {n}", 1))
            return method["method"], old, new
    pytest.skip("no method has a class the RFD does not fix with a less forgiving one after it")


def _rename_our_type(copy: Copy) -> None:
    """Rename the new method's result type everywhere the spec names it, the upstream listing included."""
    old, new = _ours("PinSessionResponse"), "SessionStarResponse"
    for path in copy.spec.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        if re.search(rf"\b{old}\b", text):
            path.write_text(re.sub(rf"\b{old}\b", new, text), encoding="utf-8")


def _rename_a_published_type(copy: Copy) -> str:
    """Rename a stable type ACP publishes, before the first release: the audit prints the two listing lines to
    paste, and the compat gate, whose baseline is ACP's published stable schema, names the break to accept.

    The type is chosen from the data: stable here and in the published stable schema, no method's params or result,
    and named in no code of the repository (a rename there is the maintainer's to make as well)."""
    ours = json.loads((copy.root / "generated" / "schema" / "schema.json").read_text(encoding="utf-8"))["$defs"]
    cached = sorted((copy.root / ".cache" / "compat").glob("*/schema.json"))
    assert cached, "the compat gate's published schema is not in the copy's cache"
    published = json.loads(cached[-1].read_text(encoding="utf-8"))["$defs"]
    roles = {m.get(role) for m in methods(copy).values() for role in ("params", "result")}
    written = code(copy)
    listing = (copy.spec / "upstream-differences.yaml").read_text(encoding="utf-8")
    old = next(
        (
            name
            for name in sorted(set(ours) & set(published))
            if name not in roles and not re.search(rf"\b{name}\b", written) and not re.search(rf"\b{name}\b", listing)
        ),
        None,
    )
    if old is None:
        pytest.skip("every stable published type is named in code or in the listing")
    new = f"Renamed{old}"
    for path in copy.spec.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        if re.search(rf"\b{old}\b", text):
            path.write_text(re.sub(rf"\b{old}\b", new, text), encoding="utf-8")
    copy.generator("generate")
    audit = copy.generator("audit", expect=1)
    unlisted = [line.removeprefix("NOT LISTED").strip() for line in audit.stdout.splitlines() if line[:3] == "NOT"]
    assert len(unlisted) == 2 and all(old in line or new in line for line in unlisted), audit.stdout
    reason = f"{old} is called {new} here; the wire is the same."
    pasted = "".join(f"  - difference: {json.dumps(line)}\n    reason: {reason}\n" for line in unlisted)
    copy.edit("spec/upstream-differences.yaml", lambda text: text.rstrip("\n") + "\n" + pasted)
    copy.generator("generate")
    gate = copy.generator("diff", expect=1)
    assert f"breaking[type-removed]: {old}: type removed" in gate.stdout, gate.stdout + gate.stderr
    assert f'subject: "{old}"' in gate.stderr, gate.stderr  # the entry to add, printed by the failing gate
    entry = f"  - rule: type-removed\n    subject: {old}\n    version: 0.1.0\n    reason: {reason}\n"
    copy.edit("spec/accepted-breaks.yaml", lambda text: text.rstrip("\n") + "\n" + entry)  # below `accepted:`
    return f"{old} -> {new}"


def _accept_a_break(copy: Copy, version: str) -> None:
    """A stable method's class made less forgiving: the gate fails, prints the entry, and the entry is added."""
    method, old, new = _change_a_class(copy, stable=True)
    copy.generator("generate")
    gate = copy.generator("diff", expect=1)
    assert "retry-class-less-forgiving" in gate.stdout and method in gate.stdout, gate.stdout + gate.stderr
    entry = (
        f"  - rule: retry-class-less-forgiving\n    subject: {method}\n    version: {version}\n"
        f"    reason: A repeated {method} turned out not to be harmless ({old} became {new}).\n"
    )
    copy.edit("spec/accepted-breaks.yaml", lambda text: text.rstrip("\n") + "\n" + entry)  # below `accepted:`


@pytest.mark.slow
def test_a_maintainers_ordinary_changes_keep_every_check_green(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    started = time.perf_counter()
    copy = _copy_repository(tmp_path / "repository")
    _gates(copy, "the repository as it is", started, modules=())

    started = time.perf_counter()
    method = _add_our_method(copy)
    _gates(copy, f"a method of ours ({method}) with its upstream listing", started)

    started = time.perf_counter()
    changed, old, new = _change_a_class(copy, stable=False)
    _gates(copy, f"a class the RFD does not fix changed ({changed}: {old} -> {new})", started)

    started = time.perf_counter()
    _rename_our_type(copy)
    _gates(copy, "a type renamed (its upstream listing too)", started)

    started = time.perf_counter()
    renamed = _rename_a_published_type(copy)
    _gates(copy, f"a stable published type renamed ({renamed}): listed, and its break accepted", started)

    started = time.perf_counter()
    old_max, new_max = spec_facts.change_key_maximum(copy)
    _gates(copy, f"the key's maximum length changed ({old_max} -> {new_max})", started, SPEC_READERS + KEY_READERS)
    spec_facts.follows_key_maximum(copy, new_max)

    started = time.perf_counter()
    typed, old_type, new_type = spec_facts.rename_a_params_type(copy)
    _gates(copy, f"{typed}'s params type renamed ({old_type} -> {new_type}): listed, its breaks accepted", started)
    spec_facts.follows_a_params_type(copy, typed, old_type, new_type)

    started = time.perf_counter()
    widened, params = spec_facts.add_an_optional_field(copy)
    _gates(copy, f"an optional field added to {params} ({widened}), with its example", started)
    spec_facts.follows_an_optional_field(copy, widened, params)

    started = time.perf_counter()
    removed, slug = spec_facts.remove_an_unstable_method(copy)
    _gates(copy, f"an unstable method removed ({removed}), with its envelope order", started)
    spec_facts.follows_a_removed_method(copy, removed, slug)

    started = time.perf_counter()
    family = spec_facts.add_a_type_family(copy)
    _gates(copy, f"a new type family file (spec/types/{family}.yaml)", started)
    spec_facts.follows_a_type_family(copy, family)

    started = time.perf_counter()
    copy.git("tag", "v0.1.0")
    _gates(copy, "the first release tagged (v0.1.0)", started)

    started = time.perf_counter()
    _accept_a_break(copy, "0.2.0")
    _gates(copy, "a break accepted for 0.2.0 in spec/accepted-breaks.yaml", started)

    started = time.perf_counter()
    copy.git("tag", "v0.2.0")
    copy.edit(
        f"spec/methods/{method.replace('/', '-')}.yaml",
        lambda text: text.replace("summary: Keeps a session", "summary: Keeps one session"),
    )
    _gates(copy, "v0.2.0 tagged, then a change after the tag", started, modules=SPEC_READERS + FINAL_READERS)
