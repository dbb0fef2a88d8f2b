"""`pip install generated/python` works in a fresh virtual environment, and the installed package runs."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support import ROOT

SCRIPT = """
import json, acp_v2_schema
from acp_v2_schema.models import PromptRequest
from acp_v2_schema.retry import may_resend
assert acp_v2_schema.load_schema(unstable=True)["$defs"]["IdempotencyKey"]["maxLength"] == 255
assert len(acp_v2_schema.load_policy()["methods"]) == 33
r = PromptRequest.model_validate_json('{"sessionId":"s","prompt":[{"type":"text","text":"t"}],"idempotencyKey":"k"}')
assert r.idempotency_key == "k"
assert may_resend("session/prompt", "request", "no-response", has_key=True)
print("ok", acp_v2_schema.__file__)
"""


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT / "generated/python")],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    done = subprocess.run([str(python), "-c", SCRIPT], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.startswith("ok ")
    assert str(env_dir) in done.stdout  # imported from the install, not from the source tree
    assert sys.prefix != str(env_dir)
