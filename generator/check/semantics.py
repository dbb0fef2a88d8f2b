"""Checking: what the spec means (after its structure is known to be right), and build the model.

Each check adds diagnostics and carries on, so that a maintainer sees every problem in one run.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from ..model import class_names, envelopes, lenience, naming, refinements, unions, upstream_form
from ..model import spec as model
from ..model.spec import REF_PREFIX
from ..read.loader import DataPath, Document
from . import examples, schema_check, stability
from .context import CheckState


@dataclasses.dataclass(frozen=True)
class _Entry:
    """What an envelope's order is checked against: a method file's name, kind and direction."""

    name: str
    kind: str
    direction: str


if TYPE_CHECKING:
    pass

IDEMPOTENCY_KEY_TYPE = "IdempotencyKey"
RETRY_CLASS_TYPE = "RetryClass"
# The renderers turn each decision into code, so the vocabulary of decisions is fixed; their texts are data.
KNOWN_DECISIONS = ("always", "with-key", "opt-in", "never")
NEVER = KNOWN_DECISIONS[-1]
WITH_KEY = KNOWN_DECISIONS[1]
ERROR_CODE_TYPE = "ErrorCode"


class Checker(CheckState):
    """The meaning checks of the retry classes, types, methods and examples; each check adds diagnostics."""

    # -- retry-classes.yaml ---------------------------------------------------------------------------
    def check_classes(self) -> None:
        doc, data = self.classes_doc, self.classes_doc.data
        for section in ("failureKinds", "decisions", "classes"):
            self._unique_names(doc, section, data[section])
        failures = [f["name"] for f in data["failureKinds"]]
        decisions = {d["name"] for d in data["decisions"]}
        for i, decision in enumerate(data["decisions"]):
            if decision["name"] not in KNOWN_DECISIONS:
                self.error(
                    doc,
                    ("decisions", i, "name"),
                    "unknown-decision",
                    f"{decision['name']!r} is not a decision the generators understand; "
                    f"use one of {', '.join(KNOWN_DECISIONS)}",
                )
        coded = [f["name"] for f in data["failureKinds"] if f.get("byErrorCode")]
        for i, cls in enumerate(data["classes"]):
            given = cls["decisions"]
            for failure in failures:
                if failure in coded:
                    if failure in given:
                        self.error(
                            doc,
                            ("classes", i, "decisions", failure),
                            "decided-by-error-code",
                            f"{failure!r} is decided per error code (errorCodes), not by the class",
                            key=True,
                        )
                    continue
                if failure not in given:
                    self.error(
                        doc,
                        ("classes", i, "decisions"),
                        "missing-decision",
                        f"class {cls['name']!r} gives no decision for failure kind {failure!r}",
                    )
            for failure, decision in given.items():
                if failure not in failures:
                    self.error(
                        doc,
                        ("classes", i, "decisions", failure),
                        "unknown-failure-kind",
                        f"{failure!r} is not a failure kind; known: {', '.join(failures)}",
                        key=True,
                    )
                if decision not in decisions:
                    self.error(
                        doc,
                        ("classes", i, "decisions", failure),
                        "unknown-decision",
                        f"{decision!r} is not a decision; known: {', '.join(sorted(decisions))}",
                    )

        self._check_error_codes(coded, decisions)

    def _check_error_codes(self, coded: list[str], decisions: set[str]) -> None:
        """Each error-code row gives a known decision for every class; a code that cannot succeed says never."""
        doc, data = self.classes_doc, self.classes_doc.data
        table = data.get("errorCodes")
        if table is None:
            if coded:
                self.error(
                    doc,
                    ("failureKinds",),
                    "missing-error-codes",
                    f"failure kind {coded[0]!r} is decided by error code, but there is no errorCodes table",
                )
            return
        classes = [c["name"] for c in data["classes"]]
        rows = [(("errorCodes", "codes", i), row) for i, row in enumerate(table["codes"])]
        rows.append((("errorCodes", "otherCodes"), table["otherCodes"]))
        seen: set[int] = set()
        for path, row in rows:
            if "code" in row:
                if row["code"] in seen:
                    self.error(doc, (*path, "code"), "duplicate-error-code", f"code {row['code']} has two rows")
                seen.add(row["code"])
            given = row["decisions"]
            for name in classes:
                if name not in given:
                    self.error(
                        doc,
                        (*path, "decisions"),
                        "missing-decision",
                        f"{row['title']!r} gives no decision for {name!r}",
                    )
            for name, decision in given.items():
                if name not in classes:
                    self.error(
                        doc,
                        (*path, "decisions", name),
                        "unknown-class",
                        f"{name!r} is not a retry class; known: {', '.join(classes)}",
                        key=True,
                    )
                elif decision not in decisions:
                    self.error(
                        doc,
                        (*path, "decisions", name),
                        "unknown-decision",
                        f"{decision!r} is not a decision; known: {', '.join(sorted(decisions))}",
                    )
                elif not row["resendHelps"] and decision != NEVER:
                    self.error(
                        doc,
                        (*path, "decisions", name),
                        "resend-cannot-help",
                        f"{row['title']!r} says a resend cannot help, so every class must decide {NEVER!r}",
                    )
        self.error_codes_listed = seen

    def _check_error_code_type(self) -> None:
        """The errorCodes table has a row for exactly the codes of the ErrorCode type."""
        listed = self.error_codes_listed
        if listed is None or ERROR_CODE_TYPE not in self.types:
            return
        schema = self.types[ERROR_CODE_TYPE][1]
        defined = {o["const"] for o in schema.get("anyOf", []) if isinstance(o, dict) and "const" in o}
        if defined != listed:
            missing = sorted(defined - listed)
            extra = sorted(listed - defined)
            self.error(
                self.classes_doc,
                ("errorCodes", "codes"),
                "error-code-mismatch",
                f"errorCodes must list exactly the codes of the {ERROR_CODE_TYPE} type"
                + (f"; missing {missing}" if missing else "")
                + (f"; not in the type {extra}" if extra else ""),
            )

    def _unique_names(self, doc: Document, section: str, items: list[dict[str, Any]]) -> None:
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            if item["name"] in seen:
                self.error(
                    doc,
                    (section, i, "name"),
                    "duplicate-name",
                    f"{section} entry {item['name']!r} is already defined at index {seen[item['name']]}",
                )
            seen.setdefault(item["name"], i)

    # -- spec/types -----------------------------------------------------------------------------------
    def check_types(self) -> None:
        # Whether a type schema is valid JSON Schema depends on that schema alone: the clean outcome of a file's
        # types is kept under their bytes (as each example's is), which spares a run in which the file is unchanged
        # the meta-schema check, even when other files changed. A file with a type skipped as a duplicate is not
        # kept: that type was never checked.
        memo = self.memo
        for doc in self.type_docs:
            key, known_valid, clean = "", False, True
            if memo is not None:
                key = memo.derived_key(
                    "type-schemas", pickle.dumps(doc.data["types"], protocol=pickle.HIGHEST_PROTOCOL)
                )
                known_valid = memo.get_derived(key) is True
            for name, schema in doc.data["types"].items():
                if name in self.types:
                    first = self.types[name][0]
                    self.error(
                        doc,
                        ("types", name),
                        "duplicate-type",
                        f"type {name!r} is already defined in {first.display}",
                        key=True,
                    )
                    clean = False
                    continue
                self.types[name] = (doc, schema)
                for at, problem in () if known_valid else schema_check.problems(schema):
                    message = f"type {name!r} is not valid JSON Schema 2020-12: {problem}"
                    self.error(doc, ("types", name, *at), "invalid-type-schema", message)
                    self.bad_types.add(name)
                    clean = False
                for where in _boolean_subschemas(schema, ("types", name)):
                    self.error(
                        doc,
                        where,
                        "boolean-subschema",
                        "write a schema here, not a boolean: {} accepts any value, {not: {}} none",
                    )
                    self.bad_types.add(name)
            if memo is not None and not known_valid and clean:
                memo.put_derived(key, True)
        for name, (doc, schema) in self.types.items():
            if name in self.bad_types:
                continue
            targets = self.type_refs[name] = set()
            for path, ref in _refs(schema, ("types", name)):
                if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
                    self.error(doc, path, "bad-ref", f"$ref {ref!r} must have the form '{REF_PREFIX}TypeName'")
                    self.bad_types.add(name)  # it cannot be resolved: nothing may validate with this type
                    continue
                target = ref.removeprefix(REF_PREFIX)
                targets.add(target)
                if target not in self.types and target not in self.maybe_types:
                    hint = schema_check.did_you_mean(target, self.types)
                    message = f"$ref {ref!r} names a type that is not defined in spec/types/{hint}"
                    self.error(doc, path, "unknown-type", message)
            union = unions.tagged_union(schema, REF_PREFIX)
            if union is not None and unions.fallback_name(name) in self.types:
                message = (
                    f"type {unions.fallback_name(name)!r} takes the name the generated code gives to the fallback"
                    f" variant of the open union {name!r}; rename it"
                )
                self.error(doc, ("types", name), "fallback-name-taken", message, key=True)
            for at, message in lenience.problems(schema):
                self.error(doc, ("types", name, *at), "invalid-lenience", message)
            for code, path, message in _union_name_problems(name, schema, self.types):
                self.error(doc, ("types", name, *path), code, message)
            problem = refinements.problem(schema)
            if problem is not None:
                self.error(doc, ("types", name, refinements.REFINED_BY), "invalid-refinement", problem)
            declared = envelopes.envelope_of(schema)
            if declared is None and envelopes.ENVELOPE in schema:
                message = (
                    f"{envelopes.ENVELOPE} takes message: one of {', '.join(envelopes.EXTENSION)}"
                    f" and from: one of {', '.join(envelopes.SENDS)}"
                )
                self.error(doc, ("types", name, envelopes.ENVELOPE), "invalid-envelope", message)
            if declared is not None:
                broken = self._broken_method_files()
                for at, message in envelopes.order_problems(schema, self._envelope_methods()):
                    listed = schema[envelopes.ENVELOPE].get(envelopes.ORDER)
                    named = listed[at[-1]] if isinstance(at[-1], int) and isinstance(listed, list) else None
                    if isinstance(named, str) and _slugs(named) & broken:
                        continue  # the method file that may define it is broken: reported there
                    self.error(doc, ("types", name, envelopes.ENVELOPE, *at), "invalid-envelope-order", message)
                for needed in envelopes.needs(*declared):
                    if needed not in self.types:
                        message = f"the {declared[0]} envelope {name!r} needs the type {needed!r}, which is not defined"
                        self.error(doc, ("types", name, envelopes.ENVELOPE), "unknown-type", message)
        self._check_ref_cycles()
        self._check_retry_class_type()
        self._check_error_code_type()
        self._spread_unsound()

    def _spread_unsound(self) -> None:
        """A type that reaches a broken, circular or missing type cannot be used to validate anything either.

        No diagnostic here (the cause is reported where it is); checks that validate with a type skip it.
        """
        reaches = {
            name: {ref.removeprefix(REF_PREFIX) for _, ref in _refs(schema, ()) if isinstance(ref, str)}
            for name, (_, schema) in self.types.items()
        }
        changed = True
        while changed:
            changed = False
            for name, targets in reaches.items():
                if name not in self.bad_types and any(t in self.bad_types or t not in self.types for t in targets):
                    self.bad_types.add(name)
                    changed = True

    def _broken_method_files(self) -> set[str]:
        """The names (without suffix) of method files that failed to parse or their structure check: the entry each
        one means is unknown, so nothing that names it is reported (its own problem is, where it is)."""
        return self.file_stems.get("methods", set()) - {PurePath(d.display).stem for d in self.method_docs}

    def _envelope_methods(self) -> list[_Entry]:
        """(name, kind, direction) of every method file, for checking the envelopes' declared order."""
        return [
            _Entry(str(d.data.get("method")), str(d.data.get("kind")), str(d.data.get("direction")))
            for d in self.method_docs
        ]

    def _check_ref_cycles(self) -> None:
        """Types that are nothing but a $ref, following each other round in a circle, describe no value."""
        target = {
            name: ref.removeprefix(REF_PREFIX)
            for name, (_, schema) in self.types.items()
            if isinstance(ref := _pure_ref(schema), str) and ref.startswith(REF_PREFIX)
        }
        reported: set[str] = set()
        for start in sorted(target):
            chain = [start]
            while chain[-1] in target and target[chain[-1]] not in chain:
                chain.append(target[chain[-1]])
            if chain[-1] not in target or target[chain[-1]] != start or start in reported:
                continue
            reported.update(chain)
            self.bad_types.update(chain)
            doc = self.types[start][0]
            self.error(
                doc,
                ("types", start, "$ref"),
                "ref-cycle",
                f"type {start!r} is only a $ref, and the refs go round: {' -> '.join([*chain, start])}",
            )

    def _check_retry_class_type(self) -> None:
        if RETRY_CLASS_TYPE not in self.types:
            return
        doc, schema = self.types[RETRY_CLASS_TYPE]
        declared = [c["name"] for c in self.classes_doc.data["classes"]]
        if schema.get("enum") != declared:
            self.error(
                doc,
                ("types", RETRY_CLASS_TYPE, "enum"),
                "retry-class-enum-mismatch",
                f"the {RETRY_CLASS_TYPE} enum must list the classes of retry-classes.yaml in order: {declared}",
            )

    # -- spec/methods ---------------------------------------------------------------------------------
    def check_methods(self) -> None:
        class_names = [c["name"] for c in self.classes_doc.data["classes"]]
        seen: dict[tuple[str, str], Document] = {}
        for doc in self.method_docs:
            data = doc.data
            entry = (data["method"], data["kind"])
            if entry in seen:
                self.error(
                    doc,
                    ("method",),
                    "duplicate-method",
                    f"{data['kind']} {data['method']!r} is already defined in {seen[entry].display}",
                )
            seen.setdefault(entry, doc)
            if data["method"].startswith("_"):
                self.error(
                    doc,
                    ("method",),
                    "extension-method",
                    "methods starting with '_' are extensions; they carry no retry class and stay out of the spec",
                )
            self._known_class(doc, ("retry", "class"), data["retry"]["class"], class_names)
            self._check_key(doc, data)
            self._check_types_named(doc, data)
            self._check_variants(doc, data, class_names)
        # A file with a structure error (a bad `kind:`, say) still gets the checks its sound parts allow, so that
        # a key parameter problem is not hidden until the next run.
        for doc in self.unsound.get("methods", []):
            data = _usable_method(doc.data)
            if data is not None:
                self._check_key(doc, data)
        stability.check(self)  # needs the types and the methods

    def _known_class(self, doc: Document, path: DataPath, name: str, class_names: list[str]) -> bool:
        if name in class_names:
            return True
        self.error(doc, path, "unknown-class", f"{name!r} is not a retry class; known: {', '.join(class_names)}")
        return False

    def _check_key(self, doc: Document, data: dict[str, Any]) -> None:
        key_param = data["retry"].get("keyParam")
        # A class is keyed when one of its decisions depends on a key; no class name is written here.
        keyed_classes = {c["name"] for c in self.classes_doc.data["classes"] if WITH_KEY in c["decisions"].values()}
        if data["retry"]["class"] not in {c["name"] for c in self.classes_doc.data["classes"]}:
            return  # reported as unknown-class; whether it takes a key cannot be told
        keyed = data["retry"]["class"] in keyed_classes
        if keyed and key_param is None:
            self.error(
                doc,
                ("retry",),
                "missing-key-param",
                "a keyed entry must name its idempotency key parameter in retry.keyParam",
            )
            return
        if key_param is None:
            return
        if not keyed:
            self.error(
                doc,
                ("retry", "keyParam"),
                "key-param-not-keyed",
                f"only keyed entries take a key parameter; this one is {data['retry']['class']!r}",
            )
            return
        params = data.get("params")
        if params is None:
            self.error(
                doc,
                ("retry", "keyParam"),
                "bad-key-param",
                f"key parameter {key_param!r} cannot be checked: the entry names no params type",
            )
            return
        if params not in self.types:
            return  # reported as unknown-type by _check_types_named
        # A type with problems elsewhere (a dangling $ref, say) is still checked here when its properties can
        # be read: the key parameter's own problem belongs in the same report.
        schema = self.types[params][1]
        properties = schema.get("properties") if isinstance(schema, dict) else None
        prop = properties.get(key_param) if isinstance(properties, dict) else None
        if not isinstance(prop, dict):
            self.error(
                doc, ("retry", "keyParam"), "bad-key-param", f"params type {params!r} has no property {key_param!r}"
            )
            return
        problems = []
        required = schema.get("required", ())
        if isinstance(required, list) and key_param in required:
            problems.append("it is required")
        if not _is_nullable_key(prop):
            problems.append(f"its schema is not anyOf [$ref {REF_PREFIX}{IDEMPOTENCY_KEY_TYPE}, type: null]")
        if problems:
            self.error(
                doc,
                ("retry", "keyParam"),
                "bad-key-param",
                f"{params}.{key_param} must be an optional, nullable {IDEMPOTENCY_KEY_TYPE}, but "
                + " and ".join(problems),
            )

    def _check_types_named(self, doc: Document, data: dict[str, Any]) -> None:
        if data["kind"] == "notification" and "result" in data:
            self.error(
                doc,
                ("result",),
                "notification-with-result",
                "a notification has no response, so it cannot have a result type",
                key=True,
            )
        for field in ("params", "result"):
            name = data.get(field)
            if name is not None and name not in self.types and name not in self.maybe_types:
                hint = schema_check.did_you_mean(name, self.types)
                self.error(doc, (field,), "unknown-type", f"{field} type {name!r} is not defined in spec/types/{hint}")

    def _check_variants(self, doc: Document, data: dict[str, Any], class_names: list[str]) -> None:
        variants = data.get("variants", [])
        if variants and "variantField" not in data:
            self.error(
                doc,
                ("variants",),
                "missing-variant-field",
                "an entry with variants must name the field that selects them in variantField",
                key=True,
            )
        seen: set[str] = set()
        worst = -1
        for i, variant in enumerate(variants):
            if variant["name"] in seen:
                self.error(
                    doc, ("variants", i, "name"), "duplicate-variant", f"variant {variant['name']!r} is listed twice"
                )
            seen.add(variant["name"])
            if "class" not in variant:
                self.error(
                    doc, ("variants", i), "variant-without-class", f"variant {variant['name']!r} has no retry class"
                )
            elif self._known_class(doc, ("variants", i, "class"), variant["class"], class_names):
                worst = max(worst, class_names.index(variant["class"]))
        own = data["retry"]["class"]
        if worst >= 0 and own in class_names and class_names.index(own) != worst:
            self.error(
                doc,
                ("retry", "class"),
                "variant-class-mismatch",
                f"an entry with variants takes the least forgiving class of its variants, "
                f"{class_names[worst]!r}, not {own!r}",
            )

    # -- spec/examples --------------------------------------------------------------------------------
    def check_examples(self) -> None:
        # Only sound types: validating an example against a broken or circular schema would say nothing useful.
        schemas = {name: schema for name, (_, schema) in self.types.items() if name not in self.bad_types}
        # A clean outcome is kept per example, under what that example's check reads (examples.check_examples).
        self.examples = examples.check_examples(
            self.example_docs,
            self.method_docs,
            schemas,
            self.error,
            self.type_refs,
            memo=self.memo,
            broken=self._broken_method_files(),
        )
        self._check_every_entry_has_an_example()

    def _check_every_entry_has_an_example(self) -> None:
        """Once a spec has worked examples, each entry needs one: a new method without one is named here."""
        present = self.file_stems.get("examples", set())
        if not present:
            return  # a spec without spec/examples/ (a small fixture, say) has pages without examples
        twins = naming.twins([d.data["method"] for d in self.method_docs])
        for doc in self.method_docs:
            slug = naming.method_slug(doc.data["method"], doc.data["kind"], has_twin=doc.data["method"] in twins)
            if slug not in present:
                message = (
                    f"{doc.data['kind']} {doc.data['method']!r} has no worked example: add spec/examples/{slug}.yaml "
                    "(the first attempt and a retry, checked against the types; copy a neighbour)"
                )
                self.error(doc, ("method",), "missing-example", message)

    # -- the model ------------------------------------------------------------------------------------
    def _key_rules(self) -> model.KeyRules | None:
        found = self.types.get(IDEMPOTENCY_KEY_TYPE)
        return None if found is None else _key_rules_of(found[1])

    def build(self) -> model.Spec:
        data = self.classes_doc.data
        failure_order = [f["name"] for f in data["failureKinds"]]
        entries = sorted(self.method_docs, key=lambda d: (d.data["method"], d.data["kind"]))
        twins = naming.twins([d.data["method"] for d in entries])
        coded = {f["name"] for f in data["failureKinds"] if f.get("byErrorCode")}
        class_order = [c["name"] for c in data["classes"]]
        table = data.get("errorCodes")
        all_schemas = {name: schema for name, (_, schema) in self.types.items()}
        methods = tuple(_with_example(_method(d, has_twin=d.data["method"] in twins), self.examples) for d in entries)
        in_envelopes = envelopes.ranked(methods, all_schemas.values())  # members in ACP's declared order

        def derived(schema: dict[str, Any]) -> str:
            # Every tagged union is open (ACP v2), and envelopes list their methods' types: both derived here.
            opened = refinements.opened(unions.opened(schema, all_schemas, REF_PREFIX))
            full = envelopes.expand(opened, in_envelopes, REF_PREFIX)
            return model.canonical_json(full)

        return model.Spec(
            failure_kinds=tuple(
                model.FailureKind(f["name"], f["title"], f["description"], bool(f.get("byErrorCode")))
                for f in data["failureKinds"]
            ),
            decisions=tuple(model.Decision(d["name"], d["description"]) for d in data["decisions"]),
            classes=tuple(
                model.RetryClass(
                    c["name"],
                    c["title"],
                    c["summary"],
                    c["meaning"],
                    tuple((f, c["decisions"][f]) for f in failure_order if f not in coded),
                )
                for c in data["classes"]
            ),
            methods=methods,
            types=tuple(
                model.TypeDef(
                    name,
                    derived(stability.stripped(schema)),
                    doc.display,
                    stability.of(schema),
                    stability.unstable_properties(schema),
                    lenience.lenience(schema),
                )
                for name, (doc, schema) in sorted(self.types.items())
            ),
            families=tuple(
                sorted(
                    (
                        model.TypeFamily(
                            doc.path.stem,
                            doc.data.get("title", doc.path.stem.capitalize()),
                            " ".join(doc.data.get("description", "").split()),
                            doc.display,
                        )
                        for doc in self.type_docs
                    ),
                    key=lambda f: f.name,
                )
            ),
            key_rules=self._key_rules(),
            error_rules=tuple(_error_rule(r, class_order) for r in table["codes"]) if table else (),
            other_error=_error_rule(table["otherCodes"], class_order) if table else None,
            client_timings=tuple(
                model.ClientTiming(t["name"], t["title"], t["seconds"], " ".join(t["rule"].split()))
                for t in data.get("clientTimings", [])
            ),
        )


