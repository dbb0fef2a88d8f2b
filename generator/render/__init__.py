"""Rendering: one renderer per artifact. Each takes the model and returns {path relative to the project root: text}.

The renderers are grouped by what they write, as generator/templates/ is: `schema/` (the published schemas),
`python/` (the Python package), `sdk/` (the tables, vectors and traces SDKs read) and `docs/` (the pages). The
modules at this level serve every group: the Jinja environment, the generated-file markers, incremental rendering.

Rendering has two phases. Phase 1 renders code, data and the pages that quote no code. Phase 2 renders pages
that quote phase-1 output; each of those renderers also receives the files of the phase-1 renderers it names, so
a page shows exactly the bytes that are written and nothing is rendered twice. A renderer with slow work that
needs nothing from the others (the code generator behind the Python models) starts it in another process before
the rest of its phase renders, and renders last: the two proceed side by side.

Each renderer is listed with the model fields it never reads, so that an incremental run can skip it when
nothing else changed (generator/render/incremental.py). A field listed here that the renderer does read would serve
stale output: tests/pipeline/test_incremental.py traces every read of every renderer to catch that. Renderer
modules are imported only when their renderer runs, so a run that reuses them never pays for their libraries.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.spec import Spec
    from .incremental import RenderCache


# Fields of a method entry that only its pages show: code and data never read them.
_PAGE_ONLY = frozenset({"Method.summary", "Method.description", "Method.example", "Method.source", "Method.has_twin"})
_SPEC_FIELDS = (
    "failure_kinds", "decisions", "classes", "methods", "types", "traces_json", "error_rules", "other_error",
    "client_timings", "upstream_differences", "upstream_behaviours", "families", "key_rules",
)  # fmt: skip


def _spec_except(*kept: str) -> frozenset[str]:
    """Every top-level field of the model but `kept`."""
    return frozenset(f"Spec.{name}" for name in _SPEC_FIELDS if name not in kept)


@dataclass(frozen=True)
class Unit:
    """One renderer: where it lives, the model fields it never reads, and the renderers whose files it quotes."""

    name: str
    module: str  # under generator.render
    function: str
    ignores: frozenset[str]
    # Phase 2: the renderers whose files this one receives (and whose hashes its input covers). It gets no other
    # file, so a read of one it does not name fails in every run, full or incremental, instead of going stale.
    quotes: tuple[str, ...] = ()
    # A context manager function of the module, called with the model, that starts slow work this renderer needs in
    # another process and ends it on exit. A unit that has one, when it is going to render, starts it before any
    # other renderer of its phase runs, and renders after them: the work proceeds meanwhile.
    start: str | None = None

    def load(self) -> Callable[..., dict[str, str]]:
        """The renderer function (importing its module now)."""
        return getattr(self._module(), self.function)

    def started(self, spec: Spec) -> contextlib.AbstractContextManager[object]:
        """The unit's early work under way for `spec` (nothing, for a unit without any)."""
        return getattr(self._module(), self.start)(spec) if self.start else contextlib.nullcontext()

    def _module(self) -> Any:
        return importlib.import_module(f"{__name__}.{self.module}")


