"""One mistake in the real spec gets one diagnostic, at the line a person would fix, in our words.

Each case makes one ordinary mistake in a copy of spec/ (a misspelt value, a key without its colon, a tab, a
misspelt type name or `$ref`, a `type:` that is no JSON type) and checks that the load reports exactly one problem,
where the mistake is: a broken method file does not also make its correct example "unknown" or its name an
envelope's unknown entry, a broken types file does not make every use of its types "unknown", and a YAML slip is
named as what it is, not in the parser's words on the next line.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from tests.support import ROOT


def _method_with_example() -> str:
    """A request's method file (relative to spec/) with a worked example and a params type."""
    examples = {p.stem for p in (ROOT / "spec" / "examples").glob("*.yaml")}
    for path in sorted((ROOT / "spec" / "methods").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if path.stem in examples and data["kind"] == "request" and data.get("params"):
            return f"methods/{path.name}"
    raise AssertionError("no request has both a worked example and a params type")


def _first_ref_file() -> tuple[str, str]:
    """A types file and a type it names by `$ref`."""
    for path in sorted((ROOT / "spec" / "types").glob("*.yaml")):
        found = re.search(r"\$ref: '#/\$defs/(\w{6,})'", path.read_text(encoding="utf-8"))
        if found:
            return f"types/{path.name}", found[1]
    raise AssertionError("no types file has a $ref")


METHOD = _method_with_example()
REF_FILE, REF_TARGET = _first_ref_file()


def _params(text: str) -> str:
    return re.search(r"^params: (\w+)$", text, re.M)[1]  # type: ignore[index]


# (case id, file under spec/, edit, the text of the line the diagnostic must point at, its code, words it must hold)
Edit = Callable[[str], str]
CASES: list[tuple[str, str, Edit, str, str, str]] = [
    ("misspelt value", METHOD, lambda t: t.replace("stability: stable", "stability: stabel", 1), "stabel",
     "invalid-value", "not one of"),
    ("key without colon", METHOD, lambda t: t.replace("kind: request", "kind request", 1), "kind request",
     "yaml-syntax", "no ':' after the key"),
    ("tab", METHOD, lambda t: re.sub(r"^  class:", "\tclass:", t, count=1, flags=re.M), "\tclass:",
     "yaml-syntax", "a tab"),
    ("misspelt params type", METHOD, lambda t: t.replace(f"params: {_params(t)}", f"params: {_params(t)[:-2]}", 1),
     "params:", "unknown-type", "did you mean"),
    ("misspelt $ref", REF_FILE, lambda t: t.replace(f"/{REF_TARGET}'", f"/{REF_TARGET[:-1]}'", 1),
     f"{REF_TARGET[:-1]}'", "unknown-type", f"did you mean {REF_TARGET!r}"),
    ("types file key without colon", REF_FILE,
     lambda t: re.sub(r"^(    )description: ", r"\1description ", t, count=1, flags=re.M), "    description ",
     "yaml-syntax", "no ':' after the key"),
    ("line indented under a value", METHOD, lambda t: t.replace("\nstability:", "\n  stability:", 1), "  stability:",
     "yaml-syntax", "indented under an entry"),
    ("no JSON type", REF_FILE, lambda t: re.sub(r"^(\s+)type: object$", r"\1type: objekt", t, count=1, flags=re.M),
     "type: objekt", "invalid-type-schema", "the types are array, boolean"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "edit", "marker", "code", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_mistake_one_diagnostic_at_its_line(
    tmp_path: Path, file: str, edit: Edit, marker: str, code: str, words: str
) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    path = spec / file
    text = edit(path.read_text(encoding="utf-8"))
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(spec, tmp_path)
    found = caught.value.diagnostics
    assert len(found) == 1, "\n".join(d.format() for d in found)
    (d,) = found
    line = next(i for i, row in enumerate(text.splitlines(), 1) if marker in row)
    assert (d.location.file, d.location.line, d.code) == (f"spec/{file}", line, code), d.format()
    assert words in d.message, d.format()
