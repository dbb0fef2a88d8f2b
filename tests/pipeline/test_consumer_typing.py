"""A Client written against the generated package type-checks strictly, and a misspelt method name does not.

The consumer script (tests/fixtures/consumer/client.py) builds a keyed PromptRequest, reads an incoming line with
the generated reader, switches over SessionUpdate including its fallback variant, and calls may_resend. Both
mypy and pyright check it in strict mode against the installed packages, with no ignores.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

CONSUMER = ROOT / "tests" / "fixtures" / "consumer" / "client.py"
TYPO = 'may_resend("session/promt", "request", FailureKind.NO_RESPONSE, True)'


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(path.parent / ".mypy"), str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=path.parent,
    )


def _pyright(path: Path) -> subprocess.CompletedProcess[str]:
    (path.parent / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}', encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=path.parent,
        timeout=600,
    )


@pytest.fixture
def consumer(tmp_path: Path) -> Path:
    path = tmp_path / "client.py"
    shutil.copyfile(CONSUMER, path)
    return path


@pytest.fixture
def misspelt(tmp_path: Path) -> Path:
    path = tmp_path / "typo.py"
    path.write_text(
        f"from acp_v2_schema.retry import FailureKind, may_resend\n\nallowed: bool = {TYPO}\n", encoding="utf-8"
    )
    return path


@pytest.mark.slow
def test_the_consumer_passes_mypy_strict(consumer: Path) -> None:
    done = _mypy(consumer)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_consumer_passes_pyright_strict(consumer: Path) -> None:
    done = _pyright(consumer)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_misspelt_method_name_is_a_type_error(misspelt: Path) -> None:
    mypy, pyright = _mypy(misspelt), _pyright(misspelt)
    assert mypy.returncode == 1 and "session/promt" in mypy.stdout, mypy.stdout
    assert pyright.returncode == 1 and "session/promt" in pyright.stdout, pyright.stdout
    assert "ignore" not in CONSUMER.read_text(encoding="utf-8")  # the clean result needs no suppressions
