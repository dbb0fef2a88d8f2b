"""The layout of generator/ and runtime/, checked from the source: no import circle, and no earlier stage that
imports a later one.

Every import counts: at the top of a module, inside a function (a late import) and under `TYPE_CHECKING`, since
each is a dependency a reader must follow. The stages and the shared modules are `generator.STAGES` and
`generator.SHARED`; a module of generator/ that belongs to neither fails the test, so a new one has to be placed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import generator

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "__main__"  # `python -m generator`: part of the command line
MAX_TOP_MODULES = 6  # modules at the top of generator/, its __init__ and __main__ aside
# generator/render/ by what each group writes, as generator/templates/ is laid out, and what all of them share
RENDER_GROUPS = ("docs", "python", "schema", "sdk")
RENDER_SHARED = ("incremental", "markers", "templates")


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`) by dotted name; a package by its own name."""
    found = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of `known` that module `name` imports, wherever in the file the import is."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from pkg import name`: a module of that name, or else a name defined in pkg
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        else:
            continue
        found |= {t for t in map(resolve, targets) if t is not None and t != name}
    return found


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same top-level package it imports."""
    found = modules(root, package)
    return {name: imports(name, path, found) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import one another, directly or not (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iteratively
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(groups)


def place(name: str, top: str = "generator") -> str | None:
    """The stage a module of generator/ belongs to, `shared` for a shared module, None for neither."""
    first = name.removeprefix(top).lstrip(".").split(".")[0]
    if first in ("", *generator.SHARED):
        return "shared"
    if first == ENTRY:
        return generator.STAGES[-1]
    return first if first in generator.STAGES else None


def backward(edges: dict[str, set[str]]) -> list[str]:
    """Every import that goes from a stage to a later one, or from a shared module to a stage."""
    rank = {stage: i for i, stage in enumerate(generator.STAGES)}
    found = []
    for name, targets in sorted(edges.items()):
        here = place(name)
        for target in sorted(targets):
            there = place(target)
            if there == "shared" or here is None or there is None:
                continue
            if here == "shared" or rank[there] > rank[here]:
                found.append(f"{name} ({here}) imports {target} ({there})")
    return found


def test_every_module_of_the_generator_has_a_stage() -> None:
    assert [name for name in graph(ROOT, "generator") if place(name) is None] == []


def test_no_import_circle_in_the_generator_or_the_runtime() -> None:
    assert circles(graph(ROOT, "generator")) == []
    assert circles(graph(ROOT / "runtime", "acp_v2_runtime")) == []


def test_no_stage_imports_a_later_one() -> None:
    assert backward(graph(ROOT, "generator")) == []


def test_few_modules_at_the_top_of_the_generator() -> None:
    top = sorted(p.stem for p in (ROOT / "generator").glob("*.py") if p.stem not in ("__init__", ENTRY))
    assert len(top) <= MAX_TOP_MODULES, top
    assert set(top) <= {*generator.SHARED, *generator.STAGES}


def test_render_is_grouped_by_what_it_writes() -> None:
    """Each renderer lives in the group of what it writes; only what every group shares sits at the top."""
    from generator.render import UNITS

    render = ROOT / "generator" / "render"
    assert sorted(p.stem for p in render.glob("*.py") if p.stem != "__init__") == list(RENDER_SHARED)
    assert sorted(p.name for p in render.iterdir() if (p / "__init__.py").is_file()) == list(RENDER_GROUPS)
    assert [u.name for u in UNITS if u.module.split(".")[0] not in RENDER_GROUPS] == []


# The reference Agent's modules by concern, lowest first: each imports only those before it (issue 42's split).
REFERENCE_AGENT = ("storage", "bounds", "turns", "hooks", "transport", "remote", "cli")
MAX_AGENT_MODULE_LINES = 300


def test_the_reference_agent_imports_one_way() -> None:
    """Each module of the reference Agent imports only the modules below it, never its package or one above, and
    none grows past the size that made the split worth doing."""
    package = "acp_v2_runtime.reference_agent"
    edges = graph(ROOT / "runtime", "acp_v2_runtime")
    rank = {f"{package}.{name}": i for i, name in enumerate(REFERENCE_AGENT)}
    upward = [
        f"{name} imports {target}"
        for name in rank
        for target in sorted(edges[name])
        if (target == package or target.startswith(f"{package}.")) and rank.get(target, len(rank)) >= rank[name]
    ]
    assert upward == []
    folder = ROOT / "runtime" / "acp_v2_runtime" / "reference_agent"
    assert sorted(p.stem for p in folder.glob("*.py")) == sorted(["__init__", "__main__", *REFERENCE_AGENT])
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_AGENT_MODULE_LINES} == {}


def test_the_checks_find_a_circle_and_a_backward_import(tmp_path: Path) -> None:
    """The checks above can fail: a made-up generator with both faults is caught."""
    package = tmp_path / "generator"
    (package / "read").mkdir(parents=True)
    (package / "render").mkdir()
    (package / "__init__.py").write_text("")
    (package / "read" / "__init__.py").write_text("")
    (package / "render" / "__init__.py").write_text("")
    (package / "read" / "loader.py").write_text("def f():\n    from ..render import schema\n")
    (package / "render" / "schema.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import docs\n"
    )
    (package / "render" / "docs.py").write_text("from .schema import x\n")
    edges = graph(tmp_path, "generator")
    assert circles(edges) == [["generator.render.docs", "generator.render.schema"]]
    assert backward(edges) == ["generator.read.loader (read) imports generator.render.schema (render)"]


def _rows(page: str) -> list[tuple[str, str]]:
    """The (first cell, whole row) of every table row of the page."""
    return [(line.split("|")[1], line) for line in page.splitlines() if line.startswith("| `generator/")]


def test_the_architecture_page_names_every_module() -> None:
    """A newcomer finds any module from the page: each package's row names its modules, each top module has a row,
    and the diagram has a box for every package."""
    page = (ROOT / "site" / "architecture.md").read_text(encoding="utf-8")
    rows = _rows(page)
    missing = []
    for path in sorted((ROOT / "generator").rglob("*.py")):
        rel = path.relative_to(ROOT / "generator")
        if "__pycache__" in rel.parts or "templates" in rel.parts or rel.name == "__init__.py":
            continue
        if len(rel.parts) == 1:
            found = any(f"`{rel.name}`" in first or f"`generator/{rel.name}`" in first for first, _ in rows)
        else:
            package = f"`generator/{rel.parts[0]}/`"
            found = any(package in first and f"`{'/'.join(rel.parts[1:])}`" in row for first, row in rows)
        if not found:
            missing.append(rel.as_posix())
    assert missing == []
    diagram = page.split("```mermaid", 1)[1].split("```", 1)[0]
    packages = sorted(p.name for p in (ROOT / "generator").iterdir() if (p / "__init__.py").is_file())
    assert [p for p in packages if f"{p}/" not in diagram] == []


def test_the_readme_layout_lists_every_package_and_top_module() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    names = [p.name + "/" for p in (ROOT / "generator").iterdir() if (p / "__init__.py").is_file()]
    names += [p.name for p in (ROOT / "generator").glob("*.py") if p.stem not in ("__init__", ENTRY)]
    assert [n for n in sorted(names) if f"\n  {n}" not in layout] == []
