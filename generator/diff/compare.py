"""Compare two snapshots: methods, retry behaviour and types; then give each change its severity.

The order of retry classes (and of decisions) is the spec's own: the class file lists them from the most to the
least forgiving, so moving a method later in that list is "less forgiving" whatever the classes are called.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..check import stability
from ..compat_rules import ACCEPTED, BREAKING, READ, UNSTABLE, WRITTEN, rule
from ..model.class_names import model_classes
from .change import Change, Scope, Where
from .schemas import TypeComparer
from .snapshot import SPEC, MethodView, Snapshot


@dataclass(frozen=True)
class Finding:
    """A change with its severity and the place the report points at."""

    rule: str
    severity: str
    path: str
    line: int
    column: int
    message: str
    subject: str

    def sort_key(self) -> tuple[str, int, int, str, str, str]:
        return (self.path, self.line, self.column, self.rule, self.subject, self.message)


def compare(old: Snapshot, new: Snapshot, *, include_all: bool = False) -> list[Finding]:
    """Every change from `old` to `new`, with severities and accepted breaks applied, sorted."""
    # A spec against a published schema: compare what both can say. A break the spec accepts that such a
    # comparison cannot show (a retry class: no published schema has them) is then not reported as unused.
    whole = old.kind == new.kind
    # A published schema has no retry classes: the spec's record of the classes as the proposal states them stands
    # in for them, so that a class change is never silent, release tag or not.
    baseline_file, baseline = new.class_baseline if new.kind == SPEC and not whole else ("", {})
    spec = new
    if not whole:
        old, new = (old.as_schema(), new) if old.kind == SPEC else (old, new.as_schema())
    changes: list[Change] = []
    _Methods(old, new, changes.append).run()
    if baseline:
        old.files = {**old.files, baseline_file: spec.files[baseline_file]}  # reports may point into it
        _against_baseline(baseline_file, baseline, spec, changes.append)
    if old.kind == SPEC:
        _retry_vocabulary(old, new, changes.append)
    types = TypeComparer(old, new, changes.append)
    for name in sorted(old.types.keys() - new.types.keys()):
        file, path = old.origins[name]
        changes.append(
            Change("type-removed", name, f"{name}: type removed", Scope("type", name), Where(file, path, True), None)
        )
    for name in sorted(new.types.keys() - old.types.keys()):
        file, path = new.origins[name]
        changes.append(
            Change("type-added", name, f"{name}: type added", Scope("type", name), None, Where(file, path, True))
        )
    if old.kind == SPEC:
        _model_classes(old, new, changes.append)
    unchanged = types.unchanged()  # most types of two versions are the same: nothing to walk
    for name in sorted(old.types.keys() & new.types.keys() - unchanged):
        types.named(name, name)
    for key in sorted(old.methods.keys() & new.methods.keys()):  # a method's params or result now another type
        a, b = old.methods[key], new.methods[key]
        for role in ("params", "result"):
            x, y = getattr(a, role), getattr(b, role)
            if x and y and x != y and x in old.types and y in new.types:
                types.named(x, y)
    grader = _Grader(old, new)
    findings = {grader.finding(c) for c in changes if include_all or not rule(c.rule).all_only}
    shown = _ALL_RULES if whole else BASELINE_RULES if baseline else frozenset()
    return sorted(_apply_accepted(findings, old, new, report_unused=shown), key=Finding.sort_key)


def _model_classes(old: Snapshot, new: Snapshot, emit) -> None:
    """Public classes of the generated models named after a union branch (generator/model/class_names.py) that
    one side has and the other lacks; a class that is a type of its own is the type rules' business."""
    before, after = model_classes(old.types), model_classes(new.types)
    for name in sorted(before.keys() - after.keys() - new.types.keys()):
        owner = before[name]
        if owner in new.types:  # a removed owner is reported as a removed type
            file, path = old.origins[owner]
            emit(
                Change(
                    "class-removed",
                    name,
                    f"{name}: public class removed",
                    Scope("type", owner),
                    Where(file, path, True),
                    None,
                )
            )
    for name in sorted(after.keys() - before.keys() - old.types.keys()):
        owner = after[name]
        if owner in old.types:
            file, path = new.origins[owner]
            emit(
                Change(
                    "class-added",
                    name,
                    f"{name}: public class added",
                    Scope("type", owner),
                    None,
                    Where(file, path, True),
                )
            )