def _key_rules_of(schema: dict[str, Any]) -> model.KeyRules:
    return model.KeyRules(
        type_name=IDEMPOTENCY_KEY_TYPE,
        min_length=int(schema.get("minLength", 0)),
        max_length=int(schema["maxLength"]) if "maxLength" in schema else None,
        description=" ".join(schema.get("description", "").split()),
    )


def _error_rule(row: dict[str, Any], class_order: list[str]) -> model.ErrorRule:
    return model.ErrorRule(
        code=row.get("code"),
        title=row["title"],
        resend_helps=row["resendHelps"],
        why=" ".join(row["why"].split()),
        decisions=tuple((name, row["decisions"][name]) for name in class_order),
    )


def _method(doc: Document, *, has_twin: bool) -> model.Method:
    d = doc.data
    retry = d["retry"]
    return model.Method(
        name=d["method"],
        kind=d["kind"],
        direction=d["direction"],
        stability=d["stability"],
        summary=d["summary"].strip(),
        description=d.get("description", "").strip(),
        retry_class=retry["class"],
        repeat=retry["repeat"].strip(),
        key_param=retry.get("keyParam"),
        success_errors=tuple(
            model.ErrorCode(e["code"], e["meaning"].strip())
            for e in sorted(retry.get("successEquivalentErrors", []), key=lambda e: e["code"])
        ),
        params=d.get("params"),
        result=d.get("result"),
        variant_field=d.get("variantField"),
        variants=tuple(
            model.Variant(v["name"], v["stability"], v["summary"].strip(), v["class"], v["repeat"].strip())
            for v in d.get("variants", [])
        ),
        source=doc.display,
        slug=naming.method_slug(d["method"], d["kind"], has_twin=has_twin),
        has_twin=has_twin,
    )


