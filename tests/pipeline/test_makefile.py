"""The README's set-up commands set up everything its other commands use."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from tests.journey.readers import ALL_READERS
from tests.support import ROOT


def _recipe(target: str) -> list[str]:
    """The commands `make TARGET` would run from scratch (a dry run with every target out of date)."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_generate_installs_both_packages_after_writing() -> None:
    # After `make generate` alone, `python -m acp_v2_runtime.reference_agent` (and the other runtime commands
    # of the README) must import: both packages are installed into .venv once the files are written.
    lines = _recipe("generate")
    write = next(i for i, line in enumerate(lines) if "-m generator generate" in line)
    install = next(i for i, line in enumerate(lines) if "-e generated/python -e runtime" in line)
    assert write < install, lines


def test_dist_checks_every_artifact() -> None:
    lines = _recipe("dist")
    builds = [line for line in lines if " -m build " in line]
    assert any(line.endswith(" generated/python") for line in builds) and any(
        line.endswith(" runtime") for line in builds
    )
    assert any("twine check --strict" in line for line in lines), lines


def test_setup_runs_every_script_ci_runs_first() -> None:
    # The skipped tests' header names `make setup`: it must run what .ci/run runs before `make test`.
    (line,) = [line for line in _recipe("setup") if ".ci/setup.d/" in line]
    assert ".ci/setup.d/*.sh" in line and 'bash "$step"' in line, line
    assert ".ci/setup.d/*.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_quick_runs_the_journeys_checks_and_every_spec_reader() -> None:
    """`make quick`, the inner loop after a spec edit: the gates the journey runs after each step, then the test
    modules tests/journey/readers.py lists (each one a file that exists); `make pytest` still runs everything."""
    lines = _recipe("quick")
    for command in ("generate", "check", "diff", "audit"):
        assert any(f"-m generator {command}" in line for line in lines), (command, lines)
    (tests,) = [line for line in lines if " -m pytest " in line]
    assert tests.endswith("$(.venv/bin/python -m tests.journey.readers)"), tests
    assert all((ROOT / module).is_file() for module in ALL_READERS), ALL_READERS
    assert len(set(ALL_READERS)) == len(ALL_READERS)
    assert "tests/journey" not in tests, "the journey's own checks are the readers; the journey is not one of them"


def test_pytest_runs_every_test_module_once_in_processes_side_by_side() -> None:
    """`make pytest` runs the journey, the runtime half and the rest in processes of their own: every test module of
    the configured test paths is collected by exactly one of them, and every process's status counts."""
    lines = _recipe("pytest")
    runs = [line.split(";")[0].split(" > ")[0].split(" & ")[0] for line in lines if " -m pytest" in line]
    assert len(runs) == 3, runs
    collected: list[set[Path]] = []
    for run in runs:
        words = run.split()[3:]  # after ".venv/bin/python -m pytest"
        paths = [ROOT / w for w in words if not w.startswith("-")]
        ignored = [ROOT / w.removeprefix("--ignore=") for w in words if w.startswith("--ignore=")]
        assert paths, run
        modules = {m for p in paths for m in p.rglob("test_*.py") if not any(m.is_relative_to(i) for i in ignored)}
        collected.append(modules)
    configured = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    everything = {m for top in configured["testpaths"] for m in (ROOT / top).rglob("test_*.py")}
    assert set().union(*collected) == everything, sorted(map(str, everything - set().union(*collected)))
    assert sum(len(c) for c in collected) == len(everything), "a test module is run by two processes"
    recipe = "\n".join(lines)
    for process in ("journey", "runtime"):
        assert f"wait ${process}" in recipe, recipe
    assert "for status in $suite $half $walk" in recipe, recipe