# -- methods and their retry behaviour -----------------------------------------------------------------------------
class _Methods:
    def __init__(self, old: Snapshot, new: Snapshot, emit) -> None:
        self.old, self.new, self.emit = old, new, emit

    def change(self, rule_id: str, m: MethodView, text: str, a: Where | None, b: Where | None) -> None:
        subject = _subject(m, self.old, self.new)
        self.emit(Change(rule_id, subject, f"{subject}: {text}", Scope("method", m.name, m.kind), a, b))

    def run(self) -> None:
        old, new = self.old.methods, self.new.methods
        gone = sorted(old.keys() - new.keys())
        came = sorted(new.keys() - old.keys())
        for key in list(gone):  # the same name with the other kind: a kind change, not a removal
            twin = next((k for k in came if k[0] == key[0]), None)
            if twin is not None:
                gone.remove(key)
                came.remove(twin)
                a, b = old[key], new[twin]
                said = f"kind {a.kind} became {b.kind}"
                self.change("method-kind-changed", a, said, Where(a.file, ("kind",)), Where(b.file, ("kind",)))
        for key in gone:
            m = old[key]
            self.change("method-removed", m, f"{m.kind} removed", Where(m.file, _method_path(m, self.old), True), None)
        for key in came:
            m = new[key]
            self.change("method-added", m, f"{m.kind} added", None, Where(m.file, _method_path(m, self.new), True))
        for key in sorted(old.keys() & new.keys()):
            self.entry(old[key], new[key])

    def entry(self, a: MethodView, b: MethodView) -> None:
        if a.direction != b.direction:
            said = f"direction {a.direction} became {b.direction}"
            self.change(
                "method-direction-changed", a, said, Where(a.file, ("direction",)), Where(b.file, ("direction",))
            )
        if a.stability != b.stability:
            rule_id = "method-stability-lowered" if b.stability == "unstable" else "method-stability-raised"
            said = f"stability {a.stability} became {b.stability}"
            self.change(rule_id, a, said, Where(a.file, ("stability",)), Where(b.file, ("stability",)))
        for role in ("params", "result"):
            x, y = getattr(a, role), getattr(b, role)
            if (x is None) != (y is None):
                said = f"{role} type {x} removed" if y is None else f"{role} type {y} added"
                # a removal points at OLD, where the line still is
                wb = Where(b.file, (role,), True) if y is not None else None
                self.change("method-types-changed", a, said, Where(a.file, (role,), True), wb)
        before = {label: (text, path) for label, text, path in a.texts}
        for label, text, path in b.texts:
            if label in before and before[label][0] != text:
                said = f"{label} changed"
                self.change("description-changed", a, said, Where(a.file, before[label][1]), Where(b.file, path))
        if a.retry_class is None or b.retry_class is None:
            return  # a published schema has no retry data
        self.retry(a, b)
        self.variants(a, b)

    def retry(self, a: MethodView, b: MethodView) -> None:
        moved = _moved(self.old.classes, self.new.classes, a.retry_class, b.retry_class)
        if moved:
            rule_id = "retry-class-less-forgiving" if moved > 0 else "retry-class-more-forgiving"
            said = f"retry class {a.retry_class} became {b.retry_class}"
            path = ("retry", "class")
            self.change(rule_id, a, said, Where(a.file, path), Where(b.file, path))
        where_a, where_b = Where(a.file, ("retry", "keyParam")), Where(b.file, ("retry", "keyParam"))
        if a.key_param and not b.key_param:
            self.change(
                "key-param-removed", a, f"key parameter {a.key_param} removed", where_a, Where(b.file, ("retry",))
            )
        elif b.key_param and not a.key_param:
            self.change("key-param-added", a, f"key parameter {b.key_param} added", Where(a.file, ("retry",)), where_b)
        elif a.key_param != b.key_param:
            said = f"key parameter {a.key_param} renamed to {b.key_param}"
            self.change("key-param-renamed", a, said, where_a, where_b)
        for code in sorted(set(a.success_errors) ^ set(b.success_errors)):
            rule_id = "success-error-added" if code in b.success_errors else "success-error-removed"
            said = f"error {code} {'now' if code in b.success_errors else 'no longer'} means the first copy succeeded"
            side = b if code in b.success_errors else a
            where = Where(side.file, ("retry", "successEquivalentErrors", side.success_errors.index(code), "code"))
            other = Where((a if side is b else b).file, ("retry",))
            self.change(rule_id, a, said, *((other, where) if side is b else (where, other)))

    def variants(self, a: MethodView, b: MethodView) -> None:
        va, vb = {v.name: v for v in a.variants}, {v.name: v for v in b.variants}
        subject = _subject(a, self.old, self.new)
        for name in va.keys() | vb.keys():
            x, y = va.get(name), vb.get(name)
            stability = (x or y).stability  # type: ignore[union-attr]
            scope = Scope("variant", a.name, a.kind, unstable_variant=stability == "unstable")
            full = f"{subject}[{name}]"
            if y is None:
                where = Where(a.file, ("variants", x.index, "name"))  # type: ignore[union-attr]
                self.emit(
                    Change(
                        "variant-removed", full, f"{full}: variant removed", scope, where, Where(b.file, ("variants",))
                    )
                )
            elif x is None:
                where = Where(b.file, ("variants", y.index, "name"))
                self.emit(
                    Change("variant-added", full, f"{full}: variant added", scope, Where(a.file, ("variants",)), where)
                )
            else:
                moved = _moved(self.old.classes, self.new.classes, x.retry_class, y.retry_class)
                if moved:
                    rule_id = "variant-class-less-forgiving" if moved > 0 else "variant-class-more-forgiving"
                    said = f"{full}: retry class {x.retry_class} became {y.retry_class}"
                    wa, wb = (
                        Where(a.file, ("variants", x.index, "class")),
                        Where(b.file, ("variants", y.index, "class")),
                    )
                    self.emit(Change(rule_id, full, said, scope, wa, wb))


