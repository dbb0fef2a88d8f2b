"""JSON Schema checks, fast: a compiled validator answers "valid or not", jsonschema says what is wrong.

jsonschema follows the 2020-12 meta-schema's `$dynamicRef` chains in Python, a few milliseconds per type, and the
spec has hundreds of types, so these checks dominated loading and rendering (importing jsonschema alone costs a
twentieth of a second). jsonschema-rs, compiled, answers in microseconds. It decides the common case, a valid
value; only a value it rejects is walked again by jsonschema, whose error paths and messages the diagnostics are
made of, and whose verdict wins when the two disagree. So the fast answer may only ever be stricter, never more
lenient: tests/pipeline/test_schema_check.py checks that on the real spec and on broken copies of it.

Two places where the engines could differ are kept apart:
- Regular expressions. jsonschema runs `pattern` with Python's `re`, jsonschema-rs with an ECMA-262 engine. A schema
  goes the fast way only when each of its patterns is plain (literal characters, classes, groups, anchors and
  quantifiers, no escapes but `\\.`, `\\-`, `\\$` and `\\/`): on those the ECMA-262 reading is the same or stricter
  (`$` before a final newline, `.` before a line separator), so only its "valid" is taken; a schema without any
  pattern takes its answer both ways. The 2020-12 meta-schema's own patterns are plain.
- Formats. The meta-schema check asserts `regex` (as jsonschema's format checker did) with Python's `re` on both
  sides, since the generated code's patterns meet Python first; instance checks assert no format, as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema itself is imported only when a value is rejected; jsonschema-rs when a check runs
    import jsonschema_rs
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

Problem = tuple[tuple[str | int, ...], str]  # where in the schema (a path of keys and indexes), and what
DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Values the compiled validator cannot take in (a lone surrogate, say): jsonschema decides those.
_UNTRANSLATABLE = (ValueError, TypeError, OverflowError)


def problems(schema: Any) -> tuple[Problem, ...]:
    """Every way `schema` departs from JSON Schema 2020-12; empty when it is a valid schema."""
    if _is_valid(_fast_meta(), schema):
        return ()
    # Walk a copy with sorted keys, so that the problems come in one order whatever the order in the file.
    ordered = json.loads(json.dumps(schema, sort_keys=True))
    return tuple((tuple(error.absolute_path), _said(error)) for error in _full_meta().iter_errors(ordered))


# The values JSON Schema's `type` keyword takes: a wrong one is reported with this list, not the meta-schema's words.
JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


def _said(error: ValidationError) -> str:
    """The problem in our words where the meta-schema's would not help: a `type` that is no JSON type."""
    path = tuple(error.absolute_path)
    if path and path[-1] == "type":
        values = error.instance if isinstance(error.instance, list) else [error.instance]
        wrong = [v for v in values if isinstance(v, str) and v not in JSON_TYPES]
        if wrong:
            hint = did_you_mean(wrong[0], JSON_TYPES, cutoff=0.6)
            return f"{wrong[0]!r} is not a JSON type{hint}; the types are {', '.join(JSON_TYPES)}"
    return error.message


