"""The built site carries the Compatibility rules page (from the registry) and the Changes page (from git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.compat_rules import RULES


@pytest.mark.slow
def test_compat_pages_are_on_the_site(built_site: Path) -> None:
    rules = (built_site / "reference" / "compatibility-rules" / "index.html").read_text(encoding="utf-8")
    for rule in RULES:
        assert f'id="{rule.id}"' in rules, f"rule {rule.id} has no docs entry"
    changes = (built_site / "reference" / "changes" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changes
    # This repository has no release tag: the page shows the comparison `make compat` makes instead.
    assert "the baseline is @agentclientprotocol/sdk@2.4.0 schema/v2/schema.json" in changes
    assert "Compatible (" in changes and "Breaking (" not in changes
    assert 'href="../compatibility-rules/"' in changes or "compatibility-rules/" in changes
