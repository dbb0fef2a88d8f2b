"""SDK artifacts: the TypeScript and Rust tables, the conformance vectors, and the page that shows them.

One renderer for the family, so that the docs page quotes exactly the text the language renderers produce.
The vectors are also copied under site/reference/conformance/ so that the docs site can link to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ... import paths
from ...model.spec import Spec
from ..markers import markdown_header
from ..templates import render_output
from . import rust, typescript, vectors

PAGE_PATH = paths.SDK_TABLES_PAGE
SOURCE = "spec/retry-classes.yaml"
PYTHON_RETRY = paths.PYTHON_RETRY


def render_code(spec: Spec) -> dict[str, str]:
    """Phase 1: the TypeScript and Rust tables and the conformance vectors."""
    return {**typescript.render(spec), **rust.render(spec), **vectors.render(spec)}


def render_page(spec: Spec, rendered: Mapping[str, str]) -> dict[str, str]:
    """Phase 2: the SDK tables page, quoting the files phase 1 rendered, and the site's copies of the vectors."""
    copied = (paths.DECISION_VECTORS, paths.KEY_VECTORS)
    files = {paths.site_copy(path): rendered[path] for path in copied if path in rendered}
    sources = {
        "TypeScript": ("ts", rendered[paths.TYPESCRIPT], "//"),
        "Rust": ("rust", rendered[paths.RUST], "//"),
        "Python": ("python", rendered[paths.PYTHON_RETRY], "#"),
    }
    rules = spec.key_rules
    files[PAGE_PATH] = render_output(
        PAGE_PATH,
        header=markdown_header(SOURCE),
        source=SOURCE,
        spec=spec,
        rules=rules,
        tables=[(name, lang, region(text, "retry table", mark)) for name, (lang, text, mark) in sources.items()],
        keys=[(name, lang, region(text, "idempotency keys", mark)) for name, (lang, text, mark) in sources.items()]
        if rules
        else [],
        key_rows=[_key_row(v) for v in json.loads(rendered[paths.KEY_VECTORS])["vectors"]] if rules else [],
        lone_surrogates=vectors.LONE_SURROGATE_DECISION,
        case_count=len(json.loads(rendered[paths.DECISION_VECTORS])["cases"]),
        paths={"ts": paths.TYPESCRIPT, "rust": paths.RUST, "python": paths.PYTHON_RETRY},
        conformance={"keys": paths.KEY_VECTORS, "decisions": paths.DECISION_VECTORS},
    )
    return files


def region(text: str, name: str, mark: str) -> str:
    """The lines between `<mark> region: <name>` and the next `<mark> endregion` (editors fold these)."""
    lines = text.splitlines()
    start = lines.index(f"{mark} region: {name}") + 1
    end = lines.index(f"{mark} endregion", start)
    return "\n".join(lines[start:end]).strip("\n")


def _spelled(text: str) -> str:
    """A string literal with printable ASCII as is and every other code point as `\\u{...}` (Rust and JavaScript
    both read this form, and it shows a lone surrogate as the single code point it is)."""
    return '"' + "".join(ch if " " <= ch <= "~" and ch not in '"\\' else f"\\u{{{ord(ch):x}}}" for ch in text) + '"'


def _shown(value: Any) -> str:
    """A short spelling of a vector's value for the page: long repetitions as `"x" × n`."""
    if not isinstance(value, str):
        return json.dumps(value)
    if len(value) > 12:
        for size in (1, 2):
            unit, count = value[:size], 0
            while value.startswith(unit, count * size):
                count += 1
            rest = value[count * size :]
            if count > 2 and len(rest) <= 2:
                return f"{_spelled(unit)} × {count}" + (f" + {_spelled(rest)}" if rest else "")
        return _spelled(value[:8])[:-1] + '…"'
    return _spelled(value)


def _key_row(vector: dict[str, Any]) -> dict[str, Any]:
    """One row of the page's vector table; the facts about encodings are blank for values that are not strings."""
    is_string = "codePoints" in vector
    utf8 = vector.get("utf8Bytes")
    return {
        "name": vector["name"],
        "shown": _shown(vector["value"]).replace("|", "\\|"),
        "code_points": vector["codePoints"] if is_string else "",
        "utf16_units": vector["utf16Units"] if is_string else "",
        "utf8_bytes": ("none" if utf8 is None else utf8) if is_string else "",
        "outcome": "valid" if vector["valid"] else vector["reason"],
        "param": vector["param"],
    }