# The breaks a comparison with the class baseline can show: against a published schema with a class baseline, an
# accepted break of one of these rules that does not occur is reported as unused, as it is between two releases.
BASELINE_RULES = frozenset(
    {"retry-class-less-forgiving", "variant-class-less-forgiving", "key-param-removed", "key-param-renamed"}
)
_ALL_RULES = None  # every rule


def _against_baseline(file: str, baseline: dict, spec: Snapshot, emit) -> None:
    """The spec's classes (and key parameters, and variants' classes) against the class baseline's entries.

    A method the baseline lacks is new, and a method the spec lacks is removed: the method rules report both."""
    order = spec.classes
    for key in sorted(baseline.keys() & spec.methods.keys()):
        entry, m = baseline[key], spec.methods[key]
        subject = _subject(m, spec, spec)
        scope = Scope("method", m.name, m.kind)
        base = ("methods", entry.index)
        moved = _moved(order, order, entry.retry_class, m.retry_class)
        if moved:
            rule_id = "retry-class-less-forgiving" if moved > 0 else "retry-class-more-forgiving"
            said = f"{subject}: retry class {entry.retry_class} (as the proposal states it) became {m.retry_class}"
            emit(
                Change(rule_id, subject, said, scope, Where(file, (*base, "class")), Where(m.file, ("retry", "class")))
            )
        if entry.key_param != m.key_param:
            if m.key_param is None:
                rule_id, said = "key-param-removed", f"key parameter {entry.key_param} removed"
            elif entry.key_param is None:
                rule_id, said = "key-param-added", f"key parameter {m.key_param} added"
            else:
                rule_id, said = "key-param-renamed", f"key parameter {entry.key_param} renamed to {m.key_param}"
            old_at = Where(file, (*base, "keyParam") if entry.key_param else base)
            new_at = Where(m.file, ("retry", "keyParam") if m.key_param else ("retry",))
            emit(Change(rule_id, subject, f"{subject}: {said}", scope, old_at, new_at))
        ours = {v.name: v for v in m.variants}
        for j, (name, retry_class) in enumerate(entry.variants):
            v = ours.get(name)
            moved = _moved(order, order, retry_class, v.retry_class) if v else 0
            if moved:  # a variant added or removed since is the variant rules' business between releases
                rule_id = "variant-class-less-forgiving" if moved > 0 else "variant-class-more-forgiving"
                full = f"{subject}[{name}]"
                said = f"{full}: retry class {retry_class} (as the proposal states it) became {v.retry_class}"
                wa = Where(file, (*base, "variants", j, "class"))
                wb = Where(m.file, ("variants", v.index, "class"))
                emit(Change(rule_id, full, said, Scope("variant", m.name, m.kind, v.stability == "unstable"), wa, wb))


