"""generated/conformance/: language-neutral test vectors that every SDK's generated code must pass.

`idempotency-key.json` lists values for `PromptRequest.idempotencyKey` with the outcome each must get, and
`retry-decisions.json` spells out `may_resend` for every (method, kind), failure kind and key presence. The
expected outcomes are computed here by a small reference implementation of the key rules (independent of the
generated validators, which the tests in tests/sdk/ hold against these files).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ... import paths
from ...model.spec import KeyRules, Spec
from ..markers import NOTICE

KEY_VECTORS_PATH = paths.KEY_VECTORS
DECISIONS_PATH = paths.DECISION_VECTORS
MESSAGE_KINDS = ("request", "notification")

# What an Agent does with the value when it arrives as the key parameter of a keyed request.
PARAM_OUTCOMES = {
    "key": "A valid key: the Agent inserts at most one message for it.",
    "no-key": "null (like an omitted parameter): the prompt is handled without duplicate detection.",
    "invalid-params": "Rejected with -32602 (Invalid params); never treated as if the key were omitted.",
}

LONE_SURROGATE_DECISION = (
    "A JSON text may spell a lone surrogate as an escape (\\ud800), and a JSON Schema validator that works on the "
    "decoded string counts it as one code point, so by length alone such a value would pass. We reject it "
    "instead: JSON exchanged between systems is UTF-8 (RFC 8259, section 8.1), UTF-8 cannot encode a lone "
    "surrogate, I-JSON (RFC 7493) forbids it, and an Agent that stores or compares keys as UTF-8 bytes could not "
    "hold it. Every generated validator says 'lone-surrogate', checked after the type and the length (so a "
    "value that is also too long reports 'too-long'); the length still counts each lone surrogate as one code "
    "point. Vectors whose string is not well-formed are marked wellFormed: false. Languages whose strings "
    "cannot hold such a value (Rust's str, pydantic's validator) reject it before any key check runs, which "
    "is the same outcome: the request fails. The JSON Schema alone does not express this rule, so schema "
    "validators accept these values; SDKs must not rely on the schema for it."
)


# -- idempotency-key.json ---------------------------------------------------------------------------------------


def _string_values(rules: KeyRules, examples: list[Any]) -> list[tuple[str, str, str]]:
    """(name, value, note) for every string vector; lengths follow the limits in the spec."""
    low = max(rules.min_length, 1)
    high = rules.max_length
    values: list[tuple[str, str, str]] = [
        ("empty", "", "No code points at all."),
        ("ascii-min", "k" * low, "The shortest valid key."),
    ]
    if rules.min_length > 1:
        values.append(("ascii-below-min", "k" * (rules.min_length - 1), "One code point short of the minimum."))
    for i, example in enumerate(examples):
        values.append((f"schema-example-{i + 1}", example, "An example from the type's own schema."))
    samples = [
        ("ascii", "k", "1 UTF-8 byte, 1 UTF-16 unit per code point."),
        ("two-byte", "\u00e9", "U+00E9 (é): 2 UTF-8 bytes, 1 UTF-16 unit."),
        ("three-byte", "\u20ac", "U+20AC (€): 3 UTF-8 bytes, 1 UTF-16 unit."),
        ("four-byte", "\U0001f600", "U+1F600 (😀): 4 UTF-8 bytes, 2 UTF-16 units (a surrogate pair)."),
    ]
    for label, ch, what in samples:
        if label != "ascii":
            values.append((f"{label}-single", ch, f"One code point. {what}"))
        if high is not None:
            values.append((f"{label}-max", ch * high, f"Exactly the maximum. {what}"))
            values.append((f"{label}-over-max", ch * (high + 1), f"One code point over the maximum. {what}"))
    if high is not None and high >= 2:
        values += [
            (
                "ascii-then-four-byte-max",
                "k" * (high - 1) + "\U0001f600",
                "Exactly the maximum in code points, but one UTF-16 unit over it: counting UTF-16 units is wrong.",
            ),
            (
                "four-byte-half-max-utf16",
                "\U0001f600" * ((high + 1) // 2),
                "Half the maximum in code points, yet at or over it in UTF-16 units.",
            ),
            (
                "combining-max",
                "e\u0301" * ((high - 1) // 2) + "e" * (high - 2 * ((high - 1) // 2)),
                "e + U+0301 COMBINING ACUTE ACCENT pairs: two code points per visible character; exactly the "
                "maximum in code points.",
            ),
            (
                "combining-over-max",
                "e\u0301" * ((high + 2) // 2),
                "Fewer visible characters than the maximum, but more code points: graphemes are not counted.",
            ),
        ]
    values += [
        ("zwj-sequence", "\U0001f469\u200d\U0001f469\u200d\U0001f467", "One emoji glyph made of 5 code points."),
        ("max-code-point", "\U0010ffff", "U+10FFFF, the last code point (a noncharacter, still allowed)."),
        ("noncharacter", "\uffff", "U+FFFF, a noncharacter: opaque keys allow it."),
        ("replacement-character", "\ufffd", "U+FFFD, a real character, not an error marker."),
        ("space", " ", "A single space: keys are never trimmed."),
        ("surrounding-spaces", " key ", "Leading and trailing spaces are part of the key."),
        ("tab-newline", "\tkey\n", "Tab and line feed are allowed."),
        ("no-break-space", "\u00a0", "U+00A0 NO-BREAK SPACE."),
        ("ideographic-space", "\u3000", "U+3000 IDEOGRAPHIC SPACE."),
        ("line-separator", "\u2028", "U+2028 LINE SEPARATOR."),
        ("byte-order-mark", "\ufeffkey", "U+FEFF at the start is a code point of the key, not a BOM to strip."),
        ("nul", "\u0000", "U+0000: control characters are allowed in an opaque key."),
        ("c0-controls", "".join(chr(c) for c in range(1, 32)), "U+0001 to U+001F."),
        ("delete", "\u007f", "U+007F DELETE."),
        ("c1-control", "\u0085", "U+0085 NEXT LINE, a C1 control."),
        ("lowercase", "key-abc", "Case variants are valid, and distinct keys (see comparisons)."),
        ("uppercase", "KEY-ABC", "Case variants are valid, and distinct keys (see comparisons)."),
        ("mixed-case", "Key-Abc", "Case variants are valid, and distinct keys (see comparisons)."),
        ("lone-high-surrogate", "\ud800", "A high surrogate alone (JSON escape \\ud800)."),
        ("lone-low-surrogate", "\udfff", "A low surrogate alone (JSON escape \\udfff)."),
        ("high-surrogate-at-end", "key\ud83d", "A high surrogate with no low surrogate after it."),
        ("swapped-surrogates", "\ude00\ud83d", "Low before high: two lone surrogates, not a pair."),
    ]
    if high is not None:
        values.append(
            (
                "lone-surrogate-over-max",
                "k" * high + "\ud800",
                "Too long and not well-formed: the length is checked first.",
            )
        )
    return values


_NON_STRINGS: list[tuple[str, Any, str]] = [
    ("null", None, "null means 'no key', like an omitted parameter; it is not a key."),
    ("true", True, "A boolean."),
    ("false", False, "A boolean."),
    ("zero", 0, "An integer."),
    ("one", 1, "An integer, even though it would fit the length limits as text."),
    ("negative", -1, "A negative integer."),
    ("big-integer", 18446744073709551616, "2^64: larger than a 64-bit integer."),
    ("fraction", 1.5, "A number with a fraction."),
    ("exponent", 1e300, "A number with an exponent."),
    ("empty-array", [], "An array."),
    ("array-of-key", ["key"], "An array holding a valid key is still not a key."),
    ("empty-object", {}, "An object."),
    ("object-with-key", {"key": "k"}, "An object holding a valid key is still not a key."),
]


def _string_facts(value: str) -> dict[str, Any]:
    well_formed = not any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    return {
        "codePoints": len(value),
        "utf16Units": len(value.encode("utf-16-le", "surrogatepass")) // 2,
        "utf8Bytes": len(value.encode("utf-8")) if well_formed else None,
        "wellFormed": well_formed,
    }


def key_vectors(spec: Spec, rules: KeyRules) -> dict[str, Any]:
    """The content of idempotency-key.json."""
    examples = next(t for t in spec.types if t.name == rules.type_name).schema.get("examples", [])
    vectors = []
    entries: list[tuple[str, Any, str]] = [*_string_values(rules, examples), *_NON_STRINGS]
    for name, value, note in entries:
        problem = rules.problem(value)
        vector: dict[str, Any] = {"name": name, "value": value, "valid": problem is None, "reason": problem}
        if value is None:
            vector["param"] = "no-key"
        else:
            vector["param"] = "key" if problem is None else "invalid-params"
        if isinstance(value, str):
            vector.update(_string_facts(value))
        vector["note"] = note
        vectors.append(vector)
    comparisons = [
        ("key-abc", "KEY-ABC", "Keys are case-sensitive."),
        ("key-abc", "Key-Abc", "Keys are case-sensitive."),
        ("stra\u00dfe", "STRASSE", "No case folding, not even when one form maps to two letters."),
        ("\u00e9", "e\u0301", "No Unicode normalization: precomposed and decomposed forms differ."),
        ("key", " key", "No trimming."),
        ("key", "\ufeffkey", "A leading U+FEFF is part of the key."),
        ("k\U0001f600", "k\U0001f600", "The same code points are the same key."),
    ]
    return {
        "description": (
            f"Test vectors for {rules.type_name}, the value of a keyed request's key parameter "
            "(PromptRequest.idempotencyKey). Every generated validator (TypeScript isValidIdempotencyKey, Rust "
            "validate_idempotency_key, Python validate_idempotency_key) must give each vector's 'valid' and "
            "'reason'; an Agent must give its 'param' outcome. Two keys are the same key only when their code "
            "points are identical, as 'comparisons' shows."
        ),
        "type": rules.type_name,
        "minLength": rules.min_length,
        "maxLength": rules.max_length,
        "counting": (
            "Lengths are counted in Unicode code points, as JSON Schema counts minLength and maxLength: not in "
            "UTF-8 bytes, not in UTF-16 units (JavaScript's .length), not in graphemes. codePoints, utf16Units "
            "and utf8Bytes are given for each string so that an SDK can see which count it used by mistake."
        ),
        "loneSurrogates": LONE_SURROGATE_DECISION,
        "reasons": rules.problems,
        "params": PARAM_OUTCOMES,
        "vectors": vectors,
        "comparisons": [{"a": a, "b": b, "same": a == b, "note": note} for a, b, note in comparisons],
    }


# -- retry-decisions.json ---------------------------------------------------------------------------------------


def _decide(
    spec: Spec, class_name: str, failure: str, code: int | None, has_key: bool, allow_duplicates: bool
) -> tuple[str, bool]:
    decision = spec.decision(class_name, failure, code)
    allowed = {"always": True, "with-key": has_key, "opt-in": allow_duplicates, "never": False}[decision]
    return decision, allowed


def error_codes_to_try(spec: Spec, failure: str) -> list[int | None]:
    """The codes a vector tries after `failure`: every listed code, one unlisted code and no code at all for a
    failure decided by code; only "no code" for the others."""
    if failure not in {f.name for f in spec.coded_failures}:
        return [None]
    return [*(r.code for r in spec.error_rules), spec.unlisted_error_code, None]


def decision_cases(spec: Spec) -> list[dict[str, Any]]:
    """Every (method, kind[, variant]) x failure kind x key present/absent x duplicates allowed or not."""
    targets: list[tuple[str, str, str | None, str, bool]] = []
    for m in spec.methods:
        targets.append((m.name, m.kind, None, m.retry_class, True))
        targets += [(m.name, m.kind, v.name, v.retry_class, True) for v in m.variants]
    known = {(m.name, m.kind) for m in spec.methods}
    fallback = spec.fallback_class
    # Names the table does not hold: extensions, a kind the entry does not have, and names that are properties of
    # every JavaScript object (a lookup must not find them on a prototype).
    unknown = ["_vendor/custom", "constructor", "__proto__", "toString"]
    for name in unknown:
        targets.append((name, "request", None, fallback, False))
    for m in spec.methods:
        other = "notification" if m.kind == "request" else "request"
        if (m.name, other) not in known:
            targets.append((m.name, other, None, fallback, False))
            break
    variant_methods = [m for m in spec.methods if m.variants]
    if variant_methods:
        m = variant_methods[0]
        targets.append((m.name, m.kind, "_vendor_variant", fallback, False))
    cases = []
    for method, kind, variant, class_name, in_table in targets:
        for failure in spec.failure_kinds:
            for code in error_codes_to_try(spec, failure.name):
                for has_key in (False, True):
                    for allow_duplicates in (False, True):
                        decision, allowed = _decide(spec, class_name, failure.name, code, has_key, allow_duplicates)
                        cases.append(
                            {
                                "method": method,
                                "kind": kind,
                                "variant": variant,
                                "failure": failure.name,
                                "errorCode": code,
                                "hasKey": has_key,
                                "allowDuplicates": allow_duplicates,
                                "known": in_table,
                                "class": class_name,
                                "decision": decision,
                                "mayResend": allowed,
                            }
                        )
    return cases


def decisions_document(spec: Spec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The head of retry-decisions.json and its cases (written one per line)."""
    head = {
        "description": (
            "What may_resend (mayResend in TypeScript) answers for every (method, kind) entry, each variant with "
            "its own class, and a few names the table does not hold, after each failure kind, with and without "
            "an idempotency key shared by every attempt, and with and without the caller's consent to duplicates. "
            "After a failure decided by error code, each case also names the code (errorCode: every listed code, "
            "one code the table does not list, and null for none); the other failures have errorCode null. "
            "Entries and variants that the table does not hold (known: false) get the fallback class."
        ),
        "fallbackClass": spec.fallback_class,
        "failureKinds": [f.name for f in spec.failure_kinds],
        "codedFailureKinds": [f.name for f in spec.coded_failures],
        "classes": {c.name: dict(c.decisions) for c in spec.classes},
    }
    if spec.other_error is not None:
        head["errorCodes"] = {str(r.code): dict(r.decisions) for r in spec.error_rules}
        head["otherCodes"] = dict(spec.other_error.decisions)
    return head, decision_cases(spec)


