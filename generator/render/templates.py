"""The one Jinja environment: strict about undefined names, and careful with whitespace."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from .. import naming

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(
        snake=naming.snake_case,
        constant=naming.constant_case,
        pascal=naming.pascal_case,
        camel=naming.camel_case,
        oneline=lambda text: " ".join(str(text).split()),
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render a template from generator/templates by its path there."""
    return environment().get_template(template).render(**context)


def render_output(path: str, **context: Any) -> str:
    """Render the output file `path`: its template sits at the same path under generator/templates, plus `.j2`.

    The templates folder mirrors the output tree; partials (shared macros, never rendered on their own) live in
    `_partials/`, and a page rendered once per entry is named after what it shows (`methods/method.md.j2`).
    """
    return render(f"{path}.j2", **context)


PARTIALS = "_partials"
METHOD_PAGE_TEMPLATE = "site/reference/methods/method.md.j2"
TYPE_PAGE_TEMPLATE = "site/reference/types/family.md.j2"
