"""The compatibility rules: one entry per kind of change that `diff` reports, with its severity and an example.

Severity depends on who reads the value that changed. The model is the one buf and smithy-diff use for
request/response APIs: the side that *handles* a message upgrades first, its peers are still old.

- A params type (of a request or a notification) is *read* by the handler: a change that accepts less (a field
  becomes required, a constraint tightens) breaks old senders.
- A result type is *written* by the handler: a change that allows more (a field becomes optional, a type widens)
  breaks old receivers of the result.

Rules whose severity is the same in both roles give one severity for both. A type reached from both roles takes the
worse of the two; a type reached from no method at all is treated as both. Changes to `unstable` methods, to types
that only unstable methods reach, and inside types and properties that are unstable themselves (`x-stability` in a
spec, absent from a published stable file), get the severity `unstable` and never fail the check.

Examples may name spec vocabulary through placeholders ({safest}, {riskiest}, {first_decision}, {last_decision},
{failure}): the docs page fills them in from the spec, so that class and decision names are written only there.
"""

from __future__ import annotations

from dataclasses import dataclass

BREAKING, COMPATIBLE, UNSTABLE, ACCEPTED = "breaking", "compatible", "unstable", "accepted"
READ, WRITTEN = "read", "written"  # the two roles a type can have towards the handler of a method
AREAS = {
    "methods": "Methods",
    "retry": "Retry behaviour",
    "types": "Types",
    "accepted": "Accepted breaks",
}


@dataclass(frozen=True)
class Rule:
    """One kind of change, as the docs page and the diff report present it."""

    id: str
    area: str
    summary: str  # one line: what changed
    why: str  # who breaks, and how (or why nobody does)
    old: str  # example: before
    new: str  # example: after
    read: str  # severity when the handler reads the subject (params), or the severity for every subject
    written: str  # severity when the handler writes the subject (results)
    reverse: str | None = None  # the rule that reports the same change made the other way round
    at: str = "new"  # where the report points: "new", or "old" for something that no longer exists
    all_only: bool = False  # reported only with --all

    @property
    def direction_aware(self) -> bool:
        return self.read != self.written

    def severity(self, roles: frozenset[str]) -> str:
        """The severity for a subject with these roles (no roles: both, to be safe)."""
        found = {self.read if role == READ else self.written for role in (roles or {READ, WRITTEN})}
        return BREAKING if BREAKING in found else COMPATIBLE

    @property
    def can_break(self) -> bool:
        return BREAKING in (self.read, self.written)


def _r(id_: str, area: str, summary: str, why: str, old: str, new: str, read: str, written: str | None = None, **kw):
    return Rule(id_, area, summary, why, old, new, read, written or read, **kw)


B, C = BREAKING, COMPATIBLE

