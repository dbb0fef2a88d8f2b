"""site/reference/diagnostic-codes.md: every diagnostic code the validator can print, from the registry.

The page is for spec maintainers; it is rendered from generator/codes.py (not from the spec), so a code cannot be
added without its line here, and the limits it mentions are the loader's own constants.
"""

from __future__ import annotations

from ... import codes, paths
from ...model.spec import Spec
from ...read import loader, specfiles
from ..markers import markdown_header
from ..templates import render_output

PAGE = paths.DIAGNOSTIC_CODES_PAGE
SOURCE = "generator/codes.py"


def render(spec: Spec) -> dict[str, str]:
    """The codes page (the same for every spec: `spec` is unused, as the renderer signature requires)."""
    del spec
    groups = [(title, [c for c in codes.CODES.values() if c.stage == stage]) for stage, title in codes.STAGES.items()]
    text = render_output(
        PAGE,
        header=markdown_header(SOURCE),
        source=SOURCE,
        groups=[(title, members) for title, members in groups if members],
        limits={
            "depth": loader.MAX_DEPTH,
            "aliases": loader.MAX_ALIAS_VALUES,
            "size": f"{specfiles.MAX_FILE_BYTES // 1024} KiB",
        },
    )
    return {PAGE: text}