_SCHEMA_IGNORES = (
    _PAGE_ONLY
    | _spec_except("methods", "types")
    | {"Method.repeat", "Method.key_param", "Method.success_errors", "Method.variant_field", "Method.variants"}
    | {"Method.slug", "TypeDef.source"}
)
_POLICY_KEEPS = ("failure_kinds", "decisions", "classes", "methods", "error_rules", "other_error", "client_timings")
_NOT_FOR_CODE = frozenset(
    {"Spec.traces_json", "Spec.upstream_differences", "Spec.upstream_behaviours", "Spec.families"}
)
UNITS: tuple[Unit, ...] = (
    Unit("schema", "schema.bundles", "render", _SCHEMA_IGNORES),
    Unit("meta", "schema.meta", "render", _SCHEMA_IGNORES),
    Unit("policy", "sdk.policy", "render", _PAGE_ONLY | _spec_except(*_POLICY_KEEPS)),
    Unit("python", "python.package", "render", _PAGE_ONLY | _NOT_FOR_CODE, start="models_started"),
    Unit("traces", "sdk.traces", "render", _spec_except("traces_json")),
    Unit("sdk-code", "sdk.tables", "render_code", _PAGE_ONLY | _NOT_FOR_CODE | {"Spec.client_timings"}),
    Unit("compat-rules", "docs.compat_rules", "render", _spec_except("failure_kinds", "decisions", "classes")),
    Unit("codes-page", "docs.codes_page", "render", _spec_except()),
    # The docs pages quote no generated file, so they are in phase 1; three units, so that an edit re-renders few.
    Unit(
        "docs-methods",
        "docs.pages",
        "render_method_pages",
        frozenset({"Spec.traces_json", "Spec.upstream_differences", "Spec.upstream_behaviours"}),
    ),
    Unit(
        "docs-differences",
        "docs.pages",
        "render_differences_page",
        _spec_except("upstream_differences", "upstream_behaviours"),
    ),
    Unit(
        "docs-types",
        "docs.pages",
        "render_type_pages",
        _spec_except("methods", "types", "families") | (_PAGE_ONLY - {"Method.example"}),
    ),
    Unit(
        "sdk-page",
        "sdk.tables",
        "render_page",
        _PAGE_ONLY | _NOT_FOR_CODE | {"Spec.types"},
        quotes=("sdk-code", "python"),
    ),
)


def __getattr__(name: str) -> Any:
    # The renderer functions by phase, for tests that call them one by one (importing every renderer module).
    if name == "CODE_RENDERERS":
        return tuple(u.load() for u in UNITS if not u.quotes)
    if name == "PAGE_RENDERERS":
        return tuple(u.load() for u in UNITS if u.quotes)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Plan = tuple[str, dict[str, str] | None]  # a unit's input key, and its files when it need not render


def render_all(spec: Spec, cache: RenderCache | None = None) -> dict[str, str]:
    """Every artifact, in memory. Two renderers claiming one path is a bug, so it fails loudly.

    With a `cache`, a renderer whose input is unchanged since the run the cache remembers is not run; its files
    are read back from disk instead, and `cache` records what each renderer produced from what.
    """
    files: dict[str, str] = {}
    by_unit: dict[str, dict[str, str]] = {}

    def add(unit: Unit, produced: dict[str, str]) -> None:
        by_unit[unit.name] = produced
        for path, text in produced.items():
            if path in files:
                raise RuntimeError(f"two renderers produce {path}")
            files[path] = text

    with contextlib.ExitStack() as stack:
        if cache is not None:
            stack.enter_context(cache.active())
        # Phase 1's units with early work start it first, and render last; then phase 2.
        planned: dict[str, Plan] = {}
        for unit in (u for u in UNITS if u.start and not u.quotes):
            planned[unit.name] = _plan(unit, spec, {}, cache)
            if planned[unit.name][1] is None:  # it is going to render
                stack.enter_context(unit.started(spec))
        for unit in sorted(UNITS, key=lambda u: (bool(u.quotes), bool(u.start))):
            code = {path: text for name in unit.quotes for path, text in by_unit[name].items()}
            add(unit, _run(unit, spec, code, cache, planned.get(unit.name)))
    return dict(sorted(files.items()))


def _plan(unit: Unit, spec: Spec, code: dict[str, str], cache: RenderCache | None) -> Plan:
    if cache is None:
        return "", None
    from .incremental import canonical, input_key

    quoted = cache.digests(code) if unit.quotes else None
    key = input_key(cache.environment, unit.name, canonical(spec, unit.ignores), quoted)
    return key, cache.reuse(unit.name, key)


def _run(
    unit: Unit, spec: Spec, code: dict[str, str], cache: RenderCache | None, planned: Plan | None = None
) -> dict[str, str]:
    args = (spec, code) if unit.quotes else (spec,)  # a page sees phase-1 files only, never another page
    key, reused = planned or _plan(unit, spec, code, cache)
    if reused is not None:
        return reused
    produced = unit.load()(*args)
    if cache is not None:
        cache.remember(unit.name, key, produced)
    return produced
