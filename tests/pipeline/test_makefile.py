"""The README's set-up commands set up everything its other commands use."""

from __future__ import annotations

import subprocess

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
