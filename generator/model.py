"""Stage 3: the immutable model that every renderer reads. Renderers never see raw YAML.

    Spec
    ├── failure_kinds: FailureKind…     (not-sent, no-response, error-response)
    ├── decisions: Decision…            (always, with-key, opt-in, never)
    ├── classes: RetryClass…            each with a decision per failure kind
    ├── methods: Method…                sorted by (name, kind)
    │   ├── retry: class, repeat, key_param, success_errors: ErrorCode…
    │   ├── params / result: type names
    │   ├── example: Example | None    (spec/examples/<slug>.yaml): steps of an attempt and its retry
    │   └── variants: Variant…          (session/update), each with its own class
    └── types: TypeDef…                 sorted by name; schema kept as canonical JSON text

Everything is sorted here, at the boundary, so that renderers that iterate in model order are deterministic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

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


@dataclass(frozen=True)
class Decision:
    """What an SDK may do after one kind of failure (`always`, `with-key`, `opt-in`, `never`)."""

    name: str
    description: str


@dataclass(frozen=True)
class RetryClass:
    """A retry class and its decision for each failure kind, in failure-kind order."""

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

    @property
    def side(self) -> str:
        """The side that handles the message (`agent`, `client`, `either`, `proxy`)."""
        return SIDE_OF_DIRECTION[self.direction]

    @property
    def direction_title(self) -> str:
        return DIRECTION_TITLES[self.direction]


@dataclass(frozen=True)
class TypeDef:
    """A named JSON Schema definition. The schema is stored as canonical JSON so that nobody can mutate it."""

    name: str
    schema_json: str
    source: str

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
    # spec/upstream-differences.yaml: (difference line, reason) pairs the audit accepts
    upstream_differences: tuple[tuple[str, str], ...] = ()

    def retry_class(self, name: str) -> RetryClass:
        return self._classes_by_name[name]

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