def did_you_mean(name: str, known: Any, cutoff: float = 0.8) -> str:
    """` (did you mean 'X'?)` for the closest of `known` to a misspelt `name`, or nothing when none is close (a
    name is close to a misspelling of itself, not to a shorter name it starts with)."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close else ""


def best_error(schema: Any) -> ValidationError | None:
    """The most relevant problem of `schema` (jsonschema's best match), or None when it is a valid schema."""
    if _is_valid(_fast_meta(), schema):
        return None
    from jsonschema.exceptions import best_match

    return best_match(_full_meta().iter_errors(schema))


class Validator:
    """Validates values against one schema (a valid one, dialect 2020-12), with jsonschema's verdicts and errors.

    A schema without patterns goes by the compiled answer both ways (the two engines implement the same keywords;
    tests/pipeline/test_schema_check.py holds them to it); with plain patterns only a "valid" is taken from it;
    any other schema is jsonschema's alone.
    """

    def __init__(self, schema: dict[str, Any], compiled: tuple[jsonschema_rs.Validator | None, bool] | None = None):
        self.schema = schema
        # The compiled validator (None: jsonschema alone decides), and whether its "not valid" is final too.
        self._fast, self._final = compiled if compiled is not None else _compiled(schema, _regexes(schema))
        self._full: Draft202012Validator | None = None

    def is_valid(self, instance: Any) -> bool:
        """Whether `instance` is valid."""
        if self._fast is not None:
            try:
                if self._fast.is_valid(instance):
                    return True
                if self._final:
                    return False
            except _UNTRANSLATABLE:  # not a verdict: jsonschema decides
                pass
        return self.full().is_valid(instance)

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        """jsonschema's errors for `instance`; none when it is valid."""
        if self._fast is not None and _is_valid(self._fast, instance):
            return iter(())
        return self.full().iter_errors(instance)

    def full(self) -> Draft202012Validator:
        """The jsonschema validator for the schema, made on first need."""
        if self._full is None:
            from jsonschema import Draft202012Validator

            self._full = Draft202012Validator(self.schema)
        return self._full


class TypeBundle:
    """Validators for the named types of one set of `$defs`, each resolving `$ref`s among all of them.

    The compiled validators share one registry holding the bundle, so each compiles only what its type reaches
    (compiling the whole bundle once per type cost more than jsonschema's checks it replaced).
    """

    URI = "urn:acp-v2-toolchain:types"

    def __init__(self, defs: dict[str, Any]) -> None:
        self.root = {"$schema": DIALECT, "$defs": defs}
        self._regexes = _regexes(defs)
        self._registry: jsonschema_rs.Registry | None = None
        if self._regexes is not None:
            try:
                self._registry = _rs().Registry([(self.URI, {**self.root, "$id": self.URI})])
            except _UNTRANSLATABLE:
                self._registry = None
        self._validators: dict[str, Validator] = {}

    def validator(self, name: str) -> Validator:
        """The validator of the type `name` (made once)."""
        if name not in self._validators:
            ref = f"#/$defs/{name}"
            compiled: tuple[jsonschema_rs.Validator | None, bool] = (None, False)
            if self._registry is not None and self._regexes is not None:
                compiled = _compiled({"$schema": DIALECT, "$ref": self.URI + ref}, self._regexes, self._registry)
            self._validators[name] = Validator({**self.root, "$ref": ref}, compiled)
        return self._validators[name]


def _compiled(
    schema: dict[str, Any], regexes: list[str] | None, registry: jsonschema_rs.Registry | None = None
) -> tuple[jsonschema_rs.Validator | None, bool]:
    """The compiled validator of `schema` and whether its "not valid" is final; (None, False) for jsonschema."""
    if regexes is None:
        return None, False
    try:
        if registry is None:
            return _rs().validator_for(schema), not regexes
        return _rs().validator_for(schema, registry=registry), not regexes
    except _UNTRANSLATABLE:  # a schema it cannot compile
        return None, False


def _is_valid(validator: jsonschema_rs.Validator, value: Any) -> bool:
    try:
        return validator.is_valid(value)
    except _UNTRANSLATABLE:
        return False  # not a verdict: jsonschema decides


_PLAIN_ESCAPES = re.compile(r"\\[.$/-]")
_ENGINE_SPECIFIC = ("(?", "[:", "&&", "--", "~~")  # group syntax, POSIX classes, class set operations


def _plain(pattern: str) -> bool:
    """Whether both engines read `pattern` alike, or ECMA-262 more strictly (see the module docstring)."""
    if any(token in pattern for token in _ENGINE_SPECIFIC):
        return False
    return "\\" not in _PLAIN_ESCAPES.sub("", pattern)


def _regexes(schema: Any) -> list[str] | None:
    """The patterns in `schema` (`pattern` values, `patternProperties` names), or None when one is not plain or
    the schema has `multipleOf` (floating-point arithmetic in one engine, exact in the other)."""
    found: list[str] = []
    todo = [schema]
    while todo:
        value = todo.pop()
        if isinstance(value, list):
            todo.extend(value)
        elif isinstance(value, dict):
            if "multipleOf" in value:
                return None
            if isinstance(value.get("pattern"), str):
                found.append(value["pattern"])
            if isinstance(value.get("patternProperties"), dict):
                found.extend(value["patternProperties"])
            todo.extend(value.values())
    return found if all(_plain(pattern) for pattern in found) else None


def _is_python_regex(value: object) -> bool:
    if not isinstance(value, str):
        return True  # a format applies to strings only
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _rs() -> Any:
    """jsonschema-rs, imported on first use: with its own imports it costs about 30 ms, which a run whose checks
    are all answered from the cache (an incremental run) need not pay."""
    import jsonschema_rs

    return jsonschema_rs


@cache
def _fast_meta() -> jsonschema_rs.Validator:
    # jsonschema-rs carries the 2020-12 meta-schema itself: no download, no jsonschema import.
    return _rs().validator_for(
        {"$schema": DIALECT, "$ref": DIALECT}, validate_formats=True, formats={"regex": _is_python_regex}
    )


@cache
def _full_meta() -> Draft202012Validator:
    from jsonschema import Draft202012Validator, FormatChecker

    formats = FormatChecker(formats=())
    formats.checks("regex")(_is_python_regex)
    return Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=formats)
