"""The conformance runner against the reference Agent: every trace passes, and key-ignoring mode fails the
traces that depend on keys (a runner that cannot fail proves nothing)."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_client import ROOT, agent_command, environment
from generator import paths

TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))


def run_conformance(tmp_path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "5", "--"]
    return subprocess.run(
        [*command, *agent_command(tmp_path / "agent.db", *extra)],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=240,
        check=False,
    )


def verdicts(output: str) -> dict[str, str]:
    lines = [line.split() for line in output.splitlines() if line[:4] in ("PASS", "FAIL")]
    return {words[1].rstrip(":"): words[0] for words in lines}


def test_trace_data_covers_design_section_5():
    ids = {t["id"] for t in TRACES["traces"]}
    assert len(ids) == len(TRACES["traces"]) == 11
    assert sum(t["origin"] == "proposal" for t in TRACES["traces"]) == 7


def test_reference_agent_passes_every_trace(tmp_path):
    done = run_conformance(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done.stdout).values()) == {"PASS"}
    count = len(TRACES["traces"])
    assert done.stdout.splitlines()[-1] == f"{count} passed, 0 failed, of {count} traces"  # the summary
    assert len(verdicts(done.stdout)) == len(TRACES["traces"])


def test_key_ignoring_agent_fails_the_key_dependent_traces(tmp_path):
    done = run_conformance(tmp_path, "--ignore-keys")
    assert done.returncode == 1
    expected = {t["id"]: "FAIL" if t["keyDependent"] else "PASS" for t in TRACES["traces"]}
    assert verdicts(done.stdout) == expected
