"""The model: the immutable Spec that every renderer reads. Renderers never see raw YAML.

    Spec
    ├── failure_kinds: FailureKind…     (not-sent, no-response, error-response: the last one decided by code)
    ├── decisions: Decision…            (always, with-key, opt-in, never)
    ├── classes: RetryClass…            each with a decision per failure kind not decided by code
    ├── error_rules: ErrorRule…         per error code: can a resend help, and the decision per class
    ├── other_error: ErrorRule | None   the row for every code not listed
    ├── client_timings: ClientTiming…   numbers a Client follows for keyed prompts (seconds)
    ├── methods: Method…                sorted by (name, kind)
    │   ├── retry: class, repeat, key_param, success_errors: ErrorCode…
    │   ├── params / result: type names
    │   ├── example: Example | None    (spec/examples/<slug>.yaml): steps of an attempt and its retry
    │   └── variants: Variant…          (session/update), each with its own class
    ├── types: TypeDef…                 sorted by name; schema kept as canonical JSON text, stability beside it
    │   └── lenience: Lenience…         the properties a receiver salvages (x-deserialize-* annotations)
    ├── families: TypeFamily…           one per spec/types/ file, with its display name
    └── key_rules: KeyRules | None      the idempotency key's limits, read from its type

Everything is sorted here, at the boundary, so that renderers that iterate in model order are deterministic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .. import paths

REF_PREFIX = "#/$defs/"  # how a type of the spec refers to another: `$ref: "#/$defs/Name"`

SIDE_OF_DIRECTION = {
    # Who handles the message: the receiving side, as the `x-side` marker in ACP's own schema says.
    "client-to-agent": "agent",
    "agent-to-client": "client",
    "either": "either",
    "proxy": "proxy",
}

DIRECTION_TITLES = {
    "client-to-agent": "Client → Agent",
    "agent-to-client": "Agent → Client",
    "either": "Either side",
    "proxy": "Proxy chain",
}


@dataclass(frozen=True)
class FailureKind:
    """A way an attempt can fail, as seen by the sender."""

    name: str
    title: str
    description: str
    by_error_code: bool = False  # the decision comes from the error code's row, per class


# Why a value is not a valid key, in the order the validators check. The names are shared by every language.
KEY_PROBLEMS = {
    "not-a-string": "The value is not a JSON string (null, a number, a boolean, an array or an object).",
    "empty": "The string has no code points.",
    "too-short": "The string has fewer code points than the minimum.",
    "too-long": "The string has more code points than the maximum.",
    "lone-surrogate": (
        "The string holds a UTF-16 surrogate code point (U+D800 to U+DFFF) that is not part of a pair, so it is "
        "not well-formed Unicode and has no UTF-8 encoding."
    ),
}


@dataclass(frozen=True)
class KeyRules:
    """The length limits of the key type, in code points, read from its JSON Schema."""

    type_name: str
    min_length: int
    max_length: int | None
    description: str

    def problem(self, value: Any) -> str | None:
        """The reference rule: why `value` is not a valid key, or None when it is."""
        if not isinstance(value, str):
            return "not-a-string"
        length = len(value)  # a Python str is a sequence of code points, as JSON Schema counts
        if length == 0 and self.min_length > 0:
            return "empty"
        if length < self.min_length:
            return "too-short"
        if self.max_length is not None and length > self.max_length:
            return "too-long"
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            return "lone-surrogate"
        return None

    @property
    def problems(self) -> dict[str, str]:
        """The problems these limits can produce, with their descriptions."""
        names = ["not-a-string"]
        if self.min_length > 0:
            names.append("empty")
        if self.min_length > 1:
            names.append("too-short")
        if self.max_length is not None:
            names.append("too-long")
        names.append("lone-surrogate")
        return {name: KEY_PROBLEMS[name] for name in names}


@dataclass(frozen=True)
class ErrorRule:
    """What an SDK does after an error response with one code (or, with `code` None, with any unlisted code)."""

    code: int | None
    title: str
    resend_helps: bool
    why: str
    decisions: tuple[tuple[str, str], ...]  # (class, decision) in class order

    def decision(self, class_name: str) -> str:
        """The decision for a class name."""
        return dict(self.decisions)[class_name]


@dataclass(frozen=True)
class ClientTiming:
    """A number of seconds a Client SDK follows for keyed prompts, with the rule that gives it meaning."""

    name: str
    title: str
    seconds: float
    rule: str


@dataclass(frozen=True)
class UpstreamDifference:
    """A deliberate difference from the schema ACP publishes, with the reason for it."""

    difference: str
    reason: str


@dataclass(frozen=True)
class UpstreamBehaviour:
    """A deliberate difference in behaviour from what ACP's docs say (which no schema shows): what ACP says, what
    the TypeScript SDK does, what we do, and why."""

    subject: str
    acp: str
    sdk: str
    ours: str
    reason: str


@dataclass(frozen=True)
class Decision:
    """What an SDK may do after one kind of failure (`always`, `with-key`, `opt-in`, `never`)."""

    name: str
    description: str


@dataclass(frozen=True)
class RetryClass:
    """A retry class and its decision for each failure kind that is not decided by error code, in order."""

    name: str
    title: str
    summary: str
    meaning: str
    decisions: tuple[tuple[str, str], ...]

    def decision(self, failure: str) -> str:
        """The decision for a failure kind name."""
        return dict(self.decisions)[failure]


@dataclass(frozen=True)
class ErrorCode:
    """An error code that, on a repeat, means the first copy already succeeded."""

    code: int
    meaning: str


@dataclass(frozen=True)
class Variant:
    """A variant of a method's params (a `sessionUpdate` value) with its own retry class."""

    name: str
    stability: str
    summary: str
    retry_class: str
    repeat: str


