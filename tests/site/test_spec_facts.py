"""Hand-written pages state the spec's bounds through `{{ spec.Type.keyword }}`, never as a number of their own.

A maintainer who changes the key's maximum regenerates, and the prose of every page follows: the hook fills each
fact from the generated schema at build time, and a page that writes the bound out by hand is caught here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

import docs_hooks
from generator import paths

from .conftest import ROOT

KEY = "IdempotencyKey"


def _key() -> dict:
    return json.loads((ROOT / paths.SCHEMA_UNSTABLE).read_text(encoding="utf-8"))["$defs"][KEY]


def _hand_written() -> list[Path]:
    reference = ROOT / paths.REFERENCE
    return [p for p in sorted((ROOT / "site").rglob("*.md")) if reference not in p.parents]


def test_a_fact_is_filled_from_the_generated_schema():
    key = _key()
    text = "from {{ spec.IdempotencyKey.minLength }} to {{spec.IdempotencyKey.maxLength}} code points"
    assert (
        docs_hooks.fill_spec_facts(text, ROOT, "page.md")
        == f"from {key['minLength']} to {key['maxLength']} code points"
    )


def test_an_unknown_fact_fails_the_build_naming_the_page_and_each_fact():
    text = "{{ spec.IdempotencyKey.maxLenght }} and {{ spec.NoSuchType.maxLength }}"
    with pytest.raises(PluginError) as caught:
        docs_hooks.fill_spec_facts(text, ROOT, "guide.md")
    message = str(caught.value)
    assert message.startswith("guide.md: ")
    assert "spec.IdempotencyKey.maxLenght" in message and "spec.NoSuchType.maxLength" in message


def test_no_hand_written_page_writes_the_keys_bounds_out():
    """The key's maximum appears in hand-written prose only through the hook (its minimum, 1, is too common a
    number to look for)."""
    bound = re.compile(rf"(?<![\w.-]){_key()['maxLength']}(?![\w.-])")
    found = [
        f"{page.relative_to(ROOT)}:{n}"
        for page in _hand_written()
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if bound.search(line)
    ]
    assert found == [], f"write {{{{ spec.{KEY}.maxLength }}}} instead: {found}"


def test_the_built_key_page_states_the_schemas_bounds(built_site: Path):
    key = _key()
    page = (built_site / "idempotency-key" / "index.html").read_text(encoding="utf-8")
    assert f"{key['minLength']} to {key['maxLength']} characters" in page
    assert "{{" not in page
