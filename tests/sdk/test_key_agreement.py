"""Property test: every way this project checks `PromptRequest.idempotencyKey` agrees, on arbitrary JSON.

The checkers: jsonschema and fastjsonschema on the generated schema, the generated pydantic model (from Python
values and from JSON text), and the generated `validate_idempotency_key` (where `null` and an omitted field mean
"no key"). Each run draws at least 10,000 values; a single disagreement fails it.
"""

from __future__ import annotations

import json
from typing import Any

import fastjsonschema
from acp_v2_schema import load_schema, retry
from acp_v2_schema.models import PromptRequest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

DRAWS = 10_000
OMIT = object()
BUNDLE = load_schema()
SCHEMA = {"$schema": BUNDLE["$schema"], "$defs": BUNDLE["$defs"], "$ref": "#/$defs/PromptRequest"}
SCHEMA_VALIDATOR = Draft202012Validator(SCHEMA)
FAST_VALIDATE = fastjsonschema.compile(SCHEMA)
MAX = retry.IDEMPOTENCY_KEY_MAX_LENGTH

# Well-formed Unicode only: lone surrogates are covered by the vectors and test_python.py, where the schema is known
# to count them (see loneSurrogates in generated/conformance/idempotency-key.json).
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)
ALPHABETS = st.sampled_from(
    [
        st.characters(max_codepoint=0x7F),
        st.characters(min_codepoint=0x80, max_codepoint=0x7FF),
        st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=["Cs"]),
        st.characters(min_codepoint=0x10000),
        st.characters(exclude_categories=["Cs"]),
    ]
)
LENGTHS = st.integers(0, 3) | st.integers(MAX - 3, MAX + 3) | st.integers(MAX // 2 - 2, MAX // 2 + 2)


@st.composite
def near_limits(draw: st.DrawFn) -> str:
    """A string whose length in code points is near 0, half the maximum or the maximum, where counting mistakes
    show: a few random characters around a run of one repeated character (drawing every one would be slow)."""
    length = draw(LENGTHS)
    alphabet = draw(ALPHABETS)
    edges = draw(st.text(alphabet=alphabet, max_size=min(length, 8)))
    run = draw(alphabet) * (length - len(edges))
    cut = draw(st.integers(0, len(edges)))
    return edges[:cut] + run + edges[cut:]


# Scalars on their own as well as inside containers, since the recursive strategy mostly draws containers.
KEYS = st.one_of(SCALARS, JSON_VALUES, st.text(), near_limits(), near_limits(), st.sampled_from([OMIT, None]))


def verdicts(key: Any) -> dict[str, bool]:
    """Whether each checker accepts a PromptRequest carrying `key` (or none, for OMIT)."""
    params: dict[str, Any] = {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}]}
    if key is not OMIT:
        params["idempotencyKey"] = key
    out = {"jsonschema": SCHEMA_VALIDATOR.is_valid(params)}
    try:
        FAST_VALIDATE(params)
        out["fastjsonschema"] = True
    except fastjsonschema.JsonSchemaValueException:
        out["fastjsonschema"] = False
    for name, check in (
        ("pydantic", lambda: PromptRequest.model_validate(params)),
        ("pydantic-json", lambda: PromptRequest.model_validate_json(json.dumps(params))),
    ):
        try:
            check()
            out[name] = True
        except ValidationError:
            out[name] = False
    out["validator"] = key is OMIT or key is None or retry.is_valid_idempotency_key(key)
    return out


def test_all_checkers_agree_on_arbitrary_values() -> None:
    draws: list[bool] = []
    disagreements: list[tuple[Any, dict[str, bool]]] = []

    @settings(
        max_examples=DRAWS,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(KEYS)
    def check(key: Any) -> None:
        found = verdicts(key)
        draws.append(found["validator"])
        if len(set(found.values())) != 1:
            disagreements.append((key, found))
            raise AssertionError(f"checkers disagree on {key!r}: {found}")

    check()
    assert disagreements == []
    assert len(draws) >= DRAWS, f"only {len(draws)} draws ran"
    accepted = sum(draws)
    assert min(accepted, len(draws) - accepted) >= len(draws) // 10, f"{accepted} of {len(draws)} accepted: lopsided"