def _with_example(method: model.Method, found: dict[str, model.Example]) -> model.Method:
    example = found.get(method.slug)
    return method if example is None else dataclasses.replace(method, example=example)


def _usable_method(data: Any) -> dict[str, Any] | None:
    """The parts of a structurally unsound method file that the key check can read, or None."""
    if not isinstance(data, dict) or not isinstance(data.get("retry"), dict):
        return None
    retry = data["retry"]
    if not isinstance(retry.get("class"), str) or not isinstance(retry.get("keyParam", ""), str):
        return None
    usable: dict[str, Any] = {"retry": {k: retry[k] for k in ("class", "keyParam") if k in retry}}
    if isinstance(data.get("params"), str):
        usable["params"] = data["params"]
    return usable


def _is_nullable_key(prop: dict[str, Any]) -> bool:
    options = prop.get("anyOf") or prop.get("oneOf") or []
    refs = {o.get("$ref") for o in options if isinstance(o, dict)}
    nulls = [o for o in options if isinstance(o, dict) and o.get("type") == "null"]
    return len(options) == 2 and REF_PREFIX + IDEMPOTENCY_KEY_TYPE in refs and len(nulls) == 1


# Keywords whose value is one schema, a list of schemas, or a mapping of names to schemas. Booleans stay allowed
# where they are idiomatic and every output understands them (additionalProperties: false, say).
_SCHEMA_KEYWORDS = ("items", "contains", "not", "if", "then", "else", "propertyNames", "additionalItems")
_SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_ANNOTATIONS = frozenset({"description", "title", "$comment", "examples", "default", "deprecated"})


