"""`make dist` builds four artifacts that pass `twine check --strict`, each with the licence and full metadata,
and the built wheels install into a fresh virtual environment and run."""

from __future__ import annotations

import subprocess
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support import ROOT

DISTRIBUTIONS = ("acp_v2_schema", "acp_v2_runtime")
FIELDS = (
    "License-Expression: Apache-2.0",
    "Author: The ACP v2 retry toolchain contributors",
    "Classifier: Development Status :: 3 - Alpha",
    "Classifier: Typing :: Typed",
    "Project-URL: Homepage",
    "Requires-Python: >=3.10",
    "Description-Content-Type: text/markdown",
)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `make dist` leaves in its output folder (built once for the module)."""
    out = tmp_path_factory.mktemp("dist") / "dist"
    done = subprocess.run(
        ["make", "--no-print-directory", "dist", f"DIST={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 4, done.stdout  # twine's verdict on every artifact
    return out


def _license() -> str:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0" in text
    return text


def test_the_runtime_ships_the_repository_license() -> None:
    # The runtime's build reads only files under runtime/, so it keeps a copy; the copy must not drift.
    assert (ROOT / "runtime" / "LICENSE").read_text(encoding="utf-8") == _license()


@pytest.mark.slow
@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_wheel_and_sdist_carry_the_license_and_metadata(dist: Path, name: str) -> None:
    (wheel,) = dist.glob(f"{name}-*.whl")
    (sdist,) = dist.glob(f"{name}-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licenses, names
        assert archive.read(licenses[0]).decode() == _license()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for field in FIELDS:
        assert field in metadata, (name, field)
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/LICENSE"))
        extracted = archive.extractfile(member)
        assert extracted is not None and extracted.read().decode() == _license()


@pytest.mark.slow
def test_built_wheels_install_into_a_fresh_venv_and_run(dist: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    wheels = sorted(str(w) for w in dist.glob("*.whl"))
    assert len(wheels) == 2, wheels
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *wheels]
    subprocess.run(install, check=True, capture_output=True, cwd=tmp_path, timeout=600)
    # One command of each: the schema package's retry table, and the runtime's validator on one message.
    table = (
        "from acp_v2_schema.retry import may_resend; "
        "print(may_resend('session/prompt', 'request', 'no-response', has_key=True))"
    )
    done = subprocess.run([python, "-c", table], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
    line = '{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n'
    done = subprocess.run(
        [python, "-m", "acp_v2_runtime.validate"], input=line, capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