def _retry_vocabulary(old: Snapshot, new: Snapshot, emit) -> None:
    """The class list and the decision table of the retry-class file."""
    for name in old.classes:
        if name not in new.classes:
            file, path = old.class_paths[name]
            emit(
                Change(
                    "retry-class-removed",
                    name,
                    f"{name}: retry class removed",
                    Scope("global"),
                    Where(file, path),
                    None,
                )
            )
    for name in new.classes:
        if name not in old.classes:
            file, path = new.class_paths[name]
            emit(
                Change(
                    "retry-class-added", name, f"{name}: retry class added", Scope("global"), None, Where(file, path)
                )
            )
    for label in sorted(old.prose.keys() & new.prose.keys()):
        x, y = old.prose[label], new.prose[label]
        if x.value != y.value:
            said = f"{label}: text changed"
            emit(
                Change(
                    "description-changed", label, said, Scope("global"), Where(x.file, x.path), Where(y.file, y.path)
                )
            )
    changed_classes = set(old.classes) ^ set(new.classes)  # their decisions come and go with them
    for label in sorted(old.decision_table.keys() | new.decision_table.keys()):
        if label.split("/", 1)[0] in changed_classes:
            continue
        x, y = old.decision_table.get(label), new.decision_table.get(label)
        wa = Where(x.file, x.path) if x else None
        wb = Where(y.file, y.path) if y else None
        if y is None:
            emit(Change("decision-removed", label, f"{label}: decision {x.value} removed", Scope("global"), wa, None))  # type: ignore[union-attr]
        elif x is None:
            emit(Change("decision-added", label, f"{label}: decision {y.value} added", Scope("global"), None, wb))
        else:
            moved = _moved(old.decisions, new.decisions, x.value, y.value)
            if moved:
                rule_id = "decision-less-forgiving" if moved > 0 else "decision-more-forgiving"
                emit(Change(rule_id, label, f"{label}: decision {x.value} became {y.value}", Scope("global"), wa, wb))


def _moved(old_order: tuple[str, ...], new_order: tuple[str, ...], a: str | None, b: str | None) -> int:
    """How far `b` sits after `a` in the spec's order (negative: before). The new order decides when it knows
    both names; a renamed class is placed by its own side's order."""
    if a == b or a is None or b is None:
        return 0
    if a in new_order and b in new_order:
        return new_order.index(b) - new_order.index(a)
    rank_a = old_order.index(a) if a in old_order else new_order.index(a)
    rank_b = new_order.index(b) if b in new_order else old_order.index(b)
    return rank_b - rank_a or 1  # a different name at the same rank is still a change of class


