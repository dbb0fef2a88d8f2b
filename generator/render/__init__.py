"""Stage 4: renderers. Each takes the model and returns {path relative to the project root: text}."""

from __future__ import annotations

from collections.abc import Callable

from ..model import Spec
from . import codes_page, compat_rules, docs, policy, python_pkg, schema, sdk, traces

Renderer = Callable[[Spec], dict[str, str]]
RENDERERS: tuple[Renderer, ...] = (
    schema.render,
    policy.render,
    python_pkg.render,
    docs.render,
    traces.render,
    sdk.render,
    compat_rules.render,
    codes_page.render,
)


def render_all(spec: Spec) -> dict[str, str]:
    """Every artifact, in memory. Two renderers claiming one path is a bug, so it fails loudly."""
    files: dict[str, str] = {}
    for renderer in RENDERERS:
        for path, text in renderer(spec).items():
            if path in files:
                raise RuntimeError(f"two renderers produce {path}")
            files[path] = text
    return dict(sorted(files.items()))
