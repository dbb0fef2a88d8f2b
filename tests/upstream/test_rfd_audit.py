"""The RFD's method audit holds: its keyed and duplicating sets are exactly the spec's.

The statement is read from the RFD text beside the project (`../shared/reference/`, at test time), and so is the
design's method table (`../shared/DESIGN.md`); nothing of either is copied here.
"""

from __future__ import annotations

import re

import pytest

from generator.pipeline import load_spec
from tests.support import ROOT

SHARED = ROOT.parent / "shared"
RFD = SHARED / "reference" / "acp-v2-idempotency-keys-rfd.txt"
DESIGN = SHARED / "DESIGN.md"
COUNTS = {"no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
# "The method audit finds one keyed method, session/prompt, and two duplicating methods, session/new and ..."
STATEMENT = re.compile(r"audit finds (\w+) (\w+) methods?, (.+?), and (\w+) (\w+) methods?, (.+?)\.(?:\s|$)")


def _names(listed: str) -> set[str]:
    return {name.strip() for name in re.split(r",|\band\b", listed) if name.strip()}


def _by_class(spec: object) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for method in spec.methods:  # type: ignore[attr-defined]
        found.setdefault(method.retry_class, set()).add(method.name)
    return found


@pytest.mark.skipif(not RFD.is_file(), reason="../shared/reference/ is not here")
def test_keyed_and_duplicating_sets_are_the_rfds() -> None:
    text = " ".join(RFD.read_text(encoding="utf-8").split())
    found = STATEMENT.search(text)
    assert found is not None, "the RFD's audit statement was not found"
    spec = load_spec(ROOT / "spec", ROOT)
    classes = {c.name for c in spec.classes}
    by_class = _by_class(spec)
    checked = []
    for count, class_name, listed in (found.group(1, 2, 3), found.group(4, 5, 6)):
        names = _names(listed)
        assert len(names) == COUNTS[count], (count, names)
        assert class_name in classes, f"the RFD's class {class_name!r} is not a class of the spec"
        assert by_class.get(class_name, set()) == names, class_name
        checked.append(class_name)
    assert sorted(checked) == ["duplicating", "keyed"]


@pytest.mark.skipif(not DESIGN.is_file(), reason="../shared/DESIGN.md is not here")
def test_each_class_is_one_the_design_table_allows() -> None:
    """Each row of the design's method table names the spec's class for that entry, and never rules it out."""
    spec = load_spec(ROOT / "spec", ROOT)
    classes = {c.name for c in spec.classes}
    ours = {(m.name, m.kind): m for m in spec.methods}
    rows = 0
    for line in DESIGN.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not re.fullmatch(r"`[^`]+`", cells[0]) or cells[1] not in ("request", "notification"):
            continue
        method = ours.get((cells[0].strip("`"), cells[1]))
        assert method is not None, cells[:2]  # an entry the design names is never dropped
        words = set(re.findall(r"[a-z]+", cells[4]))
        ruled_out = set(re.findall(r"not ([a-z]+)", cells[4]))
        assert words & classes, cells
        assert method.retry_class in words - ruled_out, (method.title, method.retry_class, cells[4])
        assert method.stability == cells[3], (method.title, method.stability, cells[3])
        rows += 1
    # Every row was found; entries the spec adds beyond the design's table (a maintainer's new method) are fine.
    assert rows > 0