@dataclass(frozen=True)
class ExampleStep:
    """One JSON-RPC message of a worked example, kept as canonical JSON so that nobody can mutate it."""

    sender: str
    note: str
    lost: bool
    message_json: str

    @property
    def message(self) -> dict[str, Any]:
        """A fresh copy of the message."""
        return json.loads(self.message_json)


@dataclass(frozen=True)
class Example:
    """A worked example of a method entry: a first attempt and what follows it, checked against the types."""

    summary: str
    steps: tuple[ExampleStep, ...]
    source: str


@dataclass(frozen=True)
class Method:
    """One (method, kind) entry of the audit."""

    name: str
    kind: str
    direction: str
    stability: str
    summary: str
    description: str
    retry_class: str
    repeat: str
    key_param: str | None
    success_errors: tuple[ErrorCode, ...]
    params: str | None
    result: str | None
    variant_field: str | None
    variants: tuple[Variant, ...]
    source: str
    slug: str
    example: Example | None = None
    has_twin: bool = False  # the same name also exists with the other kind (request and notification)

    @property
    def title(self) -> str:
        """The name readers see: the method name, with its kind when a twin of the other kind exists."""
        return f"{self.name} ({self.kind})" if self.has_twin else self.name

    @property
    def page(self) -> str:
        """The path the docs site serves this entry's page at, relative to the site root."""
        return paths.served(paths.method_page(self.slug))

    @property
    def side(self) -> str:
        """The side that handles the message (`agent`, `client`, `either`, `proxy`)."""
        return SIDE_OF_DIRECTION[self.direction]

    @property
    def direction_title(self) -> str:
        return DIRECTION_TITLES[self.direction]


@dataclass(frozen=True)
class TypeFamily:
    """A file under spec/types/: a family of types with the name readers see (JSON-RPC, MCP)."""

    name: str  # the file's stem, which also names the page and the Python module
    title: str
    description: str
    source: str


@dataclass(frozen=True)
class Lenience:
    """ACP's lenient-parsing annotations (generator/model/lenience.py) of one property of a type.

    `branch` is () for the type's own properties, or (keyword, index) for a property of one of its inline
    `anyOf`/`oneOf`/`allOf` branches.
    """

    property: str
    branch: tuple[str, int] | tuple[()]
    default_on_error: bool
    skip_invalid_items: bool
    default_on_null: bool
    required: bool  # a required property salvaged by default-on-error (an array) takes [] instead of being dropped


@dataclass(frozen=True)
class TypeDef:
    """A named JSON Schema definition. The schema is stored as canonical JSON so that nobody can mutate it."""

    name: str
    schema_json: str
    source: str
    stability: str = "stable"  # `x-stability` in the spec (generator/check/stability.py), kept out of the schema
    unstable_properties: tuple[str, ...] = ()  # its own properties marked unstable, in authored order
    lenience: tuple[Lenience, ...] = ()  # the properties a receiver salvages (x-deserialize-*), in schema order

    @property
    def schema(self) -> dict[str, Any]:
        """A fresh copy of the schema, safe to change."""
        return json.loads(self.schema_json)

    @property
    def description(self) -> str:
        return self.schema.get("description", "")