# -- text -------------------------------------------------------------------------------------------------------


def json_document(value: dict[str, Any], list_key: str | None = None) -> str:
    """JSON with the generated marker first, and the items of `list_key` one per line.

    Visible characters stay as they are; invisible ones and lone surrogates (which have no UTF-8 encoding) are
    written as `\\uXXXX` escapes, which JSON decoders turn back into the same code points.
    """
    marked = {"$comment": NOTICE, **value}
    placeholder = "\u0000list\u0000"
    if list_key is not None:
        marked[list_key] = placeholder
    text = json.dumps(marked, indent=2, ensure_ascii=False)
    if list_key is not None:
        lines = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in value[list_key])
        text = text.replace(json.dumps(placeholder), f"[\n{lines}\n  ]", 1)
    text = _NON_ASCII.sub(lambda m: _escaped(m.group()), text) + "\n"  # ASCII stays as json.dumps wrote it
    if json.loads(text) != ({"$comment": NOTICE, **value}):
        raise RuntimeError("a conformance file does not read back as written")
    return text


# Written as escapes: controls, formats, surrogates, private use, unassigned, separators and combining marks.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs", "Mn", "Mc", "Me"}
_NON_ASCII = re.compile("[^\x00-\x7f]")


def _escaped(ch: str) -> str:
    if ch.isascii() or unicodedata.category(ch) not in _INVISIBLE:
        return ch
    units = ch.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def render(spec: Spec) -> dict[str, str]:
    head, cases = decisions_document(spec)
    files = {DECISIONS_PATH: json_document({**head, "cases": cases}, "cases")}
    rules = spec.key_rules
    if rules is not None:
        files[KEY_VECTORS_PATH] = json_document(key_vectors(spec, rules), "vectors")
    return files
