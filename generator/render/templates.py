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
    """Render a template from generator/templates by its file name."""
    return environment().get_template(template).render(**context)
