"""The conformance runner against a keyed Agent built on the real TypeScript SDK's AgentApp (keyed_agent.ts).

The runner judges only what the protocol defines: the Agent offering nothing beyond the protocol passes every
trace that needs nothing more and skips each of the others, naming what it lacks; offering the hooks and stored
sessions, it passes every trace; with keys ignored it fails exactly the key-dependent traces, each failure naming
the messageId expected and the one it got.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator import paths
from tests.interop.conftest import environment, verdicts
from tests.support import ROOT

TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))
BY_ID = {trace["id"]: trace for trace in TRACES["traces"]}
OFFERED_BY_HANDSHAKE = sorted(name for name, need in TRACES["needs"].items() if need["from"] == "handshake")


AGENTS = {  # the keyed SDK Agent's arguments, per run
    "bare": (),
    "full": ("--store", "{tmp}/store.json", "--offers", ",".join(OFFERED_BY_HANDSHAKE)),
    "keyless": ("--store", "{tmp}/store.json", "--offers", ",".join(OFFERED_BY_HANDSHAKE), "--ignore-keys"),
}


@pytest.fixture(scope="module")
def runs(built: Path, node: str) -> dict[str, dict[str, tuple[str, str]]]:
    """The runner against each form of the Agent, side by side (each its own process); the verdicts of each."""
    runner = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "10", "--"]
    started = {
        name: subprocess.Popen(
            [*runner, node, str(built / "keyed_agent.js"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
        )
        for name, args in AGENTS.items()
    }
    found = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=240)
        assert "Traceback" not in out + err and err == "", err
        found[name] = verdicts(out)
        assert set(found[name]) == set(BY_ID), out
        failed = sum(v == "FAIL" for v, _ in found[name].values())
        assert process.returncode == (1 if failed else 0), out
    return found


def test_sdk_agent_offering_nothing_passes_what_it_can_and_skips_the_rest_naming_why(runs):
    found = runs["bare"]
    for trace_id, (verdict, line) in found.items():
        lacking = [n for n in BY_ID[trace_id]["needs"] if n in OFFERED_BY_HANDSHAKE]
        if lacking:
            assert verdict == "SKIP", line
            assert f"needs {', '.join(lacking)}, which the Agent does not offer" in line, line
        else:
            assert verdict == "PASS", line
    assert {v for v, _ in found.values()} == {"PASS", "SKIP"}  # both kinds occur, so the split is tested


def test_sdk_agent_with_hooks_and_a_store_passes_every_trace(runs):
    found = runs["full"]
    assert {trace_id: v for trace_id, (v, _) in found.items()} == dict.fromkeys(BY_ID, "PASS")


def test_sdk_agent_ignoring_keys_fails_exactly_the_keyed_traces_naming_the_message_ids(runs):
    found = runs["keyless"]
    expected = {trace_id: "FAIL" if t["keyDependent"] else "PASS" for trace_id, t in BY_ID.items()}
    assert {trace_id: v for trace_id, (v, _) in found.items()} == expected
    for verdict, line in found.values():
        if verdict == "FAIL":
            assert "got messageId 'msg_" in line or "got a result with messageId 'msg_" in line, line
            assert "expected messageId 'msg_" in line or "expected error -32" in line, line
            assert "nothing within" not in line, line  # the Agent answered; the answer was wrong
