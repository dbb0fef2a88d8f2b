"""The code generator run once per *shape* of the schema: descriptions are put into its output afterwards.

datamodel-code-generator takes most of a full run, and most spec edits change only prose. A description it
shows becomes the text of a docstring line of its own (`use_schema_description`, `use_field_description`), so
the models of a schema are those of its *skeleton* (every such description replaced by a placeholder token, equal
texts by equal tokens) with each token replaced by its text. The skeleton's output is kept between runs
(generator/render/incremental.py, `memoized`), so an edit to descriptions only costs a substitution, not a code
generator run.

What makes the substitution exact, and what is checked rather than assumed:

- only descriptions that the library writes verbatim become tokens: one printable line with no surrounding
  white space, no backslash and no triple quote (it escapes those); any other description stays in the skeleton
  as it is, so its text is part of the memo's key. An unstable item's description is the fixed unstable
  paragraph (render/schema/stability.py) and then such a line: the paragraph stays, and the line becomes a token;
- a schema holding any text that contains the token prefix is given to the library as it is;
- every token in the output must stand alone on a line between the `\"\"\"` lines of a docstring, indented
  alike (the form the library gives a docstring it writes for a description); when one appears anywhere else,
  the library is run on the real document instead;
- tests/pipeline/test_incremental.py compares the result with the library's output on the real document, for
  the real spec and for random descriptions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from ..incremental import memoized, remembered
from ..schema.stability import MARKED_HEAD

_PREFIX = "AcpDescribedText"
MEMO_STEP = "models-skeleton"  # the name of the memo of the skeleton's models
_TOKEN = re.compile(_PREFIX + r"[0-9]+x")
# Keywords whose values are data (written into the code as values), not schemas: nothing in them is a description.
_DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples", "example"})
# Keywords whose values map names to schemas: every value is a schema, whatever its name.
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})


def models(document: dict[str, Any], generate: Callable[[str], str]) -> str:
    """`generate(json.dumps(document))`, the code generator's models for `document`, made from those of its
    skeleton (the last run's, when its skeleton was the same), or by running it on `document` when the skeleton's
    output does not allow the substitution."""
    whole = json.dumps(document)
    if _PREFIX in whole:  # a text that looks like a token would be replaced: no shortcut
        return generate(whole)
    tokens: dict[str, str] = {}
    text = json.dumps(_skeleton(document, tokens))
    source = memoized(MEMO_STEP, _key(text), lambda: generate(text))
    texts = {token: value for value, token in tokens.items()}
    if not _placed_as_docstring_lines(source, texts):
        return generate(whole)
    return _TOKEN.sub(lambda found: texts[found.group()], source)


def begin(document: dict[str, Any], start: Callable[[str], None]) -> None:
    """Call `start` with the text that `models(document, ...)` will give the code generator, unless the memo
    holds its output: so that it can start early, elsewhere (render/python/codegen.py)."""
    whole = json.dumps(document)
    if _PREFIX in whole:
        start(whole)
        return
    text = json.dumps(_skeleton(document, {}))
    if not remembered(MEMO_STEP, _key(text)):
        start(text)


def _key(skeleton: str) -> str:
    return hashlib.sha256(skeleton.encode()).hexdigest()


def writes_verbatim(text: str) -> bool:
    """True when the library writes `text` as a docstring line unchanged (see the module docstring)."""
    return bool(text) and text.isprintable() and text == text.strip() and "\\" not in text and '"""' not in text


def _skeleton(value: Any, tokens: dict[str, str]) -> Any:
    """`value` (a schema) with each description the library writes verbatim replaced by its token."""
    if isinstance(value, list):
        return [_skeleton(item, tokens) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        head = MARKED_HEAD if isinstance(item, str) and item.startswith(MARKED_HEAD) else ""
        if key == "description" and isinstance(item, str) and writes_verbatim(item[len(head) :]):
            out[key] = head + tokens.setdefault(item[len(head) :], f"{_PREFIX}{len(tokens)}x")
        elif key in _DATA_KEYWORDS:
            out[key] = item
        elif key in _SCHEMA_MAPS and isinstance(item, dict):
            out[key] = {name: _skeleton(schema, tokens) for name, schema in item.items()}
        else:
            out[key] = _skeleton(item, tokens)
    return out


def _placed_as_docstring_lines(source: str, texts: dict[str, str]) -> bool:
    """True when every token in `source` is a known one, alone on its line, between docstring quotes."""
    lines = source.split("\n")
    for number, line in enumerate(lines):
        if _PREFIX not in line:
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        token = line[len(indent) :]
        if token not in texts or not 0 < number < len(lines) - 1:
            return False
        if lines[number + 1] != f'{indent}"""':
            return False
        if lines[number - 1] != f'{indent}"""' and not _after_head(lines[:number], indent):
            return False
    return True


# The lines of the unstable paragraph as the library writes them in a docstring, before the description's line.
_HEAD_LINES = MARKED_HEAD.split("\n")[:-1]


def _after_head(before: list[str], indent: str) -> bool:
    """True when `before` ends with a docstring's opening quotes and then the unstable paragraph."""
    expected = [f'{indent}"""', *((indent + line) if line else "" for line in _HEAD_LINES)]
    found = before[-len(expected) :]
    return len(found) == len(expected) and [line.rstrip() for line in found] == [e.rstrip() for e in expected]
