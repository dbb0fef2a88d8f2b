"""SDK artifacts: the TypeScript and Rust tables, the conformance vectors, and the page that shows them.

One renderer for the family, so that the docs page quotes exactly the text the language renderers produce.
The vectors are also copied under site/reference/conformance/ so that the docs site can link to them.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import Spec
from . import rust, typescript, vectors
from .markers import markdown_header
from .python_pkg import PACKAGE, format_python
from .templates import render as render_template

PAGE_PATH = "site/reference/sdk-tables.md"
SITE_CONFORMANCE = "site/reference/conformance"
SOURCE = "spec/retry-classes.yaml"
PYTHON_RETRY = f"{PACKAGE}/retry.py"


def render(spec: Spec) -> dict[str, str]:
    files = {**typescript.render(spec), **rust.render(spec), **vectors.render(spec)}
    for path in (vectors.DECISIONS_PATH, vectors.KEY_VECTORS_PATH):
        if path in files:
            files[f"{SITE_CONFORMANCE}/{path.rsplit('/', 1)[-1]}"] = files[path]
    python = _python_retry(spec)
    sources = {
        "TypeScript": ("ts", files[typescript.TS_PATH], "//"),
        "Rust": ("rust", files[rust.RUST_PATH], "//"),
        "Python": ("python", python, "#"),
    }
    rules = vectors.key_rules(spec)
    files[PAGE_PATH] = render_template(
        "sdk-tables.md.j2",
        header=markdown_header(SOURCE),
        source=SOURCE,
        spec=spec,
        rules=rules,
        tables=[(name, lang, region(text, "retry table", mark)) for name, (lang, text, mark) in sources.items()],
        keys=[(name, lang, region(text, "idempotency keys", mark)) for name, (lang, text, mark) in sources.items()]
        if rules
        else [],
        key_rows=[_key_row(v) for v in vectors.key_vectors(spec, rules)["vectors"]] if rules else [],
        lone_surrogates=vectors.LONE_SURROGATE_DECISION,
        case_count=len(vectors.decision_cases(spec)),
        paths={"ts": typescript.TS_PATH, "rust": rust.RUST_PATH, "python": PYTHON_RETRY},
        conformance={"keys": vectors.KEY_VECTORS_PATH, "decisions": vectors.DECISIONS_PATH},
    )
    return files


def _python_retry(spec: Spec) -> str:
    """The Python retry module exactly as the package renderer writes it (rendered and formatted the same way)."""
    text = render_template("retry.py.j2", header="", spec=spec)
    return format_python({PYTHON_RETRY: text})[PYTHON_RETRY]


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
