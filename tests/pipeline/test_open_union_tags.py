"""The fallback variant's tag type: any string but the known tags."""

from __future__ import annotations

from typing import Annotated

import pytest
from acp_v2_schema.models._open_unions import OtherTag
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

# Tags drawn from a small alphabet (so that prefixes and near misses are common), with metacharacters and non-ASCII
# text among them.
CHARS = st.sampled_from([*"ab_-.]^\\[$*\n", "é", "\U0001f600"])
TAGS = st.text(CHARS, max_size=5)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sets(TAGS, max_size=6), st.lists(TAGS, max_size=8))
def test_every_string_but_the_known_tags_is_accepted(known: set[str], others: list[str]) -> None:
    tag = TypeAdapter(Annotated[str, OtherTag(sorted(known))])
    for value in [*known, *others]:
        expected = value not in known
        try:  # from Python and from JSON
            tag.validate_python(value)
            tag.validate_json(TypeAdapter(str).dump_json(value))
            accepted = True
        except ValidationError as exc:
            assert exc.errors()[0]["type"] == "known_tag"
            accepted = False
        assert accepted is expected, (sorted(known), value)


def test_no_known_tags_accepts_every_string() -> None:
    tag = TypeAdapter(Annotated[str, OtherTag(())])
    for value in ("", "x", "\n"):
        assert tag.validate_python(value) == value
    with pytest.raises(ValidationError):
        tag.validate_python(1)
