"""Checking, first: each spec file against its meta-schema in spec/meta/, reporting every error."""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic
from ..read.loader import Document
from . import schema_check

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# jsonschema keyword -> our stable diagnostic code
_CODES = {
    "required": "missing-field",
    "additionalProperties": "unknown-field",
    "type": "wrong-type",
    "enum": "invalid-value",
    "const": "invalid-value",
    "pattern": "invalid-format",
    "propertyNames": "invalid-format",
    "minLength": "empty-value",
    "minItems": "empty-value",
    "minProperties": "empty-value",
}


MetaSchema = schema_check.Validator  # compiled for the common case, a sound file; jsonschema for the diagnostics


@cache
def load_meta_schema(data: bytes) -> MetaSchema:
    """A validator for the meta-schema in `data`; ValueError when it is not JSON or not valid JSON Schema."""
    try:
        schema = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"the meta-schema is not valid JSON: {exc}") from None
    error = schema_check.best_error(schema)
    if error is not None:
        raise ValueError(f"the meta-schema is not valid JSON Schema 2020-12: {error.message}")
    return schema_check.Validator(schema)


def check_structure(doc: Document, meta: MetaSchema) -> list[Diagnostic]:
    """Every way `doc` departs from the meta-schema `meta`."""
    out: list[Diagnostic] = []
    for error in meta.iter_errors(doc.data):
        out.extend(_diagnose(doc, error))
    return out


def _diagnose(doc: Document, error: ValidationError) -> list[Diagnostic]:
    path = tuple(error.absolute_path)
    code = _CODES.get(str(error.validator), "invalid-structure")
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extras = sorted(k for k in error.instance if k not in allowed)
        hint = f"; allowed here: {', '.join(sorted(allowed))}" if allowed else ""
        return [Diagnostic(doc.locate((*path, k), key=True), code, f"unknown field {k!r}{hint}") for k in extras]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return [Diagnostic(doc.locate(path), code, f"missing required field {missing!r}")]
    if "propertyNames" in error.schema_path:
        # jsonschema reports a bad name at the mapping that holds it; point at the key itself instead
        name = error.instance
        where = doc.locate((*path, name), key=True)
        return [Diagnostic(where, "invalid-name", f"name {name!r} does not match {error.validator_value}")]
    return [Diagnostic(doc.locate(path), code, _message(error))]


def _message(error: ValidationError) -> str:
    value: Any = error.instance
    shown = repr(value) if not isinstance(value, (dict, list)) else _json_kind(value)
    if error.validator == "type":
        found = _json_kind(value) if isinstance(value, (dict, list)) else f"{_json_kind(value)} {shown}"
        return f"expected {_kinds(error.validator_value)}, found {found}"
    if error.validator == "enum":
        return f"{shown} is not one of: {', '.join(map(str, error.validator_value))}"
    if error.validator == "pattern":
        return f"{shown} does not match the pattern {error.validator_value}"
    if error.validator in ("minLength", "minItems", "minProperties"):
        return "must not be empty"
    return error.message


def _kinds(value: Any) -> str:
    kinds = value if isinstance(value, list) else [value]
    return " or ".join({"object": "a mapping", "array": "a list", "string": "a string"}.get(k, k) for k in kinds)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )
