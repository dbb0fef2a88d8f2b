"""Checking JSON Schemas against the 2020-12 meta-schema, fast.

jsonschema follows the meta-schema's `$dynamicRef` chains in Python, a few milliseconds per type, and the spec
has hundreds of types, so these checks dominated loading and rendering. jsonschema-rs, compiled, answers "valid or
not" in microseconds. It decides the common case, a valid schema; only a schema it rejects is walked again by
jsonschema, whose error paths and messages the diagnostics are made of, and whose verdict wins when the two
disagree. tests/pipeline/test_schema_check.py checks that the fast answer never accepts what jsonschema rejects.

The meta-schema's own patterns (`$anchor`, `$dynamicAnchor`) use ASCII classes only, which Python's `re` and the
compiled validator's ECMA-262 engine read alike.

Formats are asserted, as jsonschema's format checker would: of the formats the meta-schema names, that checker
knows only `regex`, which both validators here check with Python's `re` (the engine the generated code's
patterns meet first; ECMA-262 syntax such as `(?<name>…)` is not Python's).
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match

Problem = tuple[tuple[str | int, ...], str]  # where in the schema (a path of keys and indexes), and what


def problems(schema: Any) -> tuple[Problem, ...]:
    """Every way `schema` departs from JSON Schema 2020-12; empty when it is a valid schema."""
    if _fast().is_valid(schema):
        return ()
    # Walk a copy with sorted keys, so that the problems come in one order whatever the order in the file.
    ordered = json.loads(json.dumps(schema, sort_keys=True))
    return tuple((tuple(error.absolute_path), error.message) for error in _full().iter_errors(ordered))


def best_error(schema: Any) -> ValidationError | None:
    """The most relevant problem of `schema` (jsonschema's best match), or None when it is a valid schema."""
    if _fast().is_valid(schema):
        return None
    return best_match(_full().iter_errors(schema))


def _is_python_regex(value: object) -> bool:
    if not isinstance(value, str):
        return True  # a format applies to strings only
    try:
        re.compile(value)
    except re.error:
        return False
    return True


@cache
def _fast() -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(
        Draft202012Validator.META_SCHEMA, validate_formats=True, formats={"regex": _is_python_regex}
    )


@cache
def _full() -> Draft202012Validator:
    formats = FormatChecker(formats=())
    formats.checks("regex")(_is_python_regex)
    return Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=formats)
