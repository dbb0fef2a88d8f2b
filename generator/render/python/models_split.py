"""Split the one models module that datamodel-code-generator writes into one module per type family.

Used by python_pkg.py; see the comment below for why the family modules are laid out as they are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..markers import python_header

# -- Splitting the models into family modules ----------------------------------------------------------------------
#
# A family module reaches the other families' types in two ways, and is laid out in three parts to suit:
#
# 1. the definitions that need nothing from other families while the module runs (the "head");
# 2. `from .tools import ToolCallUpdate`: the names of other families that a definition below reads at once (a base
#    class, a member of a type alias's union, a head named in its annotations: see _bind_heads), then those
#    definitions (the "tail");
# 3. `from . import content as _content`, for the other names used only in field annotations, written
#    `_content.TextContent`.
#
# The only imports between family modules come after a module's head, so a module that is still running always
# has its head complete, and part 2 only names heads (split_models checks it): no import order can fail. Part 3
# comes last, so while the classes are created `_content` is unbound and pydantic leaves those annotations for the
# model's first use (every model has `defer_build=True`), when all modules involved are complete.
#
# Pydantic evaluates the annotations a class inherits in the namespace of the subclass's module. A class that a
# family other than its own subclasses therefore qualifies every name in its annotations, its own family's too, and
# the subclass's module imports every module those annotations name.
#
# datamodel-code-generator can write a module per prefix of dotted type names itself, but it merges modules that
# import each other into one `_internal` module, which for these families would hold most of the types.


@dataclass
class _Definition:
    """A top-level statement of the generated models (a class or a type alias) and its attribute docstring."""

    name: str
    node: ast.stmt
    start: int  # index of its first line
    end: int  # index of the line after its last
    bases: list[str] = field(default_factory=list)  # base classes among the other definitions
    eager: set[str] = field(default_factory=set)  # other definitions read when the statement runs
    lazy: list[ast.Name] = field(default_factory=list)  # other definitions named in annotations only
    strings: set[str] = field(default_factory=set)  # definitions named by a string (a forward reference)


def split_models(source: str, families: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split one generated models module into family modules.

    `families` maps each spec type name to its family. Names the code generator made up on its own (the variants of
    a union, say) join the family of the spec types that use them. Returns the text of each family module and the
    family of every public name.
    """
    lines = source.splitlines(keepends=True)
    imports: list[str] = []
    definitions: list[_Definition] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append("".join(lines[node.lineno - 1 : node.end_lineno]))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and definitions:
            definitions[-1].end = node.end_lineno or node.lineno  # the docstring of the definition above
        elif (name := _defined_name(node)) is not None:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
            definitions.append(_Definition(name, node, start, node.end_lineno or node.lineno))
        else:
            raise RuntimeError(f"unexpected statement in the generated models, line {node.lineno}")
    by_name = {d.name: d for d in definitions}
    for d in definitions:
        _collect_references(d, by_name)
    owners = _owners(definitions, families)
    for d in definitions:
        # a forward reference only resolves within its own module
        strays = sorted(n for n in d.strings if owners[n] != owners[d.name])
        if strays:
            raise RuntimeError(f"{d.name} names {', '.join(strays)} of another family in a string")
    ancestors = {d.name: _ancestors(d.name, by_name) for d in definitions}
    exported = {a for d in definitions for a in ancestors[d.name] if owners[a] != owners[d.name]}
    tail = _bind_heads(definitions, owners, _tails(definitions, owners), exported)
    for d in definitions:
        for name in sorted(d.eager):
            if owners[name] != owners[d.name] and name in tail:
                raise RuntimeError(
                    f"{d.name} reads {name} ({owners[name]}) when its module runs, and {name} itself reads another"
                    " family's type then: no layout of the family modules imports in every order"
                )
    modules = {}
    for family in sorted(set(owners.values())):
        members = [d for d in definitions if owners[d.name] == family]
        inherited = {a for d in members for a in ancestors[d.name] if owners[a] != family}
        modules[family] = _module_text(members, family, owners, lines, imports, tail, exported, inherited, by_name)
    return modules, {name: owners[name] for name in by_name if not name.startswith("_")}


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _collect_references(definition: _Definition, by_name: dict[str, _Definition]) -> None:
    """Sort the names of other definitions in a statement into those read at once and those in annotations, and
    note the strings that name a definition (one walk over the statement: these walks are most of the split)."""

    def visit(node: ast.AST, annotation: bool) -> None:
        if isinstance(node, ast.AnnAssign):
            visit(node.target, annotation)
            visit(node.annotation, True)
            if node.value is not None:
                visit(node.value, annotation)
            return
        if isinstance(node, ast.arg) and node.annotation is not None:
            visit(node.annotation, True)
            return
        if isinstance(node, ast.Name) and node.id in by_name and node.id != definition.name:
            if annotation:
                definition.lazy.append(node)
            else:
                definition.eager.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in by_name:
            definition.strings.add(node.value)
        for child in ast.iter_child_nodes(node):
            visit(child, annotation)

    visit(definition.node, False)
    if isinstance(definition.node, ast.ClassDef):
        definition.bases = [b.id for b in definition.node.bases if isinstance(b, ast.Name) and b.id in by_name]


