"""The conformance runner against the reference Agent: every trace passes, and key-ignoring mode fails the
traces that depend on keys (a runner that cannot fail proves nothing)."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_client import ROOT, agent_command, environment
from generator import paths

TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))
HANDSHAKE_NEEDS = [name for name, need in TRACES["needs"].items() if need["from"] == "handshake"]


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
    lines = [line.split() for line in output.splitlines() if line[:4] in ("PASS", "FAIL", "SKIP")]
    return {words[1].rstrip(":"): words[0] for words in lines}


def test_trace_data_covers_design_section_5():
    ids = {t["id"] for t in TRACES["traces"]}
    assert len(ids) == len(TRACES["traces"])  # how many is the spec's business; each id once
    # The proposal names seven traces (DESIGN section 5); the rest are the project's additions.
    assert sum(t["origin"] == "proposal" for t in TRACES["traces"]) == 7


def test_reference_agent_passes_every_trace(tmp_path):
    done = run_conformance(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done.stdout).values()) == {"PASS"}
    count = len(TRACES["traces"])
    assert done.stdout.splitlines()[-1] == f"{count} passed, 0 failed, 0 skipped, of {count} traces"  # the summary
    assert len(verdicts(done.stdout)) == len(TRACES["traces"])


def test_key_ignoring_agent_fails_the_key_dependent_traces(tmp_path):
    done = run_conformance(tmp_path, "--ignore-keys")
    assert done.returncode == 1
    expected = {t["id"]: "FAIL" if t["keyDependent"] else "PASS" for t in TRACES["traces"]}
    assert verdicts(done.stdout) == expected


def test_agent_offering_nothing_skips_the_traces_that_need_an_offer_naming_it(tmp_path):
    done = run_conformance(tmp_path, "--offers", "")
    assert done.returncode == 0, done.stdout + done.stderr  # a skip is not a failure
    by_id = {t["id"]: t for t in TRACES["traces"]}
    needy = {i for i, t in by_id.items() if set(HANDSHAKE_NEEDS) & set(t["needs"])}
    assert needy and verdicts(done.stdout) == {i: "SKIP" if i in needy else "PASS" for i in by_id}
    for line in done.stdout.splitlines():
        if line.startswith("SKIP"):
            trace = by_id[line.split()[1].rstrip(":")]
            missing = [n for n in trace["needs"] if TRACES["needs"][n]["from"] == "handshake"]
            assert f"needs {', '.join(missing)}, which the Agent does not offer" in line, line
            assert "offers lists nothing the runner knows" in line, line
    count = len(by_id)
    summary = f"{count - len(needy)} passed, 0 failed, {len(needy)} skipped, of {count} traces"
    assert done.stdout.splitlines()[-1] == summary


def test_agent_offering_some_hooks_runs_exactly_the_traces_it_can(tmp_path):
    some = HANDSHAKE_NEEDS[::2]  # every other offer the reference Agent could make
    done = run_conformance(tmp_path, "--offers", ",".join(some), "--ignore-keys")
    for trace in TRACES["traces"]:
        offered = set(some) | {n for n, need in TRACES["needs"].items() if need["from"] == "protocol"}
        expected = "SKIP" if set(trace["needs"]) - offered else "FAIL" if trace["keyDependent"] else "PASS"
        assert verdicts(done.stdout)[trace["id"]] == expected, done.stdout
    assert set(verdicts(done.stdout).values()) == {"PASS", "FAIL", "SKIP"}  # all three outcomes are exercised
