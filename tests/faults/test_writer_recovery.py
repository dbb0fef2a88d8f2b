"""Atomic writes that recover: a run killed at any point leaves each output root old or new after the next run.

A child process runs `writer.write` and is killed (os._exit, which skips every `finally`, as SIGKILL would) at its
k-th file-system step, for every k until a run completes. After each kill, a fresh `write` of the new content must
leave every root exactly new, with no staging or retired tree left; `recover` alone must leave it old or new.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.write import writer
from tests.support import ROOT, make_project, run_generator, tree

OLD = {
    "generated/a.json": "old a\n",
    "generated/deep/b.py": "old b\n",
    "generated/gone.txt": "only in the old tree\n",
    "generated/deep/same.txt": "in both trees\n",
    "site/reference/x.md": "old x\n",
}
NEW = {
    "generated/a.json": "new a\n",
    "generated/deep/b.py": "new b\n",
    "generated/deep/c.py": "only in the new tree\n",
    "generated/deep/same.txt": "in both trees\n",  # linked into the new tree, not written
    "site/reference/x.md": "new x\n",
    "site/reference/methods/y.md": "new y\n",
}
_STEPS = (
    (Path, "write_bytes"),
    (Path, "hardlink_to"),
    (Path, "rename"),
    (Path, "mkdir"),
    (shutil, "rmtree"),
)


def _content(root: Path, managed: str) -> dict[str, str]:
    base = root / managed
    if not base.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def _expected(files: dict[str, str], managed: str) -> dict[str, str]:
    return {k: v for k, v in files.items() if k.startswith(managed + "/")}


def _write_killed_at(root: Path, k: int) -> bool:
    """Run write(NEW) in a child killed at its k-th step; True when the child finished before step k."""
    pid = os.fork()
    if pid == 0:  # the child: count steps, die at the k-th without any cleanup
        count = [0]

        def wrap(owner: object, name: str) -> None:
            original = getattr(owner, name)

            def step(*args: object, **kwargs: object) -> object:
                count[0] += 1
                if count[0] == k:
                    os._exit(137)
                return original(*args, **kwargs)

            setattr(owner, name, step)

        for owner, name in _STEPS:
            wrap(owner, name)
        try:
            writer.write(root, NEW)
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 137), code
    return code == 0


def test_a_write_killed_at_any_step_is_completed_or_undone_by_the_next_run(tmp_path: Path) -> None:
    killed_runs = 0
    for k in range(1, 500):
        root = tmp_path / f"k{k}"
        writer.write(root, OLD)
        finished = _write_killed_at(root, k)
        if finished:
            break
        killed_runs += 1
        for managed in writer.MANAGED_ROOTS:
            writer.recover(root, managed)
            # after recovery alone, each root is entirely old or entirely new, never a mix and never missing
            assert _content(root, managed) in (_expected(OLD, managed), _expected(NEW, managed)), (k, managed)
            assert writer.leftovers(root, managed) == [], (k, managed)
        writer.write(root, NEW)
        for managed in writer.MANAGED_ROOTS:
            assert _content(root, managed) == _expected(NEW, managed), (k, managed)
        shutil.rmtree(root)
    else:
        pytest.fail("the writer never finished")
    assert killed_runs > 20  # every step of the two roots was tried


def test_leftovers_of_interrupted_runs_are_ignored_by_git(tmp_path: Path) -> None:
    names = []
    for managed in writer.MANAGED_ROOTS:
        parent, _, name = managed.rpartition("/")
        for state in ("old", "new"):
            names.append(f"{parent + '/' if parent else ''}.{name}.{state}-4242/file.txt")
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert sorted(done.stdout.split()) == sorted(names)


def test_leftovers_of_a_live_process_are_left_alone(tmp_path: Path) -> None:
    writer.write(tmp_path, OLD)
    other = subprocess.Popen(["sleep", "30"])
    try:
        busy = tmp_path / f".generated.new-{other.pid}"
        busy.mkdir()
        writer.recover(tmp_path, "generated")
        assert busy.is_dir()
    finally:
        other.kill()
        other.wait()
    writer.recover(tmp_path, "generated")
    assert not busy.exists()


def test_a_root_that_cannot_be_replaced_is_named_and_the_replaced_ones_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    method = root / "spec/methods/session-new.yaml"
    method.write_text(method.read_text().replace("Creates a session.", "Creates a new session."))
    (root / "generated/retry-policy.json").write_text("{}\n")  # so that generated/ needs replacing too
    before_site = {k: v for k, v in tree(root).items() if k.startswith("site/")}
    original = Path.mkdir

    def read_only_site(self: Path, *args: object, **kwargs: object) -> None:
        if self.name.startswith(".reference.new-"):  # as an immutable site/ would answer
            raise PermissionError(1, "Operation not permitted")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", read_only_site)
    result = run_generator("generate", "--root", str(root), "--force")
    assert result.status == 2
    assert "Traceback" not in result.err
    assert "nothing was written" not in result.err
    assert "could not replace site/reference/ (Operation not permitted)" in result.err
    assert "roots replaced before that: generated/" in result.err
    assert {k: v for k, v in tree(root).items() if k.startswith("site/")} == before_site
    monkeypatch.undo()
    # the next run finishes the job
    assert run_generator("generate", "--root", str(root)).status == 0
    assert run_generator("check", "--root", str(root)).status == 0