def _owners(definitions: list[_Definition], families: dict[str, str]) -> dict[str, str]:
    """The family of every definition: its spec file, or for a made-up name, that of the spec types that use it."""
    users: dict[str, set[str]] = {}
    for d in definitions:
        for name in {*d.eager, *(n.id for n in d.lazy)}:
            users.setdefault(name, set()).add(d.name)
    owners = {}
    for d in definitions:
        if d.name in families:
            owners[d.name] = families[d.name]
            continue
        found, seen, todo = set(), {d.name}, [d.name]
        while todo:
            for user in users.get(todo.pop(), ()):
                if user in families:
                    found.add(families[user])
                elif user not in seen:
                    seen.add(user)
                    todo.append(user)
        if not found:
            raise RuntimeError(f"the generated model {d.name} is not a spec type and no spec type uses it")
        owners[d.name] = min(found)
    return owners


def _tails(definitions: list[_Definition], owners: dict[str, str]) -> set[str]:
    """Definitions that read another family's names when they run, and those of their family that read them."""
    tail = {d.name for d in definitions if any(owners[n] != owners[d.name] for n in d.eager)}
    grown = True
    while grown:
        grown = False
        for d in definitions:
            if d.name not in tail and any(n in tail and owners[n] == owners[d.name] for n in d.eager):
                tail.add(d.name)
                grown = True
    return tail


def _bind_heads(definitions: list[_Definition], owners: dict[str, str], tail: set[str], exported: set[str]) -> set[str]:
    """Grow the tails so that annotations name other families' heads at once, not as strings; returns the tail.

    An annotation that names another family's type is a string that pydantic compiles and fails to resolve as the
    class is created, then compiles and resolves again (with the rest of the field) on the model's first use: the
    largest cost of those models' first use. A definition in a tail can read the other families' heads at once,
    so each definition whose annotations name another family's head joins the tail of its module, with the
    definitions of its family that name it (which must come after it), unless one of them must stay in the head
    (another family reads it at once, or subclasses it); its references to those heads then become names
    imported with the tail's other names. The heads that tails read this way stay heads.
    """
    pinned = {n for d in definitions for n in d.eager if owners[n] != owners[d.name]}
    users: dict[str, set[str]] = {}
    for d in definitions:
        for name in {*d.eager, *(r.id for r in d.lazy)}:
            if owners[name] == owners[d.name]:
                users.setdefault(name, set()).add(d.name)
    by_name = {d.name: d for d in definitions}

    def heads_named(d: _Definition) -> set[str]:
        return {r.id for r in d.lazy if owners[r.id] != owners[d.name] and r.id not in tail}

    for d in definitions:
        if d.name in tail or d.name in exported or not heads_named(d):
            continue
        moved, todo = {d.name}, [d.name]
        while todo:
            for user in users.get(todo.pop(), ()):
                if user not in tail and user not in moved:
                    moved.add(user)
                    todo.append(user)
        if moved & (pinned | exported):
            continue
        tail |= moved
        pinned |= {n for m in moved for n in heads_named(by_name[m])}
    for d in definitions:
        if d.name in tail and d.name not in exported:
            named = heads_named(d)
            d.eager |= named
            d.lazy = [r for r in d.lazy if r.id not in named]
    return tail


def _ancestors(name: str, by_name: dict[str, _Definition]) -> set[str]:
    out: set[str] = set()
    todo = list(by_name[name].bases)
    while todo:
        base = todo.pop()
        if base not in out:
            out.add(base)
            todo.extend(by_name[base].bases)
    return out


def _module_text(
    members: list[_Definition],
    family: str,
    owners: dict[str, str],
    lines: list[str],
    imports: list[str],
    tail: set[str],
    exported: set[str],
    inherited: set[str],
    by_name: dict[str, _Definition],
) -> str:
    """One family module: its head, its by-name imports and tail, then the modules its annotations name."""
    aliases: set[str] = set()  # families whose module this one's annotations name
    inherited_aliases: set[str] = set()  # and those that only annotations inherited from other families name
    for name in inherited:  # these are written as in their own module
        inherited_aliases |= {owners[r.id] for r in by_name[name].lazy}
    blocks: dict[bool, list[str]] = {False: [], True: []}
    for d in members:
        edits: dict[int, list[ast.Name]] = {}
        for ref in d.lazy:
            if owners[ref.id] != family or d.name in exported:
                edits.setdefault(ref.lineno - 1, []).append(ref)
                aliases.add(owners[ref.id])
        text = []
        for index in range(d.start, d.end):
            line = lines[index].encode("utf-8")  # ast columns count UTF-8 bytes
            for ref in sorted(edits.get(index, ()), key=lambda n: n.col_offset, reverse=True):
                qualified = f"{_module_alias(owners[ref.id])}.{ref.id}".encode()
                line = line[: ref.col_offset] + qualified + line[ref.end_col_offset :]
            text.append(line.decode("utf-8"))
        blocks[d.name in tail].append("".join(text))
    needed: dict[str, set[str]] = {}
    for d in members:
        for name in d.eager:
            if owners[name] != family:
                needed.setdefault(owners[name], set()).add(name)
    out = python_header() + "\n" + "".join(imports) + "\n\n" + "\n\n".join(blocks[False])
    if needed:
        out += "\n\n# Names that the definitions below read at once, from the head of their modules.\n"
        out += "".join(f"from .{dep} import {', '.join(sorted(names))}\n" for dep, names in sorted(needed.items()))
        out += "\n\n" + "\n\n".join(blocks[True])
    if aliases or inherited_aliases:
        out += "\n\n# Named in annotations only; bound once this module's classes exist (pydantic resolves them on\n"
        out += "# first use). The layout is explained in generator/render/python/package.py.\n"
        for dep in sorted(aliases | inherited_aliases):
            unused = "  # noqa: F401 (for inherited annotations)" if dep not in aliases else ""
            out += f"from . import {dep} as {_module_alias(dep)}{unused}\n"
    return out


def _module_alias(family: str) -> str:
    return f"_{family}"
