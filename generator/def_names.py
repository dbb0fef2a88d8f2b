"""The audit's comparison of type names: the defs of our published schema against those ACP publishes.

Names are what SDK code generators turn into class and type names, so a def only one side has is a difference the
audit reports (`def Name: only here` / `only there`), and spec/upstream-differences.yaml gives each kept one its
reason. Ours are the defs as we publish them (render/upstream_form.py: a union's inline variants have none).
Compared on the unstable files, which hold every def on both sides.
"""

from __future__ import annotations

import json
from typing import Any

from .schema_compare import Difference


def differences(spec: Any, published: dict[str, Any]) -> list[Difference]:
    """The defs only our published unstable schema has, and those only `published` has, sorted."""
    from .render.schema import bundle_text  # late: only the audit needs the renderer

    ours = set(json.loads(bundle_text(spec, unstable=True))["$defs"])
    theirs = set(published.get("$defs") or {})
    found = [Difference(f"def {name}", "only here") for name in ours - theirs]
    found += [Difference(f"def {name}", "only there") for name in theirs - ours]
    return sorted(found)