def _boolean_subschemas(schema: Any, path: DataPath) -> Iterator[DataPath]:
    """Paths where a boolean stands in for a schema that the outputs need to describe."""
    if not isinstance(schema, dict):
        return
    children: list[tuple[DataPath, Any]] = []
    for key in _SCHEMA_KEYWORDS:
        if key in schema:
            children.append(((*path, key), schema[key]))
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            children.extend(((*path, key, i), sub) for i, sub in enumerate(schema[key]))
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            children.extend(((*path, key, name), sub) for name, sub in schema[key].items())
    for where, sub in children:
        if isinstance(sub, bool):
            yield where
        elif isinstance(sub, dict):  # what else is not a schema is no concern of this check
            yield from _boolean_subschemas(sub, where)


def _pure_ref(schema: Any) -> Any:
    """The $ref of a schema that is nothing else (annotations aside), or None."""
    if isinstance(schema, dict) and set(schema) - _ANNOTATIONS == {"$ref"}:
        return schema["$ref"]
    return None


def _refs(value: Any, path: DataPath) -> Iterator[tuple[DataPath, Any]]:
    """Every `$ref` in a schema, with its data path."""
    # only containers are walked into: a call per string or number would cost most of the walk
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield (*path, key), item
            elif isinstance(item, (dict, list)):
                yield from _refs(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                yield from _refs(item, (*path, i))


def build(checker: Checker) -> model.Spec:
    """The frozen model, from a checker whose checks all ran without a diagnostic."""
    return dataclasses.replace(
        checker.build(),
        traces_json=checker.traces_json,
        upstream_differences=checker.differences,
        upstream_behaviours=checker.behaviours,
    )


def _union_name_problems(name: str, schema: Any, types: Any) -> list[tuple[str, DataPath, str]]:
    """What is wrong with a union's x-inline list and the class names of its branches (model/upstream_form.py and
    model/class_names.py own the rules)."""
    return [*upstream_form.problems(name, schema), *class_names.problems(name, schema, types)]


def _slugs(method: str) -> set[str]:
    """The file names a method's entry may have (its request form, or its notification form beside a twin)."""
    return {naming.method_slug(method, "notification", has_twin=twin) for twin in (False, True)}
