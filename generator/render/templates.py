"""The one Jinja environment: strict about undefined names, and careful with whitespace."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ..model import naming

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"


# The options that shape how templates compile (the bytecode cache below is keyed on them).
_OPTIONS: dict[str, Any] = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
    "autoescape": False,
}


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        bytecode_cache=_bytecode_cache(),
        **_OPTIONS,
    )
    env.filters.update(
        snake=naming.snake_case,
        constant=naming.constant_case,
        pascal=naming.pascal_case,
        camel=naming.camel_case,
        oneline=lambda text: " ".join(str(text).split()),
    )
    return env


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs, in the user's cache folder: compiling every template costs about a
    tenth of a full `generate`, loading them a few milliseconds.

    Jinja checks each entry against its template's source; the folder's name covers what else shapes the compiled
    code (the Jinja and Python versions, the options above), so changing any of them starts a fresh folder. Without
    a writable cache folder, templates are compiled in memory as before.
    """
    shape = json.dumps([jinja2.__version__, sys.version, _OPTIONS], sort_keys=True)
    try:
        folder = _cache_home() / "acp-v2-toolchain" / f"jinja-{hashlib.sha256(shape.encode()).hexdigest()[:16]}"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def _cache_home() -> Path:
    configured = os.environ.get("XDG_CACHE_HOME")
    return Path(configured) if configured else Path.home() / ".cache"


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
