"""The registry of diagnostic codes: every code the validator can print, defined once with what it means.

Codes are part of the interface (maintainers grep for them, CI logs quote them), so each one is listed here with a
one-line description; `Diagnostic` refuses a code that is not registered, a test scans the generator for codes
that are used but not listed, and the maintainers' page of codes is rendered from this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    """One diagnostic code: its stable name, the stage that reports it, and a one-line description."""

    name: str
    stage: str
    description: str


# Stages, in pipeline order; the docs page groups the codes by them.
STAGES = {
    "files": "Reading spec files",
    "yaml": "Parsing YAML",
    "structure": "Structure (each file against its meta-schema in spec/meta/)",
    "vocabulary": "The retry-class vocabulary",
    "types": "Types",
    "methods": "Methods",
    "names": "Names that become files and symbols",
    "examples": "Worked examples",
    "conformance": "Conformance traces",
    "upstream": "Upstream differences",
    "accepted": "Accepted breaking changes",
    "baseline": "The retry-class baseline (spec/retry-class-baseline.yaml)",
    "diff": "Comparing two versions (`python -m generator diff`)",
}

_TABLE: tuple[Code, ...] = (
    # -- files
    Code("missing-file", "files", "a file the spec needs (a meta-schema, the vocabulary) does not exist"),
    Code("not-a-file", "files", "a spec path is a directory, a device, a FIFO or a symlink that leads nowhere"),
    Code("outside-spec", "files", "a symlink in the spec points outside the spec directory"),
    Code("file-too-large", "files", "a spec file is larger than the size limit"),
    Code("unreadable-file", "files", "a spec file exists but cannot be read"),
    Code("not-utf8", "files", "a spec file is not valid UTF-8"),
    Code("invisible-character", "files", "a control, format or bidirectional character written literally in a file"),
    Code("invalid-meta-schema", "files", "a meta-schema in spec/meta/ is not valid JSON or not valid JSON Schema"),
    Code("no-methods", "files", "the spec defines no methods at all"),
    # -- yaml
    Code("yaml-syntax", "yaml", "the file is not valid YAML"),
    Code("empty-file", "yaml", "the file holds no YAML document"),
    Code("unsupported-yaml", "yaml", "a YAML feature JSON has no use for: merge keys, tags, complex keys, streams"),
    Code("duplicate-key", "yaml", "a mapping has the same key twice"),
    Code("too-deep", "yaml", "values are nested deeper than the nesting limit"),
    Code("alias-cycle", "yaml", "an alias refers to the collection that contains it"),
    Code("alias-expansion", "yaml", "aliases expand to more values than the expansion limit (an alias bomb)"),
    Code("invalid-value", "yaml", "a value JSON cannot hold (a date, a non-finite or huge number), or not allowed"),
    # -- structure
    Code("missing-field", "structure", "a required field is missing"),
    Code("unknown-field", "structure", "a field the meta-schema does not define"),
    Code("wrong-type", "structure", "a value has the wrong JSON type"),
    Code("invalid-format", "structure", "a string does not match the pattern the meta-schema requires"),
    Code("invalid-name", "structure", "a mapping key does not match the pattern for names"),
    Code("empty-value", "structure", "a string, list or mapping that must not be empty is empty"),
    Code("invalid-structure", "structure", "any other departure from the meta-schema"),
    # -- vocabulary
    Code("duplicate-name", "vocabulary", "two failure kinds, decisions or classes share a name"),
    Code("unknown-decision", "vocabulary", "a decision the generators do not understand, or one not declared"),
    Code("missing-decision", "vocabulary", "a class gives no decision for some failure kind"),
    Code("unknown-failure-kind", "vocabulary", "a class gives a decision for a failure kind that is not declared"),
    Code("decided-by-error-code", "vocabulary", "a class decides a failure kind that the error-code table decides"),
    Code("missing-error-codes", "vocabulary", "a failure kind is decided by error code, but errorCodes is missing"),
    Code("duplicate-error-code", "vocabulary", "the error-code table has two rows for one code"),
    Code("resend-cannot-help", "vocabulary", "a code a resend cannot help has a class that does not decide never"),
    Code("error-code-mismatch", "vocabulary", "the error-code table does not list exactly the ErrorCode type's codes"),
    # -- types
    Code("duplicate-type", "types", "two type files define the same type name"),
    Code("invalid-type-schema", "types", "a type is not valid JSON Schema 2020-12"),
    Code("boolean-subschema", "types", "`true` or `false` stands where a type needs a schema it can describe"),
    Code("bad-ref", "types", "a $ref that is not of the form #/$defs/TypeName"),
    Code("unknown-type", "types", "a $ref, params or result names a type that is not defined"),
    Code("ref-cycle", "types", "types that are nothing but $refs to each other, so no value can have them"),
    Code("invalid-envelope", "types", "an x-envelope declaration names no known message kind or sender"),
    Code(
        "invalid-envelope-order",
        "types",
        "an envelope's order repeats or invents a method, or a response envelope has one",
    ),
    Code("fallback-name-taken", "types", "a type takes the name generated for the fallback variant of an open union"),
    Code(
        "invalid-inline-variant", "types", "x-inline in a discriminator lists a tag the union's mapping does not have"
    ),
    Code("class-name-taken", "types", "a type takes the class name the models give a named union branch"),
    Code("invalid-refinement", "types", "x-refinedBy names no property of its type, or no branch fixes that property"),
    Code(
        "invalid-lenience",
        "types",
        "an x-deserialize-* annotation off a property, or where it cannot work (skipping items of a non-array, ...)",
    ),
    Code("retry-class-enum-mismatch", "types", "the RetryClass enum does not list the classes in order"),
    Code("misplaced-stability", "types", "x-stability stands somewhere other than on a type or one of its properties"),
    Code("unstable-in-stable", "types", "a stable method or type uses an unstable type where the stable file keeps it"),
    Code("stable-type-unreached", "types", "a stable type that only unstable types, properties or methods use"),
    # -- methods
    Code("duplicate-method", "methods", "two files define the same (method, kind) entry"),
    Code("extension-method", "methods", "a method starting with `_` (an extension) is in the spec"),
    Code("unknown-class", "methods", "a retry class that the vocabulary does not define"),
    Code("missing-key-param", "methods", "a keyed entry does not name its idempotency key parameter"),
    Code("key-param-not-keyed", "methods", "an entry that is not keyed names a key parameter"),
    Code("bad-key-param", "methods", "the key parameter is not an optional, nullable IdempotencyKey property"),
    Code("notification-with-result", "methods", "a notification names a result type"),
    Code("missing-variant-field", "methods", "an entry lists variants but no field that selects them"),
    Code("duplicate-variant", "methods", "a variant is listed twice"),
    Code("variant-without-class", "methods", "a variant has no retry class"),
    Code("variant-class-mismatch", "methods", "an entry's class is not the least forgiving class of its variants"),
    Code("variant-stability-mismatch", "methods", "a variant's stability is not that of the type its name selects"),
    # -- names
    Code("name-collision", "names", "two spec names become the same file name or symbol in some output"),
    Code("reserved-name", "names", "a spec name becomes a reserved word or a taken symbol in some output language"),
    # -- examples
    Code("missing-example", "examples", "an entry has no worked example while the spec has examples for others"),
    Code("unknown-example", "examples", "an example file is not named after any method entry's slug"),
    Code("example-method-mismatch", "examples", "an example message names another method"),
    Code("example-message-shape", "examples", "an example message is not a well-formed request, response or notice"),
    Code("example-duplicate-id", "examples", "two attempts in an example share a JSON-RPC id"),
    Code("example-unknown-id", "examples", "an example response answers no request sent before it"),
    Code("example-invalid-params", "examples", "example params do not match the entry's params type"),
    Code("example-invalid-result", "examples", "an example result does not match the entry's result type"),
    Code("example-key-mismatch", "examples", "attempts of a keyed example do not all carry the same key"),
    # -- conformance
    Code("trace-origin", "conformance", "a trace's origin is not one of the known origins"),
    Code("duplicate-trace", "conformance", "two traces share an id"),
    Code("step-kind", "conformance", "a step or a stepKinds entry names no step kind the runner knows"),
    Code("step-field", "conformance", "a step lacks a field its kind needs, or has the wrong shape"),
    Code("step-undocumented", "conformance", "a step kind the runner knows has no description in stepKinds"),
    Code("unknown-method", "conformance", "a step sends a method the spec does not define"),
    Code("unknown-request", "conformance", "a step expects the answer to a request not sent before it"),
    Code("bad-repeat", "conformance", "a {$repeat, times} value is malformed or expands beyond the limit"),
    Code("bad-json", "conformance", "a {$json: TEXT} value whose TEXT is not one JSON value"),
    Code("unknown-need", "conformance", "a trace needs a name that the `needs` vocabulary does not define"),
    Code(
        "undeclared-need",
        "conformance",
        "a trace uses a hook, a second process or replay without listing it in `needs`",
    ),
    # -- upstream
    Code("duplicate-difference", "upstream", "spec/upstream-differences.yaml lists the same difference twice"),
    # -- accepted
    Code("unknown-rule", "accepted", "an accepted break names a rule id the diff does not have"),
    Code("not-a-breaking-rule", "accepted", "an accepted break names a rule that never breaks anything"),
    Code("duplicate-acceptance", "accepted", "the same break (rule, subject, release) is accepted twice"),
    # -- baseline
    Code("duplicate-baseline-entry", "baseline", "the class baseline lists a method, or a variant of one, twice"),
    Code("unknown-baseline-source", "baseline", "a class baseline entry names a source its file does not define"),
    # -- diff
    Code("not-a-schema", "diff", "a schema file to compare has no $defs, so it is not an ACP schema"),
    Code("invalid-json", "diff", "a schema file to compare is not JSON (NaN, infinities, over-long integers included)"),
)

CODES: dict[str, Code] = {code.name: code for code in _TABLE}


def is_registered(name: str) -> bool:
    """Whether `name` is a registered diagnostic code."""
    return name in CODES