def _subject(m: MethodView, old: Snapshot, new: Snapshot) -> str:
    """The method name; with its kind when the name has both a request and a notification."""
    twins = any((m.name, "request") in side.methods and (m.name, "notification") in side.methods for side in (old, new))
    return f"{m.name} ({m.kind})" if twins else m.name


def _method_path(m: MethodView, side: Snapshot) -> tuple:
    if side.kind == SPEC:
        return ("method",)
    return ("$defs", m.params or m.result or "")


# -- severities ------------------------------------------------------------------------------------------------
class _Grader:
    """Gives a change its severity (by role and stability) and its position."""

    def __init__(self, old: Snapshot, new: Snapshot) -> None:
        self.old, self.new = old, new
        self.reach_old, self.reach_new = old.reach(), new.reach()

    def finding(self, change: Change) -> Finding:
        r = rule(change.rule)
        roles = self._roles(change.scope)
        severity = UNSTABLE if self._unstable(change.scope) or self._in_unstable(change) else r.severity(roles)
        where, side = (change.old, self.old) if r.at == "old" and change.old else (change.new, self.new)
        if where is None:
            where, side = change.old, self.old
        assert where is not None
        loc = side.locate(where.file, where.path, key=where.key)
        return Finding(change.rule, severity, loc.file, loc.line, loc.column, change.message, change.subject)

    def _roles(self, scope: Scope) -> frozenset[str]:
        if scope.kind != "type":
            return frozenset({READ, WRITTEN})
        found = self.reach_old.get(scope.name, set()) | self.reach_new.get(scope.name, set())
        return frozenset(role for role, _ in found)

    def _in_unstable(self, change: Change) -> bool:
        """A change inside a type or property the spec marks unstable (`x-stability`): as the old side marks it,
        or the new side for what is new."""
        side, where = (self.old, change.old) if change.old is not None else (self.new, change.new)
        return where is not None and stability.under_unstable(side.unstable, where.path)

    def _unstable(self, scope: Scope) -> bool:
        if scope.kind in ("method", "variant"):
            key = (scope.name, scope.method_kind)
            m = self.old.methods.get(key) or self.new.methods.get(key)
            return (m is not None and m.stability == "unstable") or scope.unstable_variant
        if scope.kind == "type":
            reach = self.reach_old if scope.name in self.old.types else self.reach_new
            found = reach.get(scope.name, set())
            return bool(found) and not any(stable for _, stable in found)
        return False


def _apply_accepted(
    findings: set[Finding], old: Snapshot, new: Snapshot, *, report_unused: frozenset[str] | None
) -> list[Finding]:
    """Mark listed breaks as accepted, and report listed breaks for this span of releases that did not occur, of the
    rules in `report_unused` (None: of every rule; a comparison that cannot show a rule's changes leaves it out)."""
    in_scope = [a for a in new.accepted if a.in_scope(old.version, new.version)]
    wanted = {(a.rule, a.subject): a for a in in_scope}
    used: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for f in findings:
        listed = wanted.get((f.rule, f.subject))
        if listed is not None and f.severity == BREAKING:
            used.add((f.rule, f.subject))
            f = Finding(
                f.rule,
                ACCEPTED,
                f.path,
                f.line,
                f.column,
                f"{f.message} (accepted for {listed.version_text})",
                f.subject,
            )
        out.append(f)
    for a in in_scope:
        if (a.rule, a.subject) not in used and (report_unused is None or a.rule in report_unused):
            loc = a.location
            file = new.prefix + loc.file
            said = f"{a.subject}: the accepted break {a.rule} (for {a.version_text}) does not occur"
            out.append(Finding("accepted-break-unused", BREAKING, file, loc.line, loc.column, said, a.subject))
    return out
