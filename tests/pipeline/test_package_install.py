"""`pip install ./generated/python ./runtime` works in a fresh virtual environment, and the installed packages run."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from generator import paths
from tests.support import ROOT, key_rules, real_spec

SCRIPT = """
import json, acp_v2_schema
from acp_v2_schema.models import PromptRequest
from acp_v2_schema.retry import may_resend
assert acp_v2_schema.load_schema(unstable=True)["$defs"]["KEY_TYPE"]["maxLength"] == MAX_LENGTH
assert len(acp_v2_schema.load_policy()["methods"]) == ENTRIES
r = PromptRequest.model_validate_json('{"sessionId":"s","prompt":[{"type":"text","text":"t"}],"idempotencyKey":"k"}')
assert r.idempotency_key == "k"
assert may_resend("KEYED_METHOD", "KEYED_KIND", "AMBIGUOUS_FAILURE", has_key=True)
import acp_v2_runtime
from acp_v2_runtime.idempotency import InvalidKey, validate_key
try:
    validate_key("\\ud800")
except InvalidKey as exc:
    assert exc.code == -32602
else:
    raise AssertionError("a lone surrogate passed")
print("ok", acp_v2_schema.__file__, acp_v2_runtime.__file__)
"""


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # The fresh environment sees only what it installed, not a PYTHONPATH that a copy of the repository sets.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run(
        [
            str(python),
            *("-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
            *(str(ROOT / paths.PYTHON_DIST), str(ROOT / "runtime")),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
        env=env,
    )
    spec, rules = real_spec(), key_rules()  # what the installed package must say, read from the spec
    keyed, ambiguous = spec.keyed_method, spec.ambiguous_failure
    assert keyed is not None and ambiguous is not None
    facts = {
        "ENTRIES": str(len(spec.methods)),
        "KEY_TYPE": rules.type_name,
        "MAX_LENGTH": str(rules.max_length),
        "KEYED_METHOD": keyed.name,
        "KEYED_KIND": keyed.kind,
        "AMBIGUOUS_FAILURE": ambiguous.name,
    }
    script = SCRIPT
    for placeholder, value in facts.items():
        script = script.replace(placeholder, value)
    done = subprocess.run(
        [str(python), "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.stdout.startswith("ok ")
    _, schema_file, runtime_file = done.stdout.split()
    for installed in (schema_file, runtime_file):  # imported from the install, not from the source tree
        assert installed.startswith(str(env_dir)), installed
    assert sys.prefix != str(env_dir)
    # The runtime's commands work from the install: the conformance traces against the reference Agent.
    agent = [str(python), "-m", "acp_v2_runtime.reference_agent", "--db", "{tmp}/agent.db"]
    run = subprocess.run(
        [str(python), "-m", "acp_v2_runtime.conformance", "--", *agent],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
