"""Differences in behaviour from what ACP's docs say (spec/upstream-differences.yaml, `behaviours`) reach the
Differences page, and the one about JSON-RPC batches holds: we refuse a batch, as the TypeScript SDK 2.4.0 does."""

from __future__ import annotations

import subprocess
import sys

from generator import paths
from generator.pipeline import load_spec
from tests.support import ROOT


def test_each_behaviour_is_on_the_differences_page() -> None:
    spec = load_spec(ROOT / "spec", ROOT)
    assert spec.upstream_behaviours
    page = (ROOT / paths.DIFFERENCES_PAGE).read_text(encoding="utf-8")
    for behaviour in spec.upstream_behaviours:
        assert f"### {behaviour.subject}\n" in page
        assert behaviour.reason in page


def test_the_validator_refuses_a_batch_as_the_listing_says() -> None:
    spec = load_spec(ROOT / "spec", ROOT)
    (batches,) = [b for b in spec.upstream_behaviours if b.subject == "JSON-RPC batches"]
    assert "-32600" in batches.sdk and "-32600" in batches.ours
    line = '[{"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}]\n'
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate"], input=line, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a batch (a JSON array): refused as ACP's TypeScript SDK refuses it (-32600)" in done.stdout
