"""Stage 4: renderers. Each takes the model and returns {path relative to the project root: text}.

Rendering has two phases. Phase 1 renders code and data. Phase 2 renders pages that quote phase-1 output; each
of those renderers also receives the files phase 1 produced, so a page shows exactly the bytes that are written
and nothing is rendered twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..model import Spec
from . import codes_page, compat_rules, docs, policy, python_pkg, schema, sdk, traces

Renderer = Callable[[Spec], dict[str, str]]
PageRenderer = Callable[[Spec, Mapping[str, str]], dict[str, str]]
CODE_RENDERERS: tuple[Renderer, ...] = (
    schema.render,
    policy.render,
    python_pkg.render,
    traces.render,
    sdk.render_code,
    compat_rules.render,
    codes_page.render,
)
PAGE_RENDERERS: tuple[PageRenderer, ...] = (
    docs.render_pages,
    sdk.render_page,
)


def render_all(spec: Spec) -> dict[str, str]:
    """Every artifact, in memory. Two renderers claiming one path is a bug, so it fails loudly."""
    files: dict[str, str] = {}

    def add(produced: dict[str, str]) -> None:
        for path, text in produced.items():
            if path in files:
                raise RuntimeError(f"two renderers produce {path}")
            files[path] = text

    for renderer in CODE_RENDERERS:
        add(renderer(spec))
    code = dict(files)  # phase 2 sees phase 1's output only, never another page
    for page_renderer in PAGE_RENDERERS:
        add(page_renderer(spec, code))
    return dict(sorted(files.items()))