RULES: tuple[Rule, ...] = (
    # -- methods ------------------------------------------------------------------------------------------------
    _r(
        "method-removed",
        "methods",
        "A method entry no longer exists (a rename shows as removed plus added).",
        "Peers that still send it get -32601 (method not found); handlers that still expect it never see it.",
        "method: session/fork",
        "(file deleted)",
        B,
        reverse="method-added",
        at="old",
    ),
    _r(
        "method-added",
        "methods",
        "A new method entry.",
        "Old peers never send it and old handlers answer -32601, which every caller must already handle.",
        "(no file)",
        "method: session/fork",
        C,
        reverse="method-removed",
    ),
    _r(
        "method-kind-changed",
        "methods",
        "A request became a notification, or the other way round.",
        "A request expects an answer and a notification gets none: old peers wait forever or never answer.",
        "kind: request",
        "kind: notification",
        B,
        reverse="method-kind-changed",
    ),
    _r(
        "method-direction-changed",
        "methods",
        "The side that handles the method changed.",
        "The old handler no longer receives it and the new one has never implemented it.",
        "direction: client-to-agent",
        "direction: agent-to-client",
        B,
        reverse="method-direction-changed",
    ),
    _r(
        "method-stability-lowered",
        "methods",
        "A stable method became unstable.",
        "It leaves schema.json and its guarantees: implementers of the stable protocol lose it.",
        "stability: stable",
        "stability: unstable",
        B,
        reverse="method-stability-raised",
    ),
    _r(
        "method-stability-raised",
        "methods",
        "An unstable method became stable.",
        "It now carries the stable guarantees; nothing that worked stops working.",
        "stability: unstable",
        "stability: stable",
        C,
        reverse="method-stability-lowered",
    ),
    _r(
        "method-types-changed",
        "methods",
        "A method gained or lost its params or result type.",
        "Messages that were valid are now rejected, or carry a body old peers do not expect.",
        "result: NewSessionResponse",
        "(no result)",
        B,
        reverse="method-types-changed",
    ),
    # -- retry behaviour ----------------------------------------------------------------------------------------
    _r(
        "retry-class-less-forgiving",
        "retry",
        "A method's retry class moved later in the spec's class order.",
        "SDKs that resend by default under the old class now duplicate effects the new class forbids repeating.",
        "retry:\n  class: {safest}",
        "retry:\n  class: {riskiest}",
        B,
        reverse="retry-class-more-forgiving",
    ),
    _r(
        "retry-class-more-forgiving",
        "retry",
        "A method's retry class moved earlier in the spec's class order.",
        "Old SDKs are more careful than they need to be; nothing breaks, but the change is listed.",
        "retry:\n  class: {riskiest}",
        "retry:\n  class: {safest}",
        C,
        reverse="retry-class-less-forgiving",
    ),
    _r(
        "key-param-removed",
        "retry",
        "A keyed method no longer names its idempotency key parameter.",
        "Clients keep sending the key and resending with it, but the handler no longer deduplicates.",
        "keyParam: idempotencyKey",
        "(no keyParam)",
        B,
        reverse="key-param-added",
        at="old",
    ),
    _r(
        "key-param-renamed",
        "retry",
        "The idempotency key travels in a differently named parameter.",
        "Old clients send the key under the old name, which the handler ignores: retries insert twice.",
        "keyParam: idempotencyKey",
        "keyParam: requestKey",
        B,
        reverse="key-param-renamed",
    ),
    _r(
        "key-param-added",
        "retry",
        "A method now names an idempotency key parameter.",
        "Old clients send no key and keep the old, more careful resend behaviour.",
        "(no keyParam)",
        "keyParam: idempotencyKey",
        C,
        reverse="key-param-removed",
    ),
    _r(
        "variant-class-less-forgiving",
        "retry",
        "A variant's retry class moved later in the class order.",
        "Proxies and replaying clients that redeliver the variant under the old class now duplicate its effect.",
        "- name: plan_update\n  class: {safest}",
        "- name: plan_update\n  class: {riskiest}",
        B,
        reverse="variant-class-more-forgiving",
    ),
    _r(
        "variant-class-more-forgiving",
        "retry",
        "A variant's retry class moved earlier in the class order.",
        "Old proxies are more careful than they need to be.",
        "- name: plan_update\n  class: {riskiest}",
        "- name: plan_update\n  class: {safest}",
        C,
        reverse="variant-class-less-forgiving",
    ),
    _r(
        "variant-removed",
        "retry",
        "A variant with its own retry class is no longer listed.",
        "Tables generated for old SDKs still list it; new tables fall back to the method's class for it.",
        "- name: plan_removed",
        "(not listed)",
        B,
        reverse="variant-added",
        at="old",
    ),
    _r(
        "variant-added",
        "retry",
        "A variant with its own retry class is listed.",
        "Old SDKs treat it with the method's own class, which is the least forgiving of its variants.",
        "(not listed)",
        "- name: plan_removed",
        C,
        reverse="variant-removed",
    ),
    _r(
        "decision-less-forgiving",
        "retry",
        "A decision in the retry-class table (per failure kind or error code) moved later in the decision order.",
        "SDKs following the old table resend where the spec now says they must not.",
        "{failure}: {first_decision}",
        "{failure}: {last_decision}",
        B,
        reverse="decision-more-forgiving",
    ),
    _r(
        "decision-more-forgiving",
        "retry",
        "A decision in the retry-class table moved earlier in the decision order.",
        "Old SDKs hold back resends the spec now allows; nothing breaks.",
        "{failure}: {last_decision}",
        "{failure}: {first_decision}",
        C,
        reverse="decision-less-forgiving",
    ),
    _r(
        "decision-removed",
        "retry",
        "A decision of the retry-class table is gone (a failure kind or code dropped).",
        "SDKs built from the old table act on a decision the spec no longer makes.",
        "{failure}: {first_decision}",
        "(no entry)",
        B,
        reverse="decision-added",
        at="old",
    ),
    _r(
        "decision-added",
        "retry",
        "The retry-class table gains a decision (a new failure kind or code).",
        "Old SDKs do not know the case and keep their more general behaviour.",
        "(no entry)",
        "{failure}: {first_decision}",
        C,
        reverse="decision-removed",
    ),
    _r(
        "retry-class-removed",
        "retry",
        "A class of the retry-class vocabulary is gone or renamed.",
        "Generated tables and SDK code that name the class no longer match the spec.",
        "- name: {riskiest}",
        "(not listed)",
        B,
        reverse="retry-class-added",
        at="old",
    ),
    _r(
        "retry-class-added",
        "retry",
        "The retry-class vocabulary gains a class.",
        "Old SDKs never meet it unless a method changes class, which is reported on its own.",
        "(not listed)",
        "- name: {riskiest}",
        C,
        reverse="retry-class-removed",
    ),
    _r(
        "success-error-removed",
        "retry",
        'An error code no longer means "already done" on a repeat.',
        "Old SDKs still take that code on a resend as success, although the first copy may have failed.",
        "successEquivalentErrors:\n  - code: -32002",
        "(not listed)",
        B,
        reverse="success-error-added",
        at="old",
    ),
    _r(
        "success-error-added",
        "retry",
        'An error code now means "already done" on a repeat.',
        "Old SDKs report the code as an error, which is merely less convenient.",
        "(not listed)",
        "successEquivalentErrors:\n  - code: -32002",
        C,
        reverse="success-error-removed",
    ),
    # -- types --------------------------------------------------------------------------------------------------
    _r(
        "type-removed",
        "types",
        "A named type no longer exists.",
        "Generated models lose the class; code that imports it no longer builds.",
        "SessionInfo: {...}",
        "(not defined)",
        B,
        reverse="type-added",
        at="old",
    ),
    _r(
        "type-added",
        "types",
        "A new named type.",
        "Nothing that exists refers to it.",
        "(not defined)",
        "SessionInfo: {...}",
        C,
        reverse="type-removed",
    ),
    _r(
        "class-removed",
        "types",
        "A public class of the generated models that is not a type of its own (a union branch named by its title"
        " or tag, a fallback) no longer exists under its name (a rename shows as removed plus added).",
        "Code that imports the class or checks isinstance against it no longer builds or no longer matches.",
        "anyOf:\n  - title: Result",
        "anyOf:\n  - title: Success",
        B,
        reverse="class-added",
        at="old",
    ),
    _r(
        "class-added",
        "types",
        "A new public class of the generated models for a union branch the spec names.",
        "Nothing that exists imports it.",
        "(no title)",
        "anyOf:\n  - title: Result",
        C,
        reverse="class-removed",
    ),
    _r(
        "property-removed",
        "types",
        "A property is no longer defined.",
        "Readers that used it lose it; a handler ignores what old senders still put there.",
        "properties:\n  cwd: {type: string}",
        "properties: {}",
        B,
        reverse="property-added",
        at="old",
    ),
    _r(
        "property-added",
        "types",
        "A new optional property.",
        "Old readers ignore fields they do not know, and old senders simply leave it out.",
        "properties: {}",
        "properties:\n  cwd: {type: string}",
        C,
        reverse="property-removed",
    ),
    _r(
        "required-property-added",
        "types",
        "A new property that is required.",
        "In params, old senders never send it and are rejected; in results, old readers just ignore it.",
        "required: [sessionId]",
        "required: [sessionId, cwd]",
        B,
        C,
        reverse="property-removed",
    ),
    _r(
        "property-made-required",
        "types",
        "An optional property became required.",
        "In params, old senders that leave it out are rejected; in results, old readers get it always.",
        "required: [sessionId]",
        "required: [sessionId, cwd]",
        B,
        C,
        reverse="property-made-optional",
    ),
    _r(
        "property-made-optional",
        "types",
        "A required property became optional.",
        "In results, old readers that rely on it fail when it is missing; in params, nothing breaks.",
        "required: [sessionId, cwd]",
        "required: [sessionId]",
        C,
        B,
        reverse="property-made-required",
    ),
    _r(
        "type-changed",
        "types",
        "A value's type changed to an unrelated one (or to or from a union).",
        "Values valid before are invalid now, and the other way round.",
        "type: string",
        "type: integer",
        B,
        reverse="type-changed",
    ),
    _r(
        "type-narrowed",
        "types",
        "A value accepts fewer JSON types (for example number became integer).",
        "In params, old senders' values may be rejected; in results, old readers still accept every value.",
        "type: [string, integer]",
        "type: string",
        B,
        C,
        reverse="type-widened",
    ),
    _r(
        "type-widened",
        "types",
        "A value accepts more JSON types.",
        "In results, old readers meet values of a type they do not accept; in params, nothing breaks.",
        "type: string",
        "type: [string, integer]",
        C,
        B,
        reverse="type-narrowed",
    ),
    _r(
        "nullability-removed",
        "types",
        "A value no longer accepts null.",
        "In params, old senders that send null are rejected; in results, old readers never see null.",
        "type: [string, 'null']",
        "type: string",
        B,
        C,
        reverse="nullability-added",
    ),
    _r(
        "nullability-added",
        "types",
        "A value now accepts null.",
        "In results, old readers that never expected null meet it; in params, nothing breaks.",
        "type: string",
        "type: [string, 'null']",
        C,
        B,
        reverse="nullability-removed",
    ),
    _r(
        "constraint-tightened",
        "types",
        "A constraint accepts less: maxLength, minItems, minimum, pattern, format, const or enum added or narrowed.",
        "In params, old senders' values may now be rejected; in results, old readers accept every new value.",
        "maxLength: 255",
        "maxLength: 128",
        B,
        C,
        reverse="constraint-loosened",
    ),
    _r(
        "constraint-loosened",
        "types",
        "A constraint accepts more, or is gone.",
        "In results, old readers may reject values they now receive; in params, nothing breaks.",
        "maxLength: 128",
        "maxLength: 255",
        C,
        B,
        reverse="constraint-tightened",
    ),
    _r(
        "constraint-changed",
        "types",
        "A pattern, format or other constraint changed in a way that is not a subset.",
        "Some values valid before are rejected now, and the other way round.",
        "pattern: '^[a-z]+$'",
        "pattern: '^[A-Z]+$'",
        B,
        reverse="constraint-changed",
    ),
    _r(
        "const-changed",
        "types",
        "A constant value changed.",
        "Every message that carried the old constant is rejected, and the other way round.",
        "const: text",
        "const: plain_text",
        B,
        reverse="const-changed",
    ),
    _r(
        "enum-value-removed",
        "types",
        "A value of an enum (or of an open set of constants) is gone.",
        "In params, old senders may still send it; in results, old readers simply never meet it again.",
        "enum: [low, medium, high]",
        "enum: [low, high]",
        B,
        C,
        reverse="enum-value-added",
        at="old",
    ),
    _r(
        "enum-value-added",
        "types",
        "An enum gains a value.",
        "ACP enums are open: readers keep values they do not know, so old readers accept it.",
        "enum: [low, high]",
        "enum: [low, medium, high]",
        C,
        reverse="enum-value-removed",
    ),
    _r(
        "union-variant-removed",
        "types",
        "A union (tagged or not) lost a variant.",
        "In params, old senders' messages of that variant are rejected; in results, old readers never meet it.",
        "oneOf: [TextContent, ImageContent]",
        "oneOf: [TextContent]",
        B,
        C,
        reverse="union-variant-added",
        at="old",
    ),
    _r(
        "union-variant-added",
        "types",
        "A union gains a variant.",
        "ACP unions are open: old readers keep an unknown variant as a fallback, so nothing breaks.",
        "oneOf: [TextContent]",
        "oneOf: [TextContent, ImageContent]",
        C,
        reverse="union-variant-removed",
    ),
    _r(
        "union-closed",
        "types",
        "A union (or a set of constants) no longer accepts unknown variants.",
        "In params, old senders' future or extension variants are rejected; in results, nothing breaks.",
        "anyOf: [{const: read}, {type: string}]",
        "anyOf: [{const: read}]",
        B,
        C,
        reverse="union-opened",
    ),
    _r(
        "union-opened",
        "types",
        "A union now accepts unknown variants.",
        "Readers must keep unknown variants anyway in ACP; old readers that reject them may, in results.",
        "anyOf: [{const: read}]",
        "anyOf: [{const: read}, {type: string}]",
        C,
        B,
        reverse="union-closed",
    ),
    _r(
        "discriminator-changed",
        "types",
        "A tagged union is told apart by a different property.",
        "Every reader picks variants by the old tag, so no message parses as the variant it is.",
        "discriminator: {propertyName: type}",
        "discriminator: {propertyName: kind}",
        B,
        reverse="discriminator-changed",
    ),
    _r(
        "additional-properties-closed",
        "types",
        "An object no longer accepts properties it does not list.",
        "In params, old senders' extension fields are rejected; in results, nothing breaks.",
        "additionalProperties: true",
        "additionalProperties: false",
        B,
        C,
        reverse="additional-properties-opened",
    ),
    _r(
        "additional-properties-opened",
        "types",
        "An object now accepts properties it does not list.",
        "In results, old strict readers may reject the extra fields; in params, nothing breaks.",
        "additionalProperties: false",
        "additionalProperties: true",
        C,
        B,
        reverse="additional-properties-closed",
    ),
    _r(
        "default-changed",
        "types",
        "The default of an optional value changed.",
        "Senders that leave the value out now mean something else than they meant.",
        "default: false",
        "default: true",
        B,
        reverse="default-changed",
    ),
    _r(
        "schema-changed",
        "types",
        "Any other change to a schema keyword that the rules above do not classify.",
        "The rules cannot tell which values are still valid, so the change counts as breaking.",
        "not: {required: [a]}",
        "not: {required: [b]}",
        B,
        reverse="schema-changed",
    ),
    _r(
        "description-changed",
        "types",
        "Only documentation text changed (descriptions, titles, summaries).",
        "Nothing on the wire changes; reported only with --all.",
        "description: The session.",
        "description: The session to use.",
        C,
        reverse="description-changed",
        all_only=True,
    ),
    # -- accepted breaks ----------------------------------------------------------------------------------------
    _r(
        "accepted-break-unused",
        "accepted",
        "spec/accepted-breaks.yaml lists a break for this release that the diff no longer finds.",
        "The list must stay true: remove the entry, or fix its rule id or subject.",
        "accepted:\n  - rule: retry-class-less-forgiving",
        "(the class change was reverted)",
        B,
        at="new",
    ),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with this id (a KeyError is a bug in the comparison code)."""
    return BY_ID[rule_id]