@dataclass(frozen=True)
class Spec:
    """The whole validated spec."""

    failure_kinds: tuple[FailureKind, ...]
    decisions: tuple[Decision, ...]
    classes: tuple[RetryClass, ...]
    methods: tuple[Method, ...]
    types: tuple[TypeDef, ...]
    traces_json: str | None = None  # the checked conformance traces (spec/conformance/), when the spec has them
    error_rules: tuple[ErrorRule, ...] = ()
    other_error: ErrorRule | None = None
    client_timings: tuple[ClientTiming, ...] = ()
    upstream_differences: tuple[UpstreamDifference, ...] = ()  # spec/upstream-differences.yaml, when present
    upstream_behaviours: tuple[UpstreamBehaviour, ...] = ()  # its `behaviours`: what no schema shows
    families: tuple[TypeFamily, ...] = ()  # sorted by name
    key_rules: KeyRules | None = None  # the IdempotencyKey type's limits, when the spec defines it

    def retry_class(self, name: str) -> RetryClass:
        return self._classes_by_name[name]

    @property
    def fallback_class(self) -> str:
        """The class for entries the table does not know: the last, least forgiving one."""
        return self.classes[-1].name

    @property
    def coded_failures(self) -> tuple[FailureKind, ...]:
        """The failure kinds whose decision depends on the error code (an error response)."""
        return tuple(f for f in self.failure_kinds if f.by_error_code)

    @property
    def keyed_method(self) -> Method | None:
        """The first entry with an idempotency key parameter, for examples (session/prompt in ACP v2)."""
        return next((m for m in self.methods if m.key_param is not None), None)

    @property
    def ambiguous_failure(self) -> FailureKind | None:
        """The failure kind a class exists for: the first one, not decided by code, on which the classes differ."""
        for f in self.failure_kinds:
            if not f.by_error_code and len({c.decision(f.name) for c in self.classes}) > 1:
                return f
        return None

    @property
    def all_error_rules(self) -> tuple[ErrorRule, ...]:
        """The error-code rows, then the row for other codes."""
        return (*self.error_rules, *([self.other_error] if self.other_error else []))

    def decision_groups(self) -> tuple[tuple[tuple[ErrorRule, ...], tuple[tuple[str, str], ...]], ...]:
        """The error-code rows grouped by their decisions per class (rows that decide alike, in spec order)."""
        groups: dict[tuple[tuple[str, str], ...], list[ErrorRule]] = {}
        for rule in self.all_error_rules:
            groups.setdefault(rule.decisions, []).append(rule)
        return tuple((tuple(rules), decisions) for decisions, rules in groups.items())

    def error_rule(self, code: int | None) -> ErrorRule:
        """The row for an error code: its own, or the one for every other code (also for no code at all)."""
        for rule in self.error_rules:
            if rule.code == code:
                return rule
        if self.other_error is None:
            raise LookupError("this spec decides no failure kind by error code")
        return self.other_error

    def decision(self, class_name: str, failure: str, error_code: int | None = None) -> str:
        """The decision of a class after a failure; for a failure decided by code, the code's row decides."""
        if failure in {f.name for f in self.coded_failures}:
            return self.error_rule(error_code).decision(class_name)
        return self.retry_class(class_name).decision(failure)

    @property
    def unlisted_error_code(self) -> int:
        """An error code that no row lists, for examples and test vectors of the `other codes` row."""
        listed = {r.code for r in self.error_rules}
        return next(code for code in (-32001, -32099, 1, 2, 3) if code not in listed)

    def type_def(self, name: str) -> TypeDef:
        return self._types_by_name[name]

    @cached_property
    def _classes_by_name(self) -> dict[str, RetryClass]:
        return {c.name: c for c in self.classes}

    @cached_property
    def _types_by_name(self) -> dict[str, TypeDef]:
        return {t.name: t for t in self.types}

    def stable_methods(self) -> tuple[Method, ...]:
        return tuple(m for m in self.methods if m.stability == "stable")


def canonical_json(value: Any) -> str:
    """Compact JSON that keeps the authored key order (field order is part of what a maintainer wrote)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
